package pgcopy

import (
	"slices"
	"strconv"
)

// Writer appends rows in PostgreSQL's default COPY text format, the form
// the proxy sends the server whatever the client's format was (unless
// every field is a cell: BinaryWriter): fields
// separated by a tab, each row ended by a newline, NULL as \N, and in
// values backslash, tab, newline and carriage return escaped as \\, \t,
// \n and \r. Any other byte stands for itself, so the server decodes
// exactly the bytes given. Values must be valid in the session's client
// encoding (the Reader checks that its fields are UTF-8).
//
// The zero Writer is ready to use and appends to a nil buffer.
type Writer struct {
	buf    []byte
	fields int // fields written in the current row
}

// Reset makes the Writer append to dst, starting a new row.
func (w *Writer) Reset(dst []byte) { w.buf, w.fields = dst, 0 }

// Bytes returns the buffer with everything written so far. It is valid
// until the next call of a method other than Bytes.
func (w *Writer) Bytes() []byte { return w.buf }

// Grow makes room for n more bytes.
func (w *Writer) Grow(n int) { w.buf = slices.Grow(w.buf, n) }

// Field writes one field: v escaped, or \N when v is nil.
func (w *Writer) Field(v []byte) {
	w.sep()
	if v == nil {
		w.buf = append(w.buf, '\\', 'N')
		return
	}
	w.buf = appendEscaped(w.buf, v)
}

// Null writes a NULL field.
func (w *Writer) Null() {
	w.sep()
	w.buf = append(w.buf, '\\', 'N')
}

// Bytea writes a bytea value in its hex text form (\x followed by two hex
// digits a byte, with the backslash escaped), or \N when b is nil.
func (w *Writer) Bytea(b []byte) {
	w.sep()
	if b == nil {
		w.buf = append(w.buf, '\\', 'N')
		return
	}
	const digits = "0123456789abcdef"
	w.buf = append(w.buf, '\\', '\\', 'x')
	for _, c := range b {
		w.buf = append(w.buf, digits[c>>4], digits[c&15])
	}
}

// UUID writes a 16-byte value in the text form of a uuid, or \N when b
// is nil.
func (w *Writer) UUID(b []byte) {
	w.sep()
	if b == nil {
		w.buf = append(w.buf, '\\', 'N')
		return
	}
	const digits = "0123456789abcdef"
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			w.buf = append(w.buf, '-')
		}
		w.buf = append(w.buf, digits[c>>4], digits[c&15])
	}
}

// Int8Array writes a bigint[] value ({1,-2}), or \N when v is nil.
func (w *Writer) Int8Array(v []int64) {
	w.sep()
	if v == nil {
		w.buf = append(w.buf, '\\', 'N')
		return
	}
	w.buf = append(w.buf, '{')
	for i, x := range v {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = strconv.AppendInt(w.buf, x, 10)
	}
	w.buf = append(w.buf, '}')
}

// EndRow ends the current row. A row without fields is an empty line,
// which the server reads as zero fields only for a COPY without columns
// (else as one empty field).
func (w *Writer) EndRow() {
	w.buf = append(w.buf, '\n')
	w.fields = 0
}

func (w *Writer) sep() {
	if w.fields > 0 {
		w.buf = append(w.buf, '\t')
	}
	w.fields++
}

// AppendRow appends fields as one row of text format to dst (nil fields
// are NULL) and returns the extended buffer.
func AppendRow(dst []byte, fields [][]byte) []byte {
	for i, f := range fields {
		if i > 0 {
			dst = append(dst, '\t')
		}
		if f == nil {
			dst = append(dst, '\\', 'N')
		} else {
			dst = appendEscaped(dst, f)
		}
	}
	return append(dst, '\n')
}

// appendEscaped appends v with the bytes special to text format escaped.
func appendEscaped(dst, v []byte) []byte {
	start := 0
	for i, c := range v {
		var e byte
		switch c {
		case '\\':
			e = '\\'
		case '\t':
			e = 't'
		case '\n':
			e = 'n'
		case '\r':
			e = 'r'
		default:
			continue
		}
		dst = append(dst, v[start:i]...)
		dst = append(dst, '\\', e)
		start = i + 1
	}
	return append(dst, v[start:]...)
}

package pgcopy

import (
	"fmt"
	"io"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultMaxRowSize is the largest raw row (one logical line of input,
// which in csv may span several physical lines) a Reader accepts unless
// SetMaxRowSize says otherwise. PostgreSQL itself accepts lines up to
// 1 GB; the proxy bounds what it holds per session.
const DefaultMaxRowSize = 64 << 20

// eolType is the line ending of the data, fixed by its first line.
type eolType uint8

const (
	eolUnknown eolType = iota
	eolNL              // \n
	eolCR              // \r
	eolCRNL            // \r\n
)

// Reader splits the data of COPY ... FROM STDIN into rows and decodes
// their fields, as PostgreSQL would. It is fed the data in chunks of any
// size (Feed), keeps an incomplete row until the rest arrives, and yields
// complete rows (Next). A Reader is not safe for concurrent use.
//
// Usage: Feed each CopyData payload, then call Next until it returns a nil
// row; at CopyDone call Close and Next until io.EOF. Memory is bounded by
// the largest chunk plus the largest row (SetMaxRowSize) as long as Next
// is drained after each Feed.
type Reader struct {
	o            Options
	table        string
	columns      []string
	forceNotNull []bool // per column
	forceNull    []bool
	maxRow       int

	buf  []byte // buffered input; the current line starts at off
	off  int
	scan int // where the line splitter resumes, off <= scan <= verified
	// buf[:verified] is valid UTF-8; the character at verified, if any,
	// is invalid or incomplete.
	verified int

	// State of the line being split (PostgreSQL's CopyReadLineText locals).
	inLine              bool
	inQuote, lastWasEsc bool

	eol        eolType
	line       int64 // PostgreSQL's cur_lineno: 1-based physical line
	headerDone bool
	closed     bool // no more input will come
	ended      bool // the data ended: Next returns io.EOF
	err        error

	fields [][]byte
	out    []byte // decoded field bytes, which fields alias

	special [256]bool // the bytes the line splitter must look at
}

// NewReader returns a Reader of data in format o (from ParseOptions) for
// a COPY into the given columns of table, in the order the data lists
// them. table and the column names appear in error messages; the names
// also serve HEADER MATCH and the FORCE_NOT_NULL and FORCE_NULL options,
// whose columns must be among them (else a 42P10 error, as PostgreSQL's).
func NewReader(o Options, table string, columns []string) (*Reader, error) {
	if o.Format != Text && o.Format != CSV {
		return nil, fmt.Errorf("pgcopy: format %q is not text or csv", o.Format)
	}
	if o.Delimiter == 0 || (o.Format == CSV && (o.Quote == 0 || o.Escape == 0)) {
		return nil, fmt.Errorf("pgcopy: options without delimiter or quote characters; use ParseOptions")
	}
	r := &Reader{o: o, table: table, columns: slices.Clone(columns), maxRow: DefaultMaxRowSize,
		fields: make([][]byte, 0, len(columns))}
	for _, c := range []byte{'\\', '\r', '\n'} {
		r.special[c] = true
	}
	if o.Format == CSV {
		r.special[o.Quote], r.special[o.Escape] = true, true
	}
	var err error
	if r.forceNotNull, err = forceFlags("FORCE_NOT_NULL", o.ForceNotNull, o.ForceNotNullAll, columns); err != nil {
		return nil, err
	}
	if r.forceNull, err = forceFlags("FORCE_NULL", o.ForceNull, o.ForceNullAll, columns); err != nil {
		return nil, err
	}
	return r, nil
}

// forceFlags marks the columns an option lists (all for *), or nil when
// it lists none.
func forceFlags(option string, names []string, all bool, columns []string) ([]bool, error) {
	if !all && len(names) == 0 {
		return nil, nil
	}
	flags := make([]bool, len(columns))
	for i := range flags {
		flags[i] = all
	}
	for _, n := range names {
		i := slices.Index(columns, n)
		if i < 0 {
			return nil, pgErr(codeInvalidColRef, "%s column \"%s\" not referenced by COPY", option, n)
		}
		flags[i] = true
	}
	return flags, nil
}

// SetMaxRowSize sets the largest raw row accepted (DefaultMaxRowSize
// unless set); a longer row is a 54000 error. Call it before Feed.
func (r *Reader) SetMaxRowSize(n int) { r.maxRow = n }

// Line returns the number of the physical input line where the row Next
// just returned ends, counting from 1 and including the header line, as
// PostgreSQL numbers lines in its error context. It is meant for the
// caller's own errors about that row (e.g. a value that does not convert)
// and is valid until the next call to Next.
func (r *Reader) Line() int64 { return r.line }

// Where returns the error context of the line Line numbers in
// PostgreSQL's form, "COPY t, line 3", without the line's text (which may
// hold values of encrypted columns). Errors from Next carry it already.
func (r *Reader) Where() string { return fmt.Sprintf("COPY %s, line %d", r.table, r.line) }

// Feed adds the next chunk of input. p is copied; it may be reused after
// the call. Feed invalidates the row Next returned last. After Close, or
// once the data has ended (the end-of-data marker \. or an error), input
// is discarded, as PostgreSQL ignores what follows \. until CopyDone.
func (r *Reader) Feed(p []byte) {
	if r.ended || r.err != nil || r.closed {
		return
	}
	if r.off == len(r.buf) || r.off > 0 && len(r.buf)+len(p) > cap(r.buf) {
		// Move the incomplete line to the front rather than grow.
		n := copy(r.buf, r.buf[r.off:])
		r.scan -= r.off
		r.verified -= r.off
		r.buf, r.off = r.buf[:n], 0
	}
	r.buf = append(r.buf, p...)
	r.verify()
}

// Close says that no more input will come (CopyDone). An incomplete last
// line is then read as a row, as PostgreSQL does at the end of the data.
func (r *Reader) Close() { r.closed = true }

// Next returns the fields of the next complete row, in the order of the
// COPY's columns: exactly one per column, nil for NULL, else the field's
// decoded bytes (non-nil, possibly empty). The row and its fields are
// valid until the next call to Next or Feed.
//
// Next returns a nil row and a nil error when the buffered input holds no
// complete row: Feed more, or Close. It returns io.EOF once the data has
// ended (the end-of-data marker, or Close and all input read), and from
// then on. Errors are *pgconn.PgError as PostgreSQL reports them (SQLSTATE
// 22P04 for malformed data, 22021 for invalid UTF-8), with Where naming
// the table and line; an error is final.
func (r *Reader) Next() ([][]byte, error) {
	for {
		if r.err != nil {
			return nil, r.err
		}
		if r.ended {
			return nil, io.EOF
		}
		line, last, ok, err := r.readLine()
		if err != nil {
			return nil, r.fail(err)
		}
		if !ok {
			return nil, nil
		}
		if r.o.Header && !r.headerDone {
			r.headerDone = true
			if r.o.HeaderMatch {
				if err := r.matchHeader(line); err != nil {
					return nil, r.fail(err)
				}
			}
			r.ended = last
			continue
		}
		if last {
			r.ended = true
			if len(line) == 0 {
				return nil, io.EOF
			}
		}
		row, err := r.row(line)
		if err != nil {
			return nil, r.fail(err)
		}
		return row, nil
	}
}

// fail makes err final and gives it the line's context.
func (r *Reader) fail(err error) error {
	if pe, ok := err.(*pgconn.PgError); ok && pe.Where == "" {
		pe.Where = r.Where()
	}
	r.err = err
	return err
}

// row decodes one line into the COPY's columns.
func (r *Reader) row(line []byte) ([][]byte, error) {
	if err := r.split(line); err != nil {
		return nil, err
	}
	n := len(r.columns)
	if n > 0 && len(r.fields) > n {
		return nil, pgErr(codeBadCopyFormat, "extra data after last expected column")
	}
	if len(r.fields) < n {
		return nil, pgErr(codeBadCopyFormat, "missing data for column \"%s\"", r.columns[len(r.fields)])
	}
	if r.o.Format == CSV {
		for i, f := range r.fields {
			switch {
			case f == nil && r.forceNotNull != nil && r.forceNotNull[i]:
				r.fields[i] = []byte(r.o.Null)
			case f != nil && r.forceNull != nil && r.forceNull[i] && string(f) == r.o.Null:
				r.fields[i] = nil
			}
		}
	}
	return r.fields, nil
}

// matchHeader checks the header line against the column names (HEADER
// MATCH).
func (r *Reader) matchHeader(line []byte) error {
	if err := r.split(line); err != nil {
		return err
	}
	if len(r.fields) != len(r.columns) {
		return pgErr(codeBadCopyFormat, "wrong number of fields in header line: got %d, expected %d", len(r.fields), len(r.columns))
	}
	for i, f := range r.fields {
		if f == nil {
			return pgErr(codeBadCopyFormat, "column name mismatch in header line field %d: got null value (\"%s\"), expected \"%s\"", i+1, r.o.Null, r.columns[i])
		}
		if string(f) != r.columns[i] {
			return pgErr(codeBadCopyFormat, "column name mismatch in header line field %d: got \"%s\", expected \"%s\"", i+1, f, r.columns[i])
		}
	}
	return nil
}

// split decodes the fields of a line into r.fields.
func (r *Reader) split(line []byte) error {
	r.fields = r.fields[:0]
	if len(r.columns) == 0 {
		// A table without columns: each line must be empty.
		if len(line) != 0 {
			return pgErr(codeBadCopyFormat, "extra data after last expected column")
		}
		return nil
	}
	// Decoded fields are never longer than the line, so r.out does not
	// move while fields alias it. Non-nil even for an empty line, so an
	// empty field is a non-nil empty slice.
	if cap(r.out) < len(line) || r.out == nil {
		r.out = make([]byte, 0, max(len(line), 64))
	}
	r.out = r.out[:0]
	if r.o.Format == CSV {
		return r.splitCSV(line)
	}
	return r.splitText(line)
}

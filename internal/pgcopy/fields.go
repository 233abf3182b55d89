package pgcopy

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Decoding the fields of one logical line (PostgreSQL's
// CopyReadAttributesText and CopyReadAttributesCSV). Both append the
// decoded bytes to r.out, which has room for the whole line, and the
// fields (slices of r.out, nil for NULL) to r.fields.
//
// A field is NULL when its raw text, before any decoding, equals the NULL
// string: in text format `\N` is NULL but `\\N` is the two characters \N;
// in csv a quoted field is never NULL.

// splitText decodes a line of text format: fields end at the delimiter;
// a backslash escapes the next character (\b \f \n \r \t \v, up to three
// octal digits, \x and up to two hex digits; any other character stands
// for itself).
func (r *Reader) splitText(line []byte) error {
	delim := r.o.Delimiter
	pos := 0
	for {
		start, outStart := pos, len(r.out)
		end := pos
		foundDelim, nonASCII := false, false
		for {
			// Copy the run of plain bytes at once.
			if k := pos; k < len(line) && line[k] != delim && line[k] != '\\' {
				for k++; k < len(line) && line[k] != delim && line[k] != '\\'; k++ {
				}
				r.out = append(r.out, line[pos:k]...)
				pos = k
			}
			end = pos
			if pos >= len(line) {
				break
			}
			c := line[pos]
			pos++
			if c == delim {
				foundDelim = true
				break
			}
			if c == '\\' {
				if pos >= len(line) {
					break // a backslash at the very end is dropped
				}
				c = line[pos]
				pos++
				switch c {
				case '0', '1', '2', '3', '4', '5', '6', '7':
					v := int(c - '0')
					for k := 0; k < 2 && pos < len(line) && isOctal(line[pos]); k++ {
						v = v<<3 + int(line[pos]-'0')
						pos++
					}
					c = byte(v)
					nonASCII = nonASCII || c == 0 || c >= 0x80
				case 'x':
					if pos < len(line) && isHex(line[pos]) {
						v := hexValue(line[pos])
						pos++
						if pos < len(line) && isHex(line[pos]) {
							v = v<<4 | hexValue(line[pos])
							pos++
						}
						c = v
						nonASCII = nonASCII || c == 0 || c >= 0x80
					}
				case 'b':
					c = '\b'
				case 'f':
					c = '\f'
				case 'n':
					c = '\n'
				case 'r':
					c = '\r'
				case 't':
					c = '\t'
				case 'v':
					c = '\v'
				}
			}
			r.out = append(r.out, c)
		}
		if string(line[start:end]) == r.o.Null {
			r.out = r.out[:outStart]
			r.fields = append(r.fields, nil)
		} else {
			f := r.out[outStart:len(r.out):len(r.out)]
			// Escapes can make bytes that are not UTF-8, or NUL.
			if nonASCII {
				if err := checkUTF8(f); err != nil {
					return err
				}
			}
			r.fields = append(r.fields, f)
		}
		if !foundDelim {
			return nil
		}
	}
}

// splitCSV decodes a line of csv: fields end at an unquoted delimiter;
// quotes may start and end anywhere in a field, and inside quotes the
// escape character makes a following quote or escape character literal.
func (r *Reader) splitCSV(line []byte) error {
	delim, quote, esc := r.o.Delimiter, r.o.Quote, r.o.Escape
	pos := 0
	for {
		start, outStart := pos, len(r.out)
		end := pos
		foundDelim, sawQuote := false, false
	field:
		for {
			for { // outside quotes
				if k := pos; k < len(line) && line[k] != delim && line[k] != quote {
					for k++; k < len(line) && line[k] != delim && line[k] != quote; k++ {
					}
					r.out = append(r.out, line[pos:k]...)
					pos = k
				}
				end = pos
				if pos >= len(line) {
					break field
				}
				c := line[pos]
				pos++
				if c == delim {
					foundDelim = true
					break field
				}
				if c == quote {
					sawQuote = true
					break
				}
				r.out = append(r.out, c)
			}
			for { // inside quotes
				if k := pos; k < len(line) && line[k] != esc && line[k] != quote {
					for k++; k < len(line) && line[k] != esc && line[k] != quote; k++ {
					}
					r.out = append(r.out, line[pos:k]...)
					pos = k
				}
				if pos >= len(line) {
					return pgErr(codeBadCopyFormat, "unterminated CSV quoted field")
				}
				c := line[pos]
				pos++
				if c == esc && pos < len(line) {
					if n := line[pos]; n == esc || n == quote {
						r.out = append(r.out, n)
						pos++
						continue
					}
				}
				if c == quote {
					break
				}
				r.out = append(r.out, c)
			}
		}
		if !sawQuote && string(line[start:end]) == r.o.Null {
			r.out = r.out[:outStart]
			r.fields = append(r.fields, nil)
		} else {
			r.fields = append(r.fields, r.out[outStart:len(r.out):len(r.out)])
		}
		if !foundDelim {
			return nil
		}
	}
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexValue(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// checkUTF8 returns PostgreSQL's error for bytes that are not valid
// UTF-8 as the server accepts it: well-formed, and without NUL bytes.
func checkUTF8(b []byte) error {
	if n := validPrefix(b); n < len(b) {
		return encodingError(b[n:])
	}
	return nil
}

// validPrefix returns the length of the longest prefix of b made of
// whole valid UTF-8 characters other than NUL.
func validPrefix(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	// Stuck at a bad character: answer without scanning the rest.
	if c := b[0]; c == 0 || c >= 0x80 && !utf8.FullRune(b) {
		return 0
	}
	if utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 {
		return len(b)
	}
	i := 0
	for i < len(b) {
		c := b[i]
		if c != 0 && c < 0x80 {
			i++
			continue
		}
		if c == 0 {
			return i
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return i
}

// encodingError is PostgreSQL's error for the invalid character that
// starts rest, quoting its bytes as far as its first byte announces.
func encodingError(rest []byte) error {
	n := 1
	switch c := rest[0]; {
	case c&0xe0 == 0xc0:
		n = 2
	case c&0xf0 == 0xe0:
		n = 3
	case c&0xf8 == 0xf0:
		n = 4
	}
	n = min(n, len(rest))
	hex := make([]string, n)
	for i, x := range rest[:n] {
		hex[i] = fmt.Sprintf("0x%02x", x)
	}
	return pgErr(codeBadEncoding, "invalid byte sequence for encoding \"UTF8\": %s", strings.Join(hex, " "))
}

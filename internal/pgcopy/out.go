package pgcopy

import "slices"

// Formatter writes rows as PostgreSQL 15's COPY ... TO writes them in
// the text or csv format of Options: the proxy's answer to a COPY TO
// whose rows it decrypts. Values are the text forms of the columns
// (nil for NULL), as a DataRow in text format holds them.
type Formatter struct {
	o     Options
	quote []bool // FORCE_QUOTE, per column
}

// NewFormatter returns a Formatter of rows of the given columns, those
// of COPY table (columns) TO or of COPY (query) TO (table ""); a
// FORCE_QUOTE column not among them is an error, as on the server:
// 42P10 for another column of the table (tableColumns), else 42703.
func NewFormatter(o Options, columns []string, table string, tableColumns []string) (*Formatter, error) {
	f := &Formatter{o: o, quote: make([]bool, len(columns))}
	for _, name := range o.ForceQuote {
		found := false
		for i, c := range columns {
			if c == name {
				f.quote[i], found = true, true
			}
		}
		switch {
		case found:
		case table == "":
			return nil, pgErr("42703", "column \"%s\" does not exist", name)
		case slices.Contains(tableColumns, name):
			return nil, pgErr("42P10", "FORCE_QUOTE column \"%s\" not referenced by COPY", name)
		default:
			return nil, pgErr("42703", "column \"%s\" of relation \"%s\" does not exist", name, table)
		}
	}
	if o.ForceQuoteAll {
		for i := range f.quote {
			f.quote[i] = true
		}
	}
	return f, nil
}

// Header appends the header line (the column names), as COPY TO writes
// it with HEADER.
func (f *Formatter) Header(dst []byte, names []string) []byte {
	for i, n := range names {
		if i > 0 {
			dst = append(dst, f.o.Delimiter)
		}
		if f.o.Format == CSV {
			dst = f.csv(dst, []byte(n), false, len(names) == 1)
		} else {
			dst = f.text(dst, []byte(n))
		}
	}
	return append(dst, '\n')
}

// Row appends one row, ended by a newline.
func (f *Formatter) Row(dst []byte, values [][]byte) []byte {
	for i, v := range values {
		if i > 0 {
			dst = append(dst, f.o.Delimiter)
		}
		switch {
		case v == nil:
			dst = append(dst, f.o.Null...)
		case f.o.Format == CSV:
			dst = f.csv(dst, v, i < len(f.quote) && f.quote[i], len(values) == 1)
		default:
			dst = f.text(dst, v)
		}
	}
	return append(dst, '\n')
}

// text is CopyAttributeOutText: control characters as \b \f \n \r \t
// \v, backslash and the delimiter escaped with a backslash, every other
// byte as it is.
func (f *Formatter) text(dst, v []byte) []byte {
	for _, c := range v {
		if c < 0x20 {
			switch c {
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\v':
				dst = append(dst, '\\', 'v')
			default:
				if c == f.o.Delimiter {
					dst = append(dst, '\\')
				}
				dst = append(dst, c)
			}
			continue
		}
		if c == '\\' || c == f.o.Delimiter {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return dst
}

// csv is CopyAttributeOutCSV: quoted when forced, when the value reads
// as the NULL string, when it holds the delimiter, the quote, a newline
// or a carriage return, or (a row's only column) when it is \. (the end
// marker); inside quotes the quote and escape characters are escaped.
func (f *Formatter) csv(dst, v []byte, force, single bool) []byte {
	quote := force || string(v) == f.o.Null || single && string(v) == `\.`
	if !quote {
		for _, c := range v {
			if c == f.o.Delimiter || c == f.o.Quote || c == '\n' || c == '\r' {
				quote = true
				break
			}
		}
	}
	if !quote {
		return append(dst, v...)
	}
	dst = append(dst, f.o.Quote)
	for _, c := range v {
		if c == f.o.Quote || c == f.o.Escape {
			dst = append(dst, f.o.Escape)
		}
		dst = append(dst, c)
	}
	return append(dst, f.o.Quote)
}

package pgcopy

import (
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// Formats of COPY data.
const (
	Text = "text"
	CSV  = "csv"
)

// Options are the options of one COPY ... FROM statement that decide how
// its data reads. ParseOptions fills every field, defaults included.
type Options struct {
	// Format is Text or CSV (binary is refused by ParseOptions).
	Format string
	// Delimiter separates the fields of a row: a tab in text format and a
	// comma in csv unless set.
	Delimiter byte
	// Null is the raw form of NULL: `\N` in text format and the empty
	// (unquoted) string in csv unless set.
	Null string
	// Header: the first line is a header and is skipped. With HeaderMatch
	// its fields must also equal the names of the COPY's columns.
	Header, HeaderMatch bool
	// Quote and Escape are the quoting characters of csv (both '"' unless
	// set); 0 in text format.
	Quote, Escape byte
	// ForceNotNull lists the columns (csv only) whose unquoted NULL string
	// is read as that string, not NULL; ForceNotNullAll means every column
	// (FORCE_NOT_NULL *).
	ForceNotNull    []string
	ForceNotNullAll bool
	// ForceNull lists the columns (csv only) whose quoted NULL string is
	// read as NULL too; ForceNullAll means every column.
	ForceNull    []string
	ForceNullAll bool
	// ForceQuote lists the columns (csv, COPY TO only) whose non-NULL
	// values are always quoted; ForceQuoteAll means every column.
	ForceQuote    []string
	ForceQuoteAll bool
	// Freeze is the FREEZE option: it concerns how the server stores the
	// rows, not how the data reads, so it is the one option a proxy passes
	// on to the server (see ServerOptions).
	Freeze bool
	// Encoding is the ENCODING option as written ("" when absent). Only
	// UTF8 is accepted: the Reader needs ASCII-safe input, and the proxy
	// encrypts UTF-8 text.
	Encoding string
}

// ServerOptions returns the options that must reach the server when the
// data is sent to it re-encoded in the default text format, as DefElem
// nodes for a CopyStmt's option list: FREEZE when set, else nothing.
// Every other option only says how the client's data reads.
func (o *Options) ServerOptions() []*pg_query.Node {
	if !o.Freeze {
		return nil
	}
	return []*pg_query.Node{pg_query.MakeSimpleDefElemNode("freeze", nil, -1)}
}

// ParseOptions reads the option list of a COPY ... FROM statement
// (CopyStmt.Options: DefElem nodes, which the parser also makes of the
// legacy forms such as WITH CSV HEADER or DELIMITER ','), checks it as
// PostgreSQL 15 does, and fills in the defaults.
//
// Errors are *pgconn.PgError: the server's SQLSTATE and message for
// options it would reject, and 0A000 for what this package does not
// support: FORMAT binary, an ENCODING other than UTF8, and options newer
// than PostgreSQL 15 (DEFAULT, ON_ERROR, LOG_VERBOSITY).
func ParseOptions(defs []*pg_query.Node) (Options, error) { return parseOptions(defs, false) }

// ParseOptionsTo is ParseOptions for COPY ... TO: FORCE_QUOTE is taken
// (ForceQuote), FORCE_NOT_NULL, FORCE_NULL and HEADER MATCH are refused
// as PostgreSQL refuses them there.
func ParseOptionsTo(defs []*pg_query.Node) (Options, error) { return parseOptions(defs, true) }

func parseOptions(defs []*pg_query.Node, to bool) (Options, error) {
	var o Options
	var (
		formatSet, freezeSet, delimSet, nullSet, headerSet bool
		quoteSet, escapeSet, forceNotNullSet, forceNullSet bool
		forceQuoteSet, encodingSet                         bool
		delim, quote, escape                               string
		binary                                             bool
	)
	o.Format = Text
	for _, n := range defs {
		d := n.GetDefElem()
		if d == nil {
			return o, pgErr(codeSyntax, "COPY option list holds a %T, not an option", n.Node)
		}
		name := d.Defname
		conflict := func(set *bool) error {
			if *set {
				return pgErr(codeSyntax, "conflicting or redundant options")
			}
			*set = true
			return nil
		}
		switch name {
		case "format":
			s, err := defString(d)
			if err != nil {
				return o, err
			}
			if err := conflict(&formatSet); err != nil {
				return o, err
			}
			switch s {
			case "text":
			case "csv":
				o.Format = CSV
			case "binary":
				binary = true
			default:
				return o, pgErr(codeInvalidParam, "COPY format \"%s\" not recognized", s)
			}
		case "freeze":
			if err := conflict(&freezeSet); err != nil {
				return o, err
			}
			b, err := defBool(d)
			if err != nil {
				return o, err
			}
			o.Freeze = b
		case "delimiter":
			if err := conflict(&delimSet); err != nil {
				return o, err
			}
			s, err := defString(d)
			if err != nil {
				return o, err
			}
			delim = s
		case "null":
			if err := conflict(&nullSet); err != nil {
				return o, err
			}
			s, err := defString(d)
			if err != nil {
				return o, err
			}
			o.Null = s
		case "header":
			if err := conflict(&headerSet); err != nil {
				return o, err
			}
			h, m, err := defHeader(d)
			if err != nil {
				return o, err
			}
			o.Header, o.HeaderMatch = h, m
		case "quote":
			if err := conflict(&quoteSet); err != nil {
				return o, err
			}
			s, err := defString(d)
			if err != nil {
				return o, err
			}
			quote = s
		case "escape":
			if err := conflict(&escapeSet); err != nil {
				return o, err
			}
			s, err := defString(d)
			if err != nil {
				return o, err
			}
			escape = s
		case "force_quote":
			if err := conflict(&forceQuoteSet); err != nil {
				return o, err
			}
			cols, all, err := defColumns(d)
			if err != nil {
				return o, err
			}
			o.ForceQuote, o.ForceQuoteAll = cols, all
		case "force_not_null":
			if err := conflict(&forceNotNullSet); err != nil {
				return o, err
			}
			cols, all, err := defColumns(d)
			if err != nil {
				return o, err
			}
			o.ForceNotNull, o.ForceNotNullAll = cols, all
		case "force_null":
			if err := conflict(&forceNullSet); err != nil {
				return o, err
			}
			cols, all, err := defColumns(d)
			if err != nil {
				return o, err
			}
			o.ForceNull, o.ForceNullAll = cols, all
		case "encoding":
			if err := conflict(&encodingSet); err != nil {
				return o, err
			}
			s, err := defString(d)
			if err != nil {
				return o, err
			}
			if !isUTF8Name(s) {
				return o, pgErr(codeNotSupported, "COPY with ENCODING '%s' is not supported by the proxy: only UTF8 data can be read", s)
			}
			o.Encoding = s
		case "default", "on_error", "log_verbosity", "reject_limit":
			return o, pgErr(codeNotSupported, "COPY option %s is not supported by the proxy", strings.ToUpper(name))
		default:
			return o, pgErr(codeSyntax, "option \"%s\" not recognized", name)
		}
	}
	csv := o.Format == CSV
	if binary {
		return o, pgErr(codeNotSupported, "COPY with FORMAT binary is not supported by the proxy: use text or csv")
	}
	if !delimSet {
		delim = "\t"
		if csv {
			delim = ","
		}
	}
	if !nullSet {
		o.Null = `\N`
		if csv {
			o.Null = ""
		}
	}
	if csv {
		if !quoteSet {
			quote = `"`
		}
		if !escapeSet {
			escape = quote
		}
	}
	if len(delim) != 1 {
		return o, pgErr(codeNotSupported, "COPY delimiter must be a single one-byte character")
	}
	o.Delimiter = delim[0]
	if o.Delimiter == '\r' || o.Delimiter == '\n' {
		return o, pgErr(codeInvalidParam, "COPY delimiter cannot be newline or carriage return")
	}
	if strings.ContainsAny(o.Null, "\r\n") {
		return o, pgErr(codeInvalidParam, "COPY null representation cannot use newline or carriage return")
	}
	if !csv && strings.IndexByte(`\.abcdefghijklmnopqrstuvwxyz0123456789`, o.Delimiter) >= 0 {
		return o, pgErr(codeInvalidParam, "COPY delimiter cannot be \"%s\"", delim)
	}
	if !csv && quoteSet {
		return o, pgErr(codeNotSupported, "COPY quote available only in CSV mode")
	}
	if csv && len(quote) != 1 {
		return o, pgErr(codeNotSupported, "COPY quote must be a single one-byte character")
	}
	if csv && o.Delimiter == quote[0] {
		return o, pgErr(codeInvalidParam, "COPY delimiter and quote must be different")
	}
	if !csv && escapeSet {
		return o, pgErr(codeNotSupported, "COPY escape available only in CSV mode")
	}
	if csv && len(escape) != 1 {
		return o, pgErr(codeNotSupported, "COPY escape must be a single one-byte character")
	}
	if csv {
		o.Quote, o.Escape = quote[0], escape[0]
	}
	if forceQuoteSet {
		if !csv {
			return o, pgErr(codeNotSupported, "COPY force quote available only in CSV mode")
		}
		if !to {
			return o, pgErr(codeNotSupported, "COPY force quote only available using COPY TO")
		}
	}
	if to && forceNotNullSet && csv {
		return o, pgErr(codeNotSupported, "COPY force not null only available using COPY FROM")
	}
	if to && forceNullSet && csv {
		return o, pgErr(codeNotSupported, "COPY force null only available using COPY FROM")
	}
	if to && o.HeaderMatch {
		return o, pgErr(codeNotSupported, "cannot use \"%s\" with HEADER in COPY TO", "match")
	}
	if !csv && forceNotNullSet {
		return o, pgErr(codeNotSupported, "COPY force not null available only in CSV mode")
	}
	if !csv && forceNullSet {
		return o, pgErr(codeNotSupported, "COPY force null available only in CSV mode")
	}
	if strings.IndexByte(o.Null, o.Delimiter) >= 0 {
		return o, pgErr(codeNotSupported, "COPY delimiter must not appear in the NULL specification")
	}
	if csv && strings.IndexByte(o.Null, o.Quote) >= 0 {
		return o, pgErr(codeNotSupported, "CSV quote character must not appear in the NULL specification")
	}
	return o, nil
}

// defString is an option's argument as text, as PostgreSQL's defGetString
// renders it.
func defString(d *pg_query.DefElem) (string, error) {
	if d.Arg == nil {
		return "", pgErr(codeSyntax, "%s requires a parameter", d.Defname)
	}
	switch a := d.Arg.Node.(type) {
	case *pg_query.Node_String_:
		return a.String_.Sval, nil
	case *pg_query.Node_Integer:
		return strconv.Itoa(int(a.Integer.Ival)), nil
	case *pg_query.Node_Float:
		return a.Float.Fval, nil
	case *pg_query.Node_Boolean:
		return strconv.FormatBool(a.Boolean.Boolval), nil
	case *pg_query.Node_AStar:
		return "*", nil
	case *pg_query.Node_List:
		var names []string
		for _, it := range a.List.Items {
			names = append(names, it.GetString_().GetSval())
		}
		return strings.Join(names, "."), nil
	}
	return "", pgErr(codeSyntax, "argument of option %s has an unexpected form", d.Defname)
}

// defBool reads a Boolean option as PostgreSQL's defGetBoolean does: no
// argument, 0 or 1, or true/false/on/off in any case.
func defBool(d *pg_query.DefElem) (bool, error) {
	if d.Arg == nil {
		return true, nil
	}
	if i, ok := d.Arg.Node.(*pg_query.Node_Integer); ok {
		switch i.Integer.Ival {
		case 0:
			return false, nil
		case 1:
			return true, nil
		}
		return false, pgErr(codeSyntax, "%s requires a Boolean value", d.Defname)
	}
	s, err := defString(d)
	if err != nil {
		return false, err
	}
	switch strings.ToLower(s) {
	case "true", "on":
		return true, nil
	case "false", "off":
		return false, nil
	}
	return false, pgErr(codeSyntax, "%s requires a Boolean value", d.Defname)
}

// defHeader reads HEADER: a Boolean or "match".
func defHeader(d *pg_query.DefElem) (header, match bool, err error) {
	if d.Arg == nil {
		return true, false, nil
	}
	if i, ok := d.Arg.Node.(*pg_query.Node_Integer); ok {
		switch i.Integer.Ival {
		case 0:
			return false, false, nil
		case 1:
			return true, false, nil
		}
		return false, false, pgErr(codeSyntax, "%s requires a Boolean value or \"match\"", d.Defname)
	}
	s, err := defString(d)
	if err != nil {
		return false, false, err
	}
	switch strings.ToLower(s) {
	case "true", "on":
		return true, false, nil
	case "false", "off":
		return false, false, nil
	case "match":
		return true, true, nil
	}
	return false, false, pgErr(codeSyntax, "%s requires a Boolean value or \"match\"", d.Defname)
}

// defColumns reads the column list of FORCE_NOT_NULL and FORCE_NULL (and
// FORCE_QUOTE): a list of names, or * for all columns.
func defColumns(d *pg_query.DefElem) (cols []string, all bool, err error) {
	if d.Arg != nil {
		switch a := d.Arg.Node.(type) {
		case *pg_query.Node_AStar:
			return nil, true, nil
		case *pg_query.Node_List:
			for _, it := range a.List.Items {
				s, ok := it.Node.(*pg_query.Node_String_)
				if !ok {
					return nil, false, pgErr(codeInvalidParam, "argument to option \"%s\" must be a list of column names", d.Defname)
				}
				cols = append(cols, s.String_.Sval)
			}
			return cols, false, nil
		}
	}
	return nil, false, pgErr(codeInvalidParam, "argument to option \"%s\" must be a list of column names", d.Defname)
}

// isUTF8Name reports whether name denotes UTF8 as PostgreSQL's
// pg_char_to_encoding reads names: ignoring case and every character that
// is not a letter or digit ("UTF-8", "utf8", "Unicode").
func isUTF8Name(name string) bool {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteByte(c)
		}
	}
	s := b.String()
	return s == "utf8" || s == "unicode"
}

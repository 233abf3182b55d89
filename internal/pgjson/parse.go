package pgjson

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/pgnumeric"
)

// maxDepth bounds nesting; PostgreSQL's bound is its stack depth, which
// input this deep reaches too.
const maxDepth = 1000

// errSyntax is the error of input the parser does not take: PostgreSQL
// rejects all of it too, with messages this package does not reproduce.
func errSyntax() error {
	return &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "22P02", Message: "invalid input syntax for type json"}
}

// Parse is jsonb_in: RFC 8259 JSON as PostgreSQL's lexer reads it, with
// numbers read as numeric, \u0000 refused, object keys sorted and the last
// of duplicates kept.
func Parse(s string) (*Value, error) {
	p := &parser{s: s}
	v := p.value(0)
	p.ws()
	if p.bad || p.i != len(s) || !utf8.ValidString(s) {
		return nil, errSyntax()
	}
	return v, nil
}

// MustParse is Parse for text known to be valid (jsonb_out's, as stored).
func MustParse(s string) *Value {
	v, err := Parse(s)
	if err != nil {
		panic("pgjson: " + err.Error() + ": " + s)
	}
	return v
}

// Valid reports whether json_in takes s (input jsonb_in refuses, such as
// \u0000, is reported invalid rather than misread).
func Valid(s string) bool {
	_, err := Parse(s)
	return err == nil
}

type parser struct {
	s   string
	i   int
	bad bool
}

func (p *parser) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *parser) value(depth int) *Value {
	p.ws()
	if p.i >= len(p.s) || depth > maxDepth {
		p.bad = true
		return nil
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		v := &Value{Kind: Object}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return v
		}
		for !p.bad {
			p.ws()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				p.bad = true
				return nil
			}
			k := p.str()
			p.ws()
			if p.bad || p.i >= len(p.s) || p.s[p.i] != ':' {
				p.bad = true
				return nil
			}
			p.i++
			item := p.value(depth + 1)
			v.Keys, v.Items = append(v.Keys, k), append(v.Items, item)
			p.ws()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				if !p.bad {
					v.normalize()
				}
				return v
			}
			p.bad = true
		}
		return nil
	case c == '[':
		p.i++
		v := &Value{Kind: Array}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return v
		}
		for !p.bad {
			v.Items = append(v.Items, p.value(depth+1))
			p.ws()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == ']' {
				p.i++
				return v
			}
			p.bad = true
		}
		return nil
	case c == '"':
		return &Value{Kind: String, Str: p.str()}
	case c == '-' || isDigit(c):
		return p.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(p.s[p.i:], lit) {
				p.i += len(lit)
				if p.i < len(p.s) && (isAlnum(p.s[p.i]) || p.s[p.i] == '_') {
					p.bad = true
				}
				switch lit {
				case "null":
					return &Value{Kind: Null}
				default:
					return &Value{Kind: Bool, True: lit == "true"}
				}
			}
		}
		p.bad = true
		return nil
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlnum(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func (p *parser) number() *Value {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.s) && isDigit(p.s[p.i]) {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		p.bad = true
		return nil
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			p.bad = true
			return nil
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			p.bad = true
			return nil
		}
	}
	if p.i < len(p.s) && (isAlnum(p.s[p.i]) || p.s[p.i] == '.' || p.s[p.i] == '_') {
		p.bad = true
		return nil
	}
	d, err := pgnumeric.Parse(p.s[start:p.i])
	if err != nil {
		p.bad = true
		return nil
	}
	return &Value{Kind: Number, Num: d, Str: d.String()}
}

// str reads a string at p.i (its opening quote) and returns it decoded.
func (p *parser) str() string {
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String()
		case c < 0x20:
			p.bad = true
			return ""
		case c == '\\':
			if p.i+1 >= len(p.s) {
				p.bad = true
				return ""
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := p.hex4()
				if !ok || r == 0 {
					p.bad = true // \u0000 is refused by jsonb too
					return ""
				}
				if utf16.IsSurrogate(r) {
					if r >= 0xdc00 || !strings.HasPrefix(p.s[p.i:], "\\u") {
						p.bad = true
						return ""
					}
					p.i += 2
					lo, ok := p.hex4()
					if !ok || lo < 0xdc00 || lo > 0xdfff {
						p.bad = true
						return ""
					}
					r = utf16.DecodeRune(r, lo)
				}
				b.WriteRune(r)
			default:
				p.bad = true
				return ""
			}
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			if r == utf8.RuneError && size <= 1 {
				p.bad = true
				return ""
			}
			b.WriteString(p.s[p.i : p.i+size])
			p.i += size
		}
	}
	p.bad = true
	return ""
}

func (p *parser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(v), true
}

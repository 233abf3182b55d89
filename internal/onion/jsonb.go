package onion

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A jsonb value is stored as jsonb_out prints it: object keys sorted (by
// length, then bytes) with the last of duplicate keys kept, numbers as
// numeric_out prints them, strings re-escaped, ", " and ": " between
// items. PostgreSQL compares jsonb numbers as numerics (1.0 = 1): the
// equality key prints them without trailing fraction zeros, and the
// exact text is kept in the Val copy.

// jsonNode is a parsed JSON value.
type jsonNode struct {
	kind  byte // 'o' object, 'a' array, 's' string, 'n' number, 'l' literal
	text  string
	keys  []string
	items []*jsonNode
}

// jsonParser reads RFC 8259 JSON as PostgreSQL's json lexer does; any
// input it does not take is refused (PostgreSQL rejects it too, with
// messages this package does not reproduce).
type jsonParser struct {
	s   string
	i   int
	bad bool
}

func (p *jsonParser) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *jsonParser) value(depth int) *jsonNode {
	p.ws()
	if p.i >= len(p.s) || depth > 1000 {
		p.bad = true
		return nil
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		n := &jsonNode{kind: 'o'}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return n
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
			v := p.value(depth + 1)
			n.keys, n.items = append(n.keys, k), append(n.items, v)
			p.ws()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return n
			}
			p.bad = true
		}
		return nil
	case c == '[':
		p.i++
		n := &jsonNode{kind: 'a'}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return n
		}
		for !p.bad {
			n.items = append(n.items, p.value(depth+1))
			p.ws()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == ']' {
				p.i++
				return n
			}
			p.bad = true
		}
		return nil
	case c == '"':
		return &jsonNode{kind: 's', text: p.str()}
	case c == '-' || isDigit(c):
		return p.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(p.s[p.i:], lit) {
				p.i += len(lit)
				if p.i < len(p.s) && (isAlnum(p.s[p.i]) || p.s[p.i] == '_') {
					p.bad = true
				}
				return &jsonNode{kind: 'l', text: lit}
			}
		}
		p.bad = true
		return nil
	}
}

func (p *jsonParser) number() *jsonNode {
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
	v, err := parseNumericText(p.s[start:p.i], Type{Base: Numeric})
	if err != nil {
		p.bad = true
		return nil
	}
	return &jsonNode{kind: 'n', text: string(appendNumericText(nil, v))}
}

// str reads a string at p.i (its opening quote) and returns it decoded.
func (p *jsonParser) str() string {
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

func (p *jsonParser) hex4() (rune, bool) {
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

// parseJSONBText is jsonb_in for well-formed JSON; other input is refused.
// parseJSONText is json_in: the text as given, once it parses as JSON
// (input the jsonb parser refuses is refused, not misread).
func parseJSONText(s string) (Value, error) {
	p := &jsonParser{s: s}
	p.value(0)
	p.ws()
	if p.bad || p.i != len(s) || !utf8.ValidString(s) {
		return Value{}, refuse(codeInvalidTextRep, "invalid input syntax for type json")
	}
	return TextValue(s), nil
}

func parseJSONBText(s string) (Value, error) {
	p := &jsonParser{s: s}
	n := p.value(0)
	p.ws()
	if p.bad || p.i != len(s) || !utf8.ValidString(s) {
		return Value{}, refuse(codeInvalidTextRep, "invalid input syntax for type json")
	}
	return TextValue(string(appendJSONB(nil, n, false))), nil
}

// appendJSONB prints n as jsonb_out does; with equality, numbers without
// trailing fraction zeros (the equality key).
func appendJSONB(dst []byte, n *jsonNode, equality bool) []byte {
	switch n.kind {
	case 'o':
		// Sorted by length, then bytes; of equal keys the last kept.
		idx := make([]int, len(n.keys))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			ka, kb := n.keys[a], n.keys[b]
			if len(ka) != len(kb) {
				return len(ka) - len(kb)
			}
			return strings.Compare(ka, kb)
		})
		dst = append(dst, '{')
		first := true
		for j, i := range idx {
			if j+1 < len(idx) && n.keys[idx[j+1]] == n.keys[i] {
				continue // a later duplicate wins
			}
			if !first {
				dst = append(dst, ", "...)
			}
			first = false
			dst = appendJSONString(dst, n.keys[i])
			dst = append(dst, ": "...)
			dst = appendJSONB(dst, n.items[i], equality)
		}
		return append(dst, '}')
	case 'a':
		dst = append(dst, '[')
		for i, it := range n.items {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendJSONB(dst, it, equality)
		}
		return append(dst, ']')
	case 's':
		return appendJSONString(dst, n.text)
	case 'n':
		if !equality {
			return append(dst, n.text...)
		}
		t := n.text
		if strings.Contains(t, ".") {
			t = strings.TrimRight(strings.TrimRight(t, "0"), ".")
		}
		if t == "-0" {
			t = "0"
		}
		return append(dst, t...)
	}
	return append(dst, n.text...)
}

// appendJSONString is escape_json.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
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
		default:
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			} else {
				dst = append(dst, c)
			}
		}
	}
	return append(dst, '"')
}

// jsonbKey is the equality key of a stored jsonb text.
func jsonbKey(stored string) []byte {
	p := &jsonParser{s: stored}
	n := p.value(0)
	if p.bad || n == nil {
		return []byte(stored)
	}
	return appendJSONB(nil, n, true)
}

package exec

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pglocale"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// POSIX regular expressions (~ and !~) in the proxy. PostgreSQL's engine
// (Spencer's ARE) and Go's (RE2) agree on whether a text matches for a
// common subset, which the proxy translates and checks: literals, ., *,
// +, ?, {m,n} (at most 255), |, groups and (?:...), ^ and $, bracket
// expressions with ranges and [:class:], and the escapes \d \s \w (and
// their negations), \n \t \r \f \v and escaped punctuation. Classes and
// \d \s \w are ASCII only under the C LC_CTYPE, as in PostgreSQL there;
// under another they are refused, as are back references, lookaround,
// embedded options, word-boundary escapes and collating elements.
// Case-insensitive matching (~*, !~*) folds ASCII letters only, as ARE
// does under the C LC_CTYPE: each letter and range also stands for its
// other case, [:upper:] and [:lower:] for [:alpha:].

// regexCache holds translated patterns (pattern and LC_CTYPE class rule
// -> compiled, or the refusal).
var regexCache sync.Map

type compiledRegex struct {
	re  *regexp.Regexp
	err error
}

// compileRegex returns the RE2 program of ARE pattern p, or a refusal;
// icase matches ASCII letters in either case (~*).
func compileRegex(p string, asciiClasses, icase bool) (*regexp.Regexp, error) {
	key := p
	if asciiClasses {
		key = "c\x00" + p
	}
	if icase {
		key = "i\x00" + key
	}
	if c, ok := regexCache.Load(key); ok {
		cr := c.(compiledRegex)
		return cr.re, cr.err
	}
	re, err := translateRegex(p, asciiClasses, icase)
	regexCache.Store(key, compiledRegex{re, err})
	return re, err
}

func refuseRegex(p, why string) error {
	return rewrite.Refusal("the regular expression %q is not supported in a query the proxy computes: %s", p, why)
}

// translateRegex checks ARE pattern p against the common subset and
// compiles it for RE2 (. matching newlines, as in ARE).
func translateRegex(p string, asciiClasses, icase bool) (*regexp.Regexp, error) {
	if strings.HasPrefix(p, "***") {
		return nil, refuseRegex(p, "directors (***) are not supported")
	}
	if !utf8.ValidString(p) {
		return nil, refuseRegex(p, "invalid UTF-8")
	}
	var b strings.Builder
	b.WriteString("(?s)")
	rs := []rune(p)
	classEscape := func(e rune) error {
		if !asciiClasses {
			return refuseRegex(p, "\\"+string(e)+" depends on the database's LC_CTYPE, which is not C")
		}
		return nil
	}
	escape := func(i int) (int, error) {
		if i+1 >= len(rs) {
			return 0, refuseRegex(p, "it ends with a backslash")
		}
		e := rs[i+1]
		switch {
		case strings.ContainsRune("dDsSwW", e):
			if err := classEscape(e); err != nil {
				return 0, err
			}
		case strings.ContainsRune("ntrfv", e):
		case e < utf8.RuneSelf && !(e >= '0' && e <= '9' || e >= 'a' && e <= 'z' || e >= 'A' && e <= 'Z' || e == '_'):
		default:
			return 0, refuseRegex(p, "the escape \\"+string(e)+" is not supported")
		}
		b.WriteRune('\\')
		b.WriteRune(e)
		return i + 2, nil
	}
	for i := 0; i < len(rs); {
		c := rs[i]
		switch c {
		case '\\':
			n, err := escape(i)
			if err != nil {
				return nil, err
			}
			i = n
		case '(':
			if i+1 < len(rs) && rs[i+1] == '?' {
				if i+2 < len(rs) && rs[i+2] == ':' {
					b.WriteString("(?:")
					i += 3
					continue
				}
				return nil, refuseRegex(p, "lookaround and embedded options are not supported")
			}
			b.WriteRune(c)
			i++
		case '{':
			j := i + 1
			for j < len(rs) && rs[j] != '}' {
				j++
			}
			if j >= len(rs) || !validBound(string(rs[i+1:j])) {
				return nil, refuseRegex(p, "a brace that is not a bound of at most 255")
			}
			b.WriteString(string(rs[i : j+1]))
			i = j + 1
		case '[':
			n, err := translateBracket(p, rs, i, &b, asciiClasses, icase, escape)
			if err != nil {
				return nil, err
			}
			i = n
		default:
			if o := otherCase(c); icase && o != c {
				b.WriteString("[" + string(c) + string(o) + "]")
			} else {
				b.WriteRune(c)
			}
			i++
		}
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, refuseRegex(p, err.Error())
	}
	return re, nil
}

// validBound reports whether m, "m," or "m,n" is a bound ARE takes (at
// most 255, m <= n).
func validBound(s string) bool {
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return false
	}
	nums := make([]int, len(parts))
	for k, x := range parts {
		if x == "" {
			if k == 0 {
				return false
			}
			nums[k] = -1
			continue
		}
		if len(x) > 3 {
			return false
		}
		n := 0
		for _, d := range x {
			if d < '0' || d > '9' {
				return false
			}
			n = n*10 + int(d-'0')
		}
		if n > 255 {
			return false
		}
		nums[k] = n
	}
	return len(nums) == 1 || nums[1] < 0 || nums[0] <= nums[1]
}

// translateBracket copies the bracket expression at rs[i] ('['), and
// returns the index after it.
func translateBracket(p string, rs []rune, i int, b *strings.Builder, asciiClasses, icase bool, escape func(int) (int, error)) (int, error) {
	var folded []rune // with icase, the other case of the letters and ranges
	b.WriteRune('[')
	i++
	if i < len(rs) && rs[i] == '^' {
		b.WriteRune('^')
		i++
	}
	if i < len(rs) && rs[i] == ']' {
		return 0, refuseRegex(p, "a bracket expression starting with ]")
	}
	for i < len(rs) {
		switch c := rs[i]; {
		case c == ']':
			for k := 0; k+1 < len(folded); k += 2 {
				b.WriteRune(folded[k])
				if folded[k+1] != folded[k] {
					b.WriteRune('-')
					b.WriteRune(folded[k+1])
				}
			}
			b.WriteRune(']')
			return i + 1, nil
		case c == '[' && i+1 < len(rs) && rs[i+1] == ':':
			end := i + 2
			for end+1 < len(rs) && !(rs[end] == ':' && rs[end+1] == ']') {
				end++
			}
			if end+1 >= len(rs) {
				return 0, refuseRegex(p, "an unterminated character class")
			}
			name := string(rs[i+2 : end])
			switch name {
			case "alpha", "digit", "alnum", "upper", "lower", "space", "punct", "xdigit":
			default:
				return 0, refuseRegex(p, "the character class "+name+" is not supported")
			}
			if !asciiClasses {
				return 0, refuseRegex(p, "character classes depend on the database's LC_CTYPE, which is not C")
			}
			if icase && (name == "upper" || name == "lower") {
				b.WriteString("[:alpha:]") // as ARE reads them when folding case
				i += 2 + len("upper") + 2
				continue
			}
			b.WriteString("[:" + name + ":]")
			i += 2 + len([]rune(name)) + 2
		case c == '[' && i+1 < len(rs) && (rs[i+1] == '.' || rs[i+1] == '='):
			return 0, refuseRegex(p, "collating elements and equivalence classes are not supported")
		case c == '\\':
			n, err := escape(i)
			if err != nil {
				return 0, err
			}
			i = n
		default:
			lo, hi := c, c
			if i+2 < len(rs) && rs[i+1] == '-' && rs[i+2] != ']' {
				if hi = rs[i+2]; hi == '\\' || hi == '[' {
					return 0, refuseRegex(p, "a range ending in an escape or a class is not supported")
				}
				if hi < lo {
					return 0, refuseRegex(p, "an invalid range")
				}
				b.WriteString(string(lo) + "-" + string(hi))
				i += 3
			} else {
				b.WriteRune(c)
				i++
			}
			if icase {
				folded = append(folded, foldRange(lo, hi, 'a', 'z')...)
				folded = append(folded, foldRange(lo, hi, 'A', 'Z')...)
			}
		}
	}
	return 0, refuseRegex(p, "an unterminated bracket expression")
}

// otherCase is the other case of an ASCII letter, c itself for any other
// character: under the C locale ARE folds only ASCII.
func otherCase(c rune) rune {
	switch {
	case c >= 'a' && c <= 'z':
		return c - 'a' + 'A'
	case c >= 'A' && c <= 'Z':
		return c - 'A' + 'a'
	}
	return c
}

// foldRange is the part of lo-hi within the letters first-last, in the
// other case, as a pair of bounds (nil when they do not overlap).
func foldRange(lo, hi, first, last rune) []rune {
	lo, hi = max(lo, first), min(hi, last)
	if lo > hi {
		return nil
	}
	return []rune{otherCase(lo), otherCase(hi)}
}

// regexFuncs are ~, !~, ~* and !~* of text.
func regexFuncs() map[string]*scalarFunc {
	match := func(name string, negate, icase bool) *scalarFunc {
		return &scalarFunc{sig: fixed(name, []onion.Type{TypeText, TypeText}, TypeBool), call: func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
			c := pglocale.IsC(ev.Env.CType)
			if icase && !c {
				return Value{}, rewrite.Refusal("%s is not supported in a query the proxy computes: case folding depends on the database's LC_CTYPE, which is not C", name)
			}
			re, err := compileRegex(str(a[1]), c, icase)
			if err != nil {
				return Value{}, err
			}
			return boolVal(re.MatchString(str(a[0])) != negate), nil
		}}
	}
	return map[string]*scalarFunc{"~": match("~", false, false), "!~": match("!~", true, false),
		"~*": match("~*", false, true), "!~*": match("!~*", true, true)}
}

package pglike

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// errTrail and errEscape stand for the two errors in the tables.
const (
	errTrail  = "ERR trail"
	errEscape = "ERR escape"
)

// like is one case: text LIKE pattern ESCAPE escape (ILIKE when ci), and
// the expected outcome: "t", "f", errTrail or errEscape. The expectations
// were checked against PostgreSQL 15 (the differential test checks them
// again).
type like struct {
	text, pattern, escape string
	ci                    bool
	want                  string
}

var likeCases = []like{
	// Plain characters.
	{"", "", "", false, "t"},
	{"a", "", "", false, "f"},
	{"", "a", "", false, "f"},
	{"abc", "abc", "", false, "t"},
	{"abc", "abd", "", false, "f"},
	{"abc", "ab", "", false, "f"},
	{"ab", "abc", "", false, "f"},
	{"abc", "ABC", "", false, "f"},
	// %.
	{"", "%", "", false, "t"},
	{"", "%%%", "", false, "t"},
	{"abc", "%", "", false, "t"},
	{"abc", "a%", "", false, "t"},
	{"abc", "%c", "", false, "t"},
	{"abc", "%b%", "", false, "t"},
	{"abc", "%d%", "", false, "f"},
	{"abcabc", "%bc", "", false, "t"},
	{"abcabd", "%a%d", "", false, "t"},
	{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "%a%a%a%a%a%a%b", "", false, "t"},
	{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "%a%a%a%a%a%a%b", "", false, "f"},
	// _ is one code point.
	{"", "_", "", false, "f"},
	{"a", "_", "", false, "t"},
	{"ab", "_", "", false, "f"},
	{"é", "_", "", false, "t"},
	{"é", "__", "", false, "f"},
	{"日本", "__", "", false, "t"},
	{"😀x", "_x", "", false, "t"},
	{"😀", "%_", "", false, "t"},
	{"😀", "%__", "", false, "f"},
	{"ab", "%_%_%", "", false, "t"},
	{"a", "%_%_%", "", false, "f"},
	{"héllo wörld", "h_llo%w_rld", "", false, "t"},
	{"héllo", "%é%", "", false, "t"},
	{"héllo", "%É%", "", false, "f"},
	// Backslash, the default escape.
	{"%", `\%`, "", false, "t"},
	{"a", `\%`, "", false, "f"},
	{"_", `\_`, "", false, "t"},
	{"a", `\_`, "", false, "f"},
	{`\`, `\\`, "", false, "t"},
	{"a", `\a`, "", false, "t"},
	{"é", `\é`, "", false, "t"},
	{"x%y", `%\%%`, "", false, "t"},
	{"xy", `%\%%`, "", false, "f"},
	// ESCAPE '\' is the default.
	{"%", `\%`, `\`, false, "t"},
	{"a", `\%`, `\`, false, "f"},
	// The trailing escape fails only when reached with text left.
	{"ba", `b\`, "", false, errTrail},
	{"b", `b\`, "", false, "f"},
	{"a", `b\`, "", false, "f"},
	{"", `\`, "", false, "f"},
	{"a", `\`, "", false, errTrail},
	{"abc", `%\`, "", false, errTrail},
	{"", `%\`, "", false, "f"},
	{"abc", `%_\`, "", false, errTrail},
	{"a", `%_\`, "", false, errTrail},
	{"", `%_\`, "", false, "f"},
	{"a", `_\`, "", false, "f"},
	{"xa", `%a\`, "", false, "f"},
	{"xab", `%a\`, "", false, errTrail},
	{"ab", `a%\`, "", false, errTrail},
	{`a\`, `a\\\`, "", false, "f"},
	{`a\b`, `a\\\`, "", false, errTrail},
	// Other escape characters.
	{"%", "#%", "#", false, "t"},
	{"a", "#%", "#", false, "f"},
	{"#", "##", "#", false, "t"},
	{`\`, `\`, "#", false, "t"},
	{`\\`, `\\`, "#", false, "t"},
	{`\`, `#\`, "#", false, "t"},
	{`a`, `#\`, "#", false, "f"},
	{"ba", "b#", "#", false, errTrail},
	{"b", "b#", "#", false, "f"},
	{"a%", "aé%", "é", false, "t"},
	{"ab", "aé%", "é", false, "f"},
	{"é", "éé", "é", false, "t"},
	{"aa", "a", "a", false, errTrail},
	{"", "a", "a", false, "f"},
	{"a", "aa", "a", false, "t"},
	{"%", "%%", "%", false, "t"},
	{"x", "%%", "%", false, "f"},
	{"_", "__", "_", false, "t"},
	{"x", "__", "_", false, "f"},
	{"xa", "%a", "%", false, "f"},
	// ESCAPE '' disables escaping.
	{`\`, `\`, NoEscape, false, "t"},
	{`\%`, `\%`, NoEscape, false, "t"},
	{`\x`, `\%`, NoEscape, false, "t"},
	{`%`, `\%`, NoEscape, false, "f"},
	{`ab`, `a\`, NoEscape, false, "f"},
	// Escape strings of more than one character.
	{"a", "a", "ab", false, errEscape},
	{"a", "a", "éa", false, errEscape},
	{"a", "a", `\\`, false, errEscape},
	{"a", "a", "ab", true, errEscape},
	// ILIKE lowercases A-Z only.
	{"ABC", "abc", "", true, "t"},
	{"abc", "ABC", "", true, "t"},
	{"aBc", "%B%", "", true, "t"},
	{"É", "é", "", true, "f"},
	{"é", "É", "", true, "f"},
	{"ß", "SS", "", true, "f"},
	{"ß", "ss", "", true, "f"},
	{"Σ", "σ", "", true, "f"},
	{"\u212a", "k", "", true, "f"}, // KELVIN SIGN
	{"k", "\u212a", "", true, "f"},
	{"İ", "i%", "", true, "f"},
	{"I", "i", "", true, "t"},
	// The escape character is case-sensitive even under ILIKE.
	{"b", "Ab", "A", true, "t"},
	{"B", "Ab", "A", true, "t"},
	{"ab", "ab", "A", true, "t"},
	{"AB", "ab", "A", true, "t"},
	{"a", "aA", "A", false, "f"},
	{"%", "A%", "A", true, "t"},
	{"x", "A%", "A", true, "f"},
	{"x", "a%", "A", true, "f"},
	{"ax", "a%", "A", true, "t"},
	// bpchar: the padding is part of the value.
	{"a  ", "a", "", false, "f"},
	{"a  ", "a  ", "", false, "t"},
	{"a  ", "a%", "", false, "t"},
	{"a  ", "a__", "", false, "t"},
}

func outcome(p *Pattern, err error, text string) string {
	if err != nil {
		return errName(err)
	}
	ok, err := p.Eval(text)
	if err != nil {
		return errName(err)
	}
	if ok != p.Match(text) {
		return "Match and Eval disagree"
	}
	if ok {
		return "t"
	}
	return "f"
}

func errName(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22025" || pe.Severity != "ERROR" {
		return "bad error " + err.Error()
	}
	switch {
	case pe.Message == "LIKE pattern must not end with escape character" && pe.Hint == "":
		return errTrail
	case pe.Message == "invalid escape string" && pe.Hint == "Escape string must be empty or one character.":
		return errEscape
	}
	return "bad error " + err.Error()
}

func TestLike(t *testing.T) {
	for _, c := range likeCases {
		p, err := Compile(c.pattern, c.escape, c.ci)
		if got := outcome(p, err, c.text); got != c.want {
			t.Errorf("%q %s %q ESCAPE %q: got %s, want %s", c.text, op(c.ci), c.pattern, c.escape, got, c.want)
		}
		if err == nil && c.want == errTrail && !p.MayFail() {
			t.Errorf("%q ESCAPE %q: MayFail false", c.pattern, c.escape)
		}
		if err == nil && p.MayFail() != endsWithEscapeRef(c.pattern, c.escape) {
			t.Errorf("%q ESCAPE %q: MayFail %v", c.pattern, c.escape, p.MayFail())
		}
		if err == nil {
			checkRef(t, p, c.text, c.pattern, c.escape, c.ci)
		}
	}
}

func op(ci bool) string {
	if ci {
		return "ILIKE"
	}
	return "LIKE"
}

func TestMustCompile(t *testing.T) {
	if !MustCompile("a%", DefaultEscape, false).Match("abc") {
		t.Error("a% does not match abc")
	}
	if !MustCompile("A%", DefaultEscape, true).CaseInsensitive() {
		t.Error("CaseInsensitive false")
	}
	defer func() {
		if recover() == nil {
			t.Error("MustCompile did not panic")
		}
	}()
	MustCompile("a", "ab", false)
}

// A reference matcher, written independently of matchText: the pattern is
// parsed into code-point tokens and matched by dynamic programming. It has
// no notion of the lazy error: a trailing escape character is a token that
// matches nothing.

type token struct {
	kind byte // 'l' literal, '_' one character, '%' any characters, 'x' unmatchable
	r    rune
}

func parseRef(pattern, escape string, ci bool) []token {
	var esc rune = '\\'
	switch escape {
	case DefaultEscape:
	case NoEscape:
		esc = -1
	default:
		esc, _ = utf8.DecodeRuneInString(escape)
	}
	var toks []token
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == esc:
			if i == len(rs)-1 {
				toks = append(toks, token{kind: 'x'})
			} else {
				i++
				toks = append(toks, token{kind: 'l', r: lowerRef(rs[i], ci)})
			}
		case r == '%' || r == '_':
			toks = append(toks, token{kind: byte(r)})
		default:
			toks = append(toks, token{kind: 'l', r: lowerRef(r, ci)})
		}
	}
	return toks
}

func lowerRef(r rune, ci bool) rune {
	if ci && r < 128 {
		return []rune(strings.ToLower(string(r)))[0]
	}
	return r
}

func matchRef(text string, toks []token, ci bool) bool {
	rs := []rune(text)
	// m[j]: the first i tokens match the first j runes.
	m := make([]bool, len(rs)+1)
	m[0] = true
	for _, tk := range toks {
		n := make([]bool, len(rs)+1)
		for j := 0; j <= len(rs); j++ {
			switch tk.kind {
			case '%':
				n[j] = m[j] || (j > 0 && n[j-1])
			case '_':
				n[j] = j > 0 && m[j-1]
			case 'l':
				n[j] = j > 0 && m[j-1] && lowerRef(rs[j-1], ci) == tk.r
			}
		}
		m = n
	}
	return m[len(rs)]
}

func endsWithEscapeRef(pattern, escape string) bool {
	toks := parseRef(pattern, escape, false)
	return len(toks) > 0 && toks[len(toks)-1].kind == 'x'
}

// checkRef checks Eval against the reference, for valid UTF-8.
func checkRef(t testing.TB, p *Pattern, text, pattern, escape string, ci bool) {
	t.Helper()
	if !utf8.ValidString(text) || !utf8.ValidString(pattern) || !utf8.ValidString(escape) {
		return
	}
	ok, err := p.Eval(text)
	ref := matchRef(text, parseRef(pattern, escape, ci), ci)
	if err != nil {
		if !p.MayFail() {
			t.Errorf("%q %s %q ESCAPE %q: error %v but MayFail false", text, op(ci), pattern, escape, err)
		}
		return
	}
	if ok != ref {
		t.Errorf("%q %s %q ESCAPE %q: got %v, reference %v", text, op(ci), pattern, escape, ok, ref)
	}
}

// Package pglike evaluates PostgreSQL 15's LIKE, ILIKE, NOT LIKE and NOT
// ILIKE (the ~~, ~~*, !~~ and !~~* operators) on text, exactly as a server
// whose database has encoding UTF8 and the C collation (initdb
// --encoding=UTF8 --locale=C) evaluates them, errors included, so that the
// proxy can check a LIKE predicate on decrypted values.
//
// # Semantics
//
//   - % matches any sequence of zero or more characters and _ exactly one
//     character, where a character is a code point (a UTF-8 sequence), not a
//     byte. Every other character matches only itself, byte for byte.
//   - Without an ESCAPE clause the escape character is the backslash. With
//     ESCAPE 'c' it is c (any single character, multibyte ones included),
//     and a backslash is then an ordinary character. An empty ESCAPE
//     string disables escaping. The escape character makes the character after it literal,
//     whatever it is (%, _, the escape character itself, or any other).
//   - ILIKE lowercases both the pattern (after the ESCAPE conversion) and
//     the text with lower() under the database's LC_CTYPE (pglocale): under
//     C only the ASCII letters A-Z map to a-z ('É' ILIKE 'é' is false),
//     under C.UTF-8 it is true; 'ß' ILIKE 'SS' is false under both.
//     The escape character is recognised before lowercasing, so it is
//     case-sensitive even under ILIKE.
//   - character(n) (bpchar) values keep their blank padding under LIKE:
//     'a'::char(3) LIKE 'a' is false, LIKE 'a%' is true, and so is LIKE
//     'a' followed by two blanks. The caller passes the padded value.
//   - NULLs are the caller's: LIKE is strict in all three operands, and NOT
//     LIKE is the negation of LIKE (NULL stays NULL, an error stays the
//     same error).
//
// # Errors
//
// PostgreSQL raises two errors, both with SQLSTATE 22025
// (invalid_escape_sequence):
//
//   - "invalid escape string" (hint "Escape string must be empty or one
//     character.") when the ESCAPE clause has two or more characters. The
//     server raises it for every evaluation where pattern and escape are not
//     NULL (even when the text is NULL); Compile returns it.
//   - "LIKE pattern must not end with escape character" when the pattern ends
//     with an escape character that escapes nothing. The server raises it
//     lazily, only for the texts with which its matcher gets to that escape
//     character: 'ba' LIKE 'b\' and 'a' LIKE '%_\' fail, while 'b' LIKE
//     'b\', 'a' LIKE 'b\' and 'a' LIKE '_\' are false. Pattern.Eval
//     reproduces exactly which texts fail; Pattern.MayFail reports whether a
//     pattern can fail at all.
//
// The server may also fail with "stack depth limit exceeded" on patterns
// with a huge number of % wildcards; this package has no such limit.
package pglike

import (
	"github.com/pgonion/pgonion/internal/pglocale"

	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// CodeInvalidEscapeSequence is the SQLSTATE of both errors of this package
// (invalid_escape_sequence).
const CodeInvalidEscapeSequence = "22025"

// NoEscape is the escape argument of Compile that stands for an empty
// ESCAPE string (no escape character at all). It is a NUL character, which a PostgreSQL text
// value cannot hold, so it cannot be confused with a real ESCAPE string.
const NoEscape = "\x00"

// DefaultEscape is the escape argument of Compile that stands for a LIKE
// without an ESCAPE clause (the backslash escapes). ESCAPE '\' behaves the
// same.
const DefaultEscape = ""

// Pattern is a compiled LIKE or ILIKE pattern. It is immutable and safe for
// concurrent use.
type Pattern struct {
	// pat is the pattern in PostgreSQL's internal form: the ESCAPE clause
	// applied (backslash is the escape character) and, for ILIKE, ASCII
	// letters lowercased.
	pat string
	// ci is set for ILIKE: the text is lowercased before matching, under
	// LC_CTYPE ctype.
	ci    bool
	ctype string
	// mayFail is set when pat ends with a backslash that escapes nothing.
	mayFail bool
}

// Compile compiles the pattern of `text LIKE pattern ESCAPE escape` (or
// ILIKE, when caseInsensitive is set).
//
// escape is the ESCAPE clause: DefaultEscape ("") when the clause is
// absent, NoEscape for an empty ESCAPE string, otherwise the clause's
// string (for instance "#" for ESCAPE '#', "\\" for ESCAPE '\').
//
// The only error is PostgreSQL's, a *pgconn.PgError with SQLSTATE 22025,
// message "invalid escape string" and hint "Escape string must be empty or
// one character.", returned when escape has more than one character.
// pattern and escape are expected to be valid UTF-8, as every text value of
// a UTF8 database is; invalid UTF-8 is processed byte-wise like the server
// would, and never panics.
func Compile(pattern string, escape string, caseInsensitive bool) (*Pattern, error) {
	var pat string
	switch escape {
	case DefaultEscape, `\`:
		pat = pattern
	case NoEscape:
		pat = strings.ReplaceAll(pattern, `\`, `\\`)
	default:
		if mbLen(escape) != len(escape) {
			return nil, &pgconn.PgError{
				Severity:            "ERROR",
				SeverityUnlocalized: "ERROR",
				Code:                CodeInvalidEscapeSequence,
				Message:             "invalid escape string",
				Hint:                "Escape string must be empty or one character.",
			}
		}
		pat = convertEscape(pattern, escape)
	}
	if caseInsensitive {
		pat = asciiLower(pat)
	}
	return &Pattern{pat: pat, ci: caseInsensitive, mayFail: endsWithEscape(pat), ctype: "C"}, nil
}

// CompileUnder is Compile for a database whose LC_CTYPE is ctype: ILIKE
// lowercases as lower() does there. It fails when the proxy cannot map
// case under ctype (pglocale.Check).
func CompileUnder(pattern, escape string, caseInsensitive bool, ctype string) (*Pattern, error) {
	if !caseInsensitive || pglocale.IsC(ctype) {
		return Compile(pattern, escape, caseInsensitive)
	}
	if err := pglocale.Check(ctype); err != nil {
		return nil, err
	}
	p, err := Compile(pattern, escape, false)
	if err != nil {
		return nil, err
	}
	p.ci, p.ctype = true, ctype
	p.pat, _ = pglocale.Lower(ctype, p.pat)
	p.mayFail = endsWithEscape(p.pat)
	return p, nil
}

// MustCompile is Compile that panics on error, for patterns known to be
// valid.
func MustCompile(pattern string, escape string, caseInsensitive bool) *Pattern {
	p, err := Compile(pattern, escape, caseInsensitive)
	if err != nil {
		panic("pglike: " + err.Error())
	}
	return p
}

// Match reports whether s matches the pattern: the value of `s LIKE
// pattern` (or ILIKE) for a non-NULL s. Where PostgreSQL would fail with
// "LIKE pattern must not end with escape character", Match returns false;
// use Eval to get that error.
func (p *Pattern) Match(s string) bool {
	ok, _ := p.Eval(s)
	return ok
}

// Eval is Match with PostgreSQL's error: for the s for which the server
// fails with "LIKE pattern must not end with escape character", it returns
// false and a *pgconn.PgError with SQLSTATE 22025 and that message. It
// never fails when MayFail is false.
func (p *Pattern) Eval(s string) (bool, error) {
	if p.ci {
		s = p.lower(s)
	}
	switch matchText(s, p.pat) {
	case likeTrue:
		return true, nil
	case likeError:
		return false, &pgconn.PgError{
			Severity:            "ERROR",
			SeverityUnlocalized: "ERROR",
			Code:                CodeInvalidEscapeSequence,
			Message:             "LIKE pattern must not end with escape character",
		}
	default:
		return false, nil
	}
}

// MayFail reports whether Eval can fail for some text: whether the pattern
// ends with an escape character that escapes nothing.
func (p *Pattern) MayFail() bool { return p.mayFail }

// CaseInsensitive reports whether the pattern is an ILIKE pattern.
func (p *Pattern) CaseInsensitive() bool { return p.ci }

// mbLen is the byte length of the character s starts with, as PostgreSQL's
// pg_utf_mblen computes it from the first byte, capped at len(s). It is 0
// for the empty string.
func mbLen(s string) int {
	if s == "" {
		return 0
	}
	var n int
	switch c := s[0]; {
	case c < 0x80:
		n = 1
	case c&0xe0 == 0xc0:
		n = 2
	case c&0xf0 == 0xe0:
		n = 3
	case c&0xf8 == 0xf0:
		n = 4
	default:
		n = 1
	}
	return min(n, len(s))
}

// convertEscape rewrites pattern written with the single-character escape
// esc (not a backslash) to use the backslash instead: an esc not itself
// escaped becomes a backslash, and a backslash becomes an escaped
// backslash unless esc escapes it.
func convertEscape(pattern, esc string) string {
	var b strings.Builder
	b.Grow(len(pattern) + 8)
	afterEscape := false
	for pattern != "" {
		n := mbLen(pattern)
		c := pattern[:n]
		pattern = pattern[n:]
		switch {
		case c == esc && !afterEscape:
			b.WriteByte('\\')
			afterEscape = true
		case c == `\`:
			b.WriteByte('\\')
			if !afterEscape {
				b.WriteByte('\\')
			}
			afterEscape = false
		default:
			b.WriteString(c)
			afterEscape = false
		}
	}
	return b.String()
}

// lower is lower(s) under the pattern's LC_CTYPE (checked by
// CompileUnder, so it cannot fail).
func (p *Pattern) lower(s string) string {
	if pglocale.IsC(p.ctype) {
		return asciiLower(s)
	}
	l, err := pglocale.Lower(p.ctype, s)
	if err != nil {
		panic("pglike: " + err.Error())
	}
	return l
}

// asciiLower maps A-Z to a-z and leaves every other byte alone, like
// lower() under the C collation.
func asciiLower(s string) string {
	i := 0
	for i < len(s) && (s[i] < 'A' || s[i] > 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if c := b[i]; 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// endsWithEscape reports whether the internal-form pattern pat ends with a
// backslash that escapes nothing. The matcher reads a pattern left to
// right, a backslash taking the next byte with it and every other byte
// standing alone, so the escapes are those of this scan.
func endsWithEscape(pat string) bool {
	for i := 0; i < len(pat); i++ {
		if pat[i] == '\\' {
			if i == len(pat)-1 {
				return true
			}
			i++
		}
	}
	return false
}

// Results of matchText.
const (
	likeFalse = iota
	likeTrue
	// likeAbort: no match here, nor anywhere further right in the text.
	likeAbort
	// likeError: the matcher hit a trailing escape character.
	likeError
)

// nextChar skips the character t starts with: one byte and the UTF-8
// continuation bytes after it.
func nextChar(t string) string {
	t = t[1:]
	for t != "" && t[0]&0xc0 == 0x80 {
		t = t[1:]
	}
	return t
}

// matchText matches text t against the internal-form pattern p. It follows
// the order in which the server's matcher examines the two, so that it
// reaches a trailing escape character (and fails) for exactly the same
// texts. Literal characters compare byte by byte, which for valid UTF-8 is
// comparing characters since t is always at a character boundary where a
// pattern character starts.
func matchText(t, p string) int {
	for t != "" && p != "" {
		switch p[0] {
		case '\\':
			// The next pattern byte must match literally, whatever it is.
			p = p[1:]
			if p == "" {
				return likeError
			}
			if p[0] != t[0] {
				return likeFalse
			}
		case '%':
			// Skip the run of % and _ that follows, each _ taking one
			// text character.
			p = p[1:]
			for p != "" {
				if p[0] == '%' {
					p = p[1:]
				} else if p[0] == '_' {
					if t == "" {
						return likeAbort
					}
					t = nextChar(t)
					p = p[1:]
				} else {
					break
				}
			}
			// A trailing % matches the rest of the text.
			if p == "" {
				return likeTrue
			}
			// The rest starts with a literal: try it at each text
			// character starting with the literal's first byte.
			var first byte
			if p[0] == '\\' {
				if len(p) < 2 {
					return likeError
				}
				first = p[1]
			} else {
				first = p[0]
			}
			for t != "" {
				if t[0] == first {
					if r := matchText(t, p); r != likeFalse {
						return r
					}
				}
				t = nextChar(t)
			}
			return likeAbort
		case '_':
			// One text character, and there is one.
			t = nextChar(t)
			p = p[1:]
			continue
		default:
			if p[0] != t[0] {
				return likeFalse
			}
		}
		t = t[1:]
		p = p[1:]
	}
	if t != "" {
		return likeFalse
	}
	// The text is used up: only a run of % can match the empty rest.
	for p != "" && p[0] == '%' {
		p = p[1:]
	}
	if p == "" {
		return likeTrue
	}
	return likeAbort
}

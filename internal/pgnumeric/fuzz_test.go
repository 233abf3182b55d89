package pgnumeric

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

var canonical = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`)

// FuzzParse checks that Parse never panics, fails only with PostgreSQL's
// two input errors, and that String's text parses back to the same value
// and text. (Agreement with the server is TestDifferentialRandom's.)
func FuzzParse(f *testing.F) {
	for _, c := range numCases {
		f.Add(c.a)
		f.Add(c.b)
	}
	f.Add("1e 5")
	f.Add("-0.000e-3")
	f.Add("\v12.50E+2\f")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q): %v is not a PgError", s, err)
			}
			switch {
			case pe.Code == CodeInvalidTextRepresentation && pe.Message == `invalid input syntax for type numeric: "`+s+`"`:
			case pe.Code == CodeNumericValueOutOfRange && pe.Message == "value overflows numeric format":
			default:
				t.Fatalf("Parse(%q): unexpected error %v", s, err)
			}
			return
		}
		text := d.String()
		e, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q) = %.80s, which does not parse: %v", s, text, err)
		}
		if e.String() != text || e.Cmp(d) != 0 || e.Scale() != d.Scale() {
			t.Fatalf("Parse(%q) = %.80s, which parses as %.80s", s, text, e)
		}
		if d.IsFinite() {
			// The text is canonical: no leading zeros, no "-0".
			if !canonical.MatchString(text) || (text[0] == '-' && d.Sign() == 0) {
				t.Fatalf("Parse(%q) = %.80s: not canonical", s, text)
			}
			if n := strings.IndexByte(text, '.'); (n < 0) != (d.Scale() == 0) || (n >= 0 && len(text)-n-1 != d.Scale()) {
				t.Fatalf("Parse(%q) = %.80s: scale %d", s, text, d.Scale())
			}
		}
	})
}

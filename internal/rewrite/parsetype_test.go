package rewrite

import (
	"testing"

	"github.com/pgonion/pgonion/internal/onion"
)

// TestParseTypeMemo: a memoized type is the one a fresh parse gives, and
// a bad type is refused every time (errors are not kept).
func TestParseTypeMemo(t *testing.T) {
	for _, s := range []string{"integer", "numeric(12,2)", "character varying(20)", "timestamp with time zone", "text"} {
		want, err := parseTypeUncached(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		for range 2 {
			if got, err := parseType(s); err != nil || got != want {
				t.Fatalf("%s: %v %v, want %v", s, got, err, want)
			}
		}
	}
	for range 2 {
		if _, err := parseType("no such type((("); err == nil {
			t.Fatal("a bad type was accepted")
		}
	}
}

// BenchmarkColumnType: reading a catalog column's type, as a
// read-modify-write does at each Bind.
func BenchmarkColumnType(b *testing.B) {
	for _, memo := range []bool{true, false} {
		name := "memoized"
		if !memo {
			name = "parsed"
		}
		b.Run(name, func(b *testing.B) {
			var t onion.Type
			var err error
			for b.Loop() {
				if memo {
					t, err = parseType("numeric(12,2)")
				} else {
					t, err = parseTypeUncached("numeric(12,2)")
				}
				if err != nil || t.Base != onion.Numeric {
					b.Fatal(t, err)
				}
			}
		})
	}
}

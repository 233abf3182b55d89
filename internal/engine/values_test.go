package engine

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pglocale"
)

// escapeBytea is PostgreSQL's bytea escape output form.
func escapeBytea(b []byte) []byte {
	var out []byte
	for _, c := range b {
		switch {
		case c == '\\':
			out = append(out, `\\`...)
		case c < 0x20 || c > 0x7e:
			out = fmt.Appendf(out, `\%03o`, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// FuzzCellBytes decodes server bytea text in both forms: arbitrary input
// must not panic, and the encodings of any value must decode to it.
func FuzzCellBytes(f *testing.F) {
	for _, s := range []string{"", `\x`, `\x00ff`, `\\`, `\001abc`, `\x0`, `\9`, "plain"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = cellBytes(b, false)
		hexForm := append([]byte(`\x`), hex.EncodeToString(b)...)
		for _, form := range [][]byte{hexForm, escapeBytea(b)} {
			got, err := cellBytes(form, false)
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("cellBytes(%q) = %x, %v; want %x", form, got, err, b)
			}
		}
	})
}

// TestCaseMap: lower() and upper() map ASCII letters only, as PostgreSQL
// does under LC_CTYPE C (character(n) loses its trailing blanks as text);
// under another LC_CTYPE they follow the C library's locale of that name
// (pglocale), and are refused where the proxy's C library lacks it or the
// LC_CTYPE is unknown.
func TestCaseMap(t *testing.T) {
	for _, tc := range []struct {
		fn, in, want string
		typ          onion.Type
	}{
		{"upper", "naïve Café", "NAïVE CAFé", TypeText},
		{"lower", "ÀBC dEF", "Àbc def", TypeText},
		{"upper", "ab  ", "AB", onion.Type{Base: onion.Char}},
	} {
		got, err := caseMap(tc.fn, "C", Value{Type: tc.typ, Str: tc.in})
		if err != nil || got.Str != tc.want || got.Type != TypeText {
			t.Errorf("%s(%q): %q %v, want %q", tc.fn, tc.in, got.Str, err, tc.want)
		}
	}
	arg := "X"
	e := &ir.Expr{Kind: ir.ExprFunc, Func: "lower", Args: []*ir.Expr{{Kind: ir.ExprConst, Const: &arg, ConstType: "text"}}}
	for _, ctype := range []string{"C", "POSIX", "C.UTF-8", "en_US.UTF-8", "xx_NOPE.UTF-8", ""} {
		ok := pglocale.Check(ctype) == nil
		if (ctype == "C" || ctype == "POSIX") != ok && ctype != "C.UTF-8" && ctype != "en_US.UTF-8" {
			t.Errorf("pglocale.Check(%q) = %v", ctype, pglocale.Check(ctype))
		}
		ev := NewEvaluator(nil, onion.Env{CType: ctype})
		if _, err := ev.TypeOf(e); (err == nil) != ok {
			t.Errorf("lower under LC_CTYPE %q: %v", ctype, err)
		}
	}
}

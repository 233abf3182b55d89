package exec

import (
	"testing"

	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pglocale"
)

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

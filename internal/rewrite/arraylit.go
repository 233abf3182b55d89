package rewrite

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/pgnumeric"
)

// checkArrayLiterals fails as PostgreSQL does when an untyped literal in
// ARRAY[...] is not a value of the type its numeric constants give the
// array: ARRAY['5000000000', 1] is integer[], and its first element is
// out of range, whatever the array is compared with. Arrays with other
// typed elements (casts, parameters, expressions) are left to the
// comparison.
func checkArrayLiterals(ae *pg_query.A_ArrayExpr) error {
	const (
		none = iota
		int4
		int8
		numeric
	)
	typ := none
	for _, el := range ae.Elements {
		k := el.GetAConst()
		switch {
		case k == nil:
			return nil
		case k.Isnull || k.GetSval() != nil:
		case k.GetIval() != nil:
			typ = max(typ, int4)
		case k.GetFval() != nil:
			// An integer beyond int4 is int8 (numeric beyond that), as
			// make_const types it; a decimal or exponent is numeric.
			f := k.GetFval().Fval
			if _, err := strconv.ParseInt(f, 10, 64); err == nil {
				typ = max(typ, int8)
			} else {
				typ = numeric
			}
		default:
			return nil
		}
	}
	for _, el := range ae.Elements {
		k := el.GetAConst()
		if k.GetSval() == nil {
			continue
		}
		s := k.GetSval().Sval
		switch typ {
		case int4, int8:
			bits, name := 32, "integer"
			if typ == int8 {
				bits, name = 64, "bigint"
			}
			t := strings.Trim(s, " \t\n\r\v\f")
			if _, err := strconv.ParseInt(t, 10, bits); err != nil {
				if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
					return &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: fmt.Sprintf("value \"%s\" is out of range for type %s", s, name)}
				}
				return &pgconn.PgError{Severity: "ERROR", Code: "22P02", Message: fmt.Sprintf("invalid input syntax for type %s: \"%s\"", name, s)}
			}
		case numeric:
			if _, err := pgnumeric.Parse(s); err != nil {
				return err
			}
		}
	}
	return nil
}

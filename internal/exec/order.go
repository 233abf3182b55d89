package exec

import "github.com/pgonion/pgonion/internal/ir"

// CompareSortKeys orders two rows' ORDER BY keys x and y as order says
// (directions, NULLs first or last); the first comparison error is kept
// in *err.
func CompareSortKeys(x, y []Value, order []ir.AggOrder, err *error) int {
	for i, o := range order {
		u, v := x[i], y[i]
		c := NullsOrder(u.Null, v.Null, o.NullsFirst)
		if c == 0 && !u.Null && !v.Null {
			var e error
			if c, e = Compare(u, v); e != nil && *err == nil {
				*err = e
			}
			if o.Desc {
				c = -c
			}
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// NullsOrder compares two keys by nullness alone: 0 when both or neither
// are NULL.
func NullsOrder(aNull, bNull, nullsFirst bool) int {
	switch {
	case aNull == bNull:
		return 0
	case aNull == nullsFirst:
		return -1
	}
	return 1
}

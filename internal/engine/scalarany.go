package engine

import (
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgarray"
)

// x op ANY (array) and x op ALL (array) over an array value (a parameter
// or a literal; rewrite reads ARRAY[...] as OR and AND): the array's text
// form is read element by element with x's type, and the comparisons
// combine as PostgreSQL's OR (ANY) or AND (ALL) do: NULL when no element
// decides and one is NULL, false (ANY) or true (ALL) for no element.
func quantifiedFuncs() map[string]*scalarFunc {
	out := map[string]*scalarFunc{}
	for _, op := range []string{"=", "<>", "<", "<=", ">", ">="} {
		for _, all := range []bool{false, true} {
			name := op + " any"
			if all {
				name = op + " all"
			}
			out[name] = quantified(name, op, all)
		}
	}
	return out
}

func quantified(name, op string, all bool) *scalarFunc {
	return &scalarFunc{nulls: true, sig: func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) != 2 || args[0] == tUnknown || !(args[1] == tUnknown || isTextType(args[1])) {
			return nil, tBool, refuseArgs(name, args)
		}
		if _, err := kindOf(args[0]); err != nil {
			return nil, tBool, err
		}
		return []onion.Type{args[0], tText}, tBool, nil
	}, call: func(ev *evaluator, a []aval, _ onion.Type) (aval, error) {
		x, arr := a[0], a[1]
		if arr.null {
			return nullOf(tBool), nil
		}
		elems, err := pgarray.ParseText(str(arr))
		if err != nil {
			return aval{}, err
		}
		sawNull := false
		for _, el := range elems {
			if el == nil || x.null {
				sawNull = true
				continue
			}
			v, err := textValue(x.t, *el, ev.env)
			if err != nil {
				return aval{}, err
			}
			l, r := ev.sameTimestamps(x, v)
			c, err := compare(l, r)
			if err != nil {
				return aval{}, err
			}
			holds := compares(c, op) || op == "=" && c == 0 || op == "<>" && c != 0
			if holds != all {
				return boolVal(!all), nil // decided: one true (ANY), one false (ALL)
			}
		}
		if sawNull {
			return nullOf(tBool), nil
		}
		return boolVal(all), nil
	}}
}

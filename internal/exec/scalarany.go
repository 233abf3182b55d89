package exec

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
			return nil, TypeBool, refuseArgs(name, args)
		}
		if _, err := KindOf(args[0]); err != nil {
			return nil, TypeBool, err
		}
		return []onion.Type{args[0], TypeText}, TypeBool, nil
	}, call: func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
		x, arr := a[0], a[1]
		if arr.Null {
			return NullOf(TypeBool), nil
		}
		elems, err := pgarray.ParseText(str(arr))
		if err != nil {
			return Value{}, err
		}
		sawNull := false
		for _, el := range elems {
			if el == nil || x.Null {
				sawNull = true
				continue
			}
			v, err := textValue(x.Type, *el, ev.Env)
			if err != nil {
				return Value{}, err
			}
			l, r := ev.sameTimestamps(x, v)
			c, err := Compare(l, r)
			if err != nil {
				return Value{}, err
			}
			holds := Compares(c, op) || op == "=" && c == 0 || op == "<>" && c != 0
			if holds != all {
				return boolVal(!all), nil // decided: one true (ANY), one false (ALL)
			}
		}
		if sawNull {
			return NullOf(TypeBool), nil
		}
		return boolVal(all), nil
	}}
}

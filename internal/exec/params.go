package exec

import (
	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// InferParamTypes types the parameters split execution's expressions
// read that the client did not declare, as PostgreSQL infers a
// parameter's type from its use: the type the function, operator,
// comparison or IN list it is an operand of takes there; text when
// nothing says (a plain input, whose type only the server's answer
// tells, counts as text). enc are the types of the plan's encrypted
// inputs (the zero Type for a plain input).
func InferParamTypes(agg *rewrite.AggPlan, enc []onion.Type, declared map[int]ir.ParamConst, env onion.Env) map[int]onion.Type {
	out := map[int]onion.Type{}
	if agg.Source != nil {
		return out // inputs computed by the proxy first: left as text
	}
	trace := map[*ir.Expr]int{}
	bound := agg.BindParamsTraced(declared, trace)
	in := make([]onion.Type, bound.Inputs)
	for i := range in {
		in[i] = TypeText
		if i < len(enc) && enc[i] != (onion.Type{}) {
			in[i] = enc[i]
		}
	}
	return InferTypes(bound.WalkExprs, trace, in, env)
}

// InferTypes is inferParamTypes over the expressions walk visits, bound
// to constants (trace maps each constant that was a parameter to its
// number), whose inputs have types in.
func InferTypes(walk func(func(*ir.Expr)), trace map[*ir.Expr]int, in []onion.Type, env onion.Env) map[int]onion.Type {
	out := map[int]onion.Type{}
	ev := &Evaluator{Env: env, In: in, consts: map[*ir.Expr]Value{}}
	set := func(e *ir.Expr, t onion.Type) {
		if n, ok := trace[e]; ok && t != tUnknown {
			if _, done := out[n]; !done {
				out[n] = onion.Type{Base: t.Base, Elem: t.Elem} // without modifiers; an array keeps its element
			}
		}
	}
	typed := func(e *ir.Expr) (onion.Type, bool) {
		if _, ok := trace[e]; ok || IsUnknown(e) {
			return tUnknown, false
		}
		t, err := ev.TypeOf(e)
		return t, err == nil
	}
	walk(func(e *ir.Expr) {
		switch e.Kind {
		case ir.ExprFunc:
			if sig, err := ev.signature(e); err == nil {
				for i, a := range e.Args {
					if i < len(sig.params) {
						set(a, sig.params[i])
					}
				}
			}
		case ir.ExprOp:
			if len(e.Args) == 2 {
				if t, ok := typed(e.Args[1]); ok {
					set(e.Args[0], t)
				}
				if t, ok := typed(e.Args[0]); ok {
					set(e.Args[1], t)
				}
			}
		case ir.ExprIn:
			var t onion.Type
			ok := false
			for _, a := range e.Args {
				if t, ok = typed(a); ok {
					break
				}
			}
			if ok {
				for _, a := range e.Args {
					set(a, t)
				}
			}
		case ir.ExprLike:
			for _, a := range e.Args {
				set(a, TypeText)
			}
		}
	})
	return out
}

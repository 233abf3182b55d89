package rewrite

import (
	"strconv"

	"github.com/pgonion/pgonion/internal/ir"
)

// Parameters in what the proxy computes. In the extended protocol a
// split execution's expressions may read the client's parameters
// (COALESCE(c, $1), LPAD(c, $2, $3)): the server never sees those values
// (the engine sends it NULL in their place), and at each Bind the engine
// makes a copy of the plan whose parameters are constants (BindParams).

// Params returns the parameter numbers p's expressions read, each once.
func (p *AggPlan) Params() []int {
	var out []int
	seen := map[int]bool{}
	p.walkExprs(func(e *ir.Expr) {
		if e.Kind == ir.ExprParam && !seen[e.Input] {
			seen[e.Input] = true
			out = append(out, e.Input)
		}
	})
	for _, n := range p.LimitParams() {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// LimitParams returns the parameters read as bigint: p's LIMIT and
// OFFSET (and its Source's), and ROWS and GROUPS frame offsets.
func (p *AggPlan) LimitParams() []int {
	var out []int
	for x := p; x != nil; x = x.Source {
		for _, lv := range []ir.LimitValue{x.Limit, x.Offset} {
			if lv.Param > 0 {
				out = append(out, lv.Param)
			}
		}
	}
	p.walkExprs(func(e *ir.Expr) {
		if e.Kind != ir.ExprWindow || e.Window.Frame == nil || e.Window.Frame.Mode == ir.FrameRange {
			return // a RANGE offset has the ORDER BY key's type
		}
		for _, b := range []ir.FrameBound{e.Window.Frame.Start, e.Window.Frame.End} {
			if b.Offset != nil && b.Offset.Kind == ir.ExprParam {
				out = append(out, b.Offset.Input)
			}
		}
	})
	return out
}

// bindLimit makes a LIMIT or OFFSET parameter its value: none for NULL,
// as PostgreSQL reads LIMIT NULL. The value is an integer's text (the
// engine decodes the parameter as bigint).
func bindLimit(lv ir.LimitValue, vals map[int]ir.ParamConst) ir.LimitValue {
	if lv.Param == 0 {
		return lv
	}
	v, ok := vals[lv.Param]
	if !ok || v.Text == nil {
		return ir.LimitValue{}
	}
	x, err := strconv.ParseInt(*v.Text, 10, 64)
	if err != nil {
		return lv // left a parameter: the engine fails the statement
	}
	return ir.LimitValue{Const: &x}
}

// BindParams returns a copy of p whose parameters are the constants
// vals (by parameter number); p is not modified. A parameter missing
// from vals is an untyped NULL.
func (p *AggPlan) BindParams(vals map[int]ir.ParamConst) *AggPlan {
	return p.BindParamsTraced(vals, nil)
}

// BindParamsTraced is BindParams, recording in trace (when not nil) the
// constant each parameter became, with its number.
func (p *AggPlan) BindParamsTraced(vals map[int]ir.ParamConst, trace map[*ir.Expr]int) *AggPlan {
	if p == nil {
		return nil
	}
	out := *p
	// Shared nodes stay shared (GROUP BY 1 is the output's node).
	done := map[*ir.Expr]*ir.Expr{}
	bind := func(e *ir.Expr) *ir.Expr { return bindExpr(e, vals, done, trace) }
	out.Outputs = make([]ir.AggOutput, len(p.Outputs))
	for i, o := range p.Outputs {
		out.Outputs[i] = ir.AggOutput{Name: o.Name, Expr: bind(o.Expr)}
	}
	out.Where, out.Having, out.Repeat, out.JoinResidual = bind(p.Where), bind(p.Having), bind(p.Repeat), bind(p.JoinResidual)
	out.Group = make([]*ir.Expr, len(p.Group))
	for i, g := range p.Group {
		out.Group[i] = bind(g)
	}
	out.Order = make([]ir.AggOrder, len(p.Order))
	for i, o := range p.Order {
		out.Order[i] = o
		out.Order[i].Expr = bind(o.Expr)
	}
	out.Limit, out.Offset = bindLimit(p.Limit, vals), bindLimit(p.Offset, vals)
	out.Source = p.Source.BindParamsTraced(vals, trace)
	return &out
}

func bindExpr(e *ir.Expr, vals map[int]ir.ParamConst, done map[*ir.Expr]*ir.Expr, trace map[*ir.Expr]int) *ir.Expr {
	if e == nil {
		return nil
	}
	if b, ok := done[e]; ok {
		return b
	}
	var out *ir.Expr
	if e.Kind == ir.ExprParam {
		v := vals[e.Input]
		out = &ir.Expr{Kind: ir.ExprConst, Const: v.Text, ConstType: v.Type}
		if trace != nil {
			trace[out] = e.Input
		}
	} else {
		c := *e
		out = &c
		if len(e.Args) > 0 {
			out.Args = make([]*ir.Expr, len(e.Args))
			for i, a := range e.Args {
				out.Args[i] = bindExpr(a, vals, done, trace)
			}
		}
		out.Else = bindExpr(e.Else, vals, done, trace)
		if e.Window != nil {
			w := &ir.Window{}
			for _, p := range e.Window.Partition {
				w.Partition = append(w.Partition, bindExpr(p, vals, done, trace))
			}
			for _, o := range e.Window.Order {
				o.Expr = bindExpr(o.Expr, vals, done, trace)
				w.Order = append(w.Order, o)
			}
			if f := e.Window.Frame; f != nil {
				g := *f
				g.Start.Offset = bindExpr(f.Start.Offset, vals, done, trace)
				g.End.Offset = bindExpr(f.End.Offset, vals, done, trace)
				w.Frame = &g
			}
			out.Window = w
		}
	}
	done[e] = out
	return out
}

// WalkExprs calls f on every expression node of p (and of its Source).
func (p *AggPlan) WalkExprs(f func(*ir.Expr)) { p.walkExprs(f) }

// walkExprs calls f on every expression node of p (and of its Source).
func (p *AggPlan) walkExprs(f func(*ir.Expr)) {
	if p == nil {
		return
	}
	walk := func(e *ir.Expr) { ir.WalkExpr(e, f) }
	for _, o := range p.Outputs {
		walk(o.Expr)
	}
	walk(p.Where)
	walk(p.Having)
	walk(p.Repeat)
	walk(p.JoinResidual)
	for _, g := range p.Group {
		walk(g)
	}
	for _, o := range p.Order {
		walk(o.Expr)
	}
	p.Source.walkExprs(f)
}

// Params returns the parameter numbers the computed values of p read.
func (p *RMWPlan) Params() []int {
	var out []int
	seen := map[int]bool{}
	for _, set := range p.Sets {
		ir.WalkExpr(set.Expr, func(e *ir.Expr) {
			if e.Kind == ir.ExprParam && !seen[e.Input] {
				seen[e.Input] = true
				out = append(out, e.Input)
			}
		})
	}
	return out
}

// BindParams returns a copy of p whose computed values read the
// constants vals in place of the parameters (see AggPlan.BindParams);
// trace, when not nil, records them as BindParamsTraced does.
func (p *RMWPlan) BindParams(vals map[int]ir.ParamConst, trace map[*ir.Expr]int) *RMWPlan {
	out := *p
	out.Sets = make([]RMWSet, len(p.Sets))
	done := map[*ir.Expr]*ir.Expr{}
	for i, set := range p.Sets {
		out.Sets[i] = RMWSet{Column: set.Column, Expr: bindExpr(set.Expr, vals, done, trace)}
	}
	return &out
}

// WalkExprs calls f on every expression node of p's computed values.
func (p *RMWPlan) WalkExprs(f func(*ir.Expr)) {
	for _, set := range p.Sets {
		ir.WalkExpr(set.Expr, f)
	}
}

// BindExpr returns a copy of e whose parameters are the constants vals,
// recording in trace (when not nil) the constant each became; e is not
// modified.
func BindExpr(e *ir.Expr, vals map[int]ir.ParamConst, trace map[*ir.Expr]int) *ir.Expr {
	return bindExpr(e, vals, map[*ir.Expr]*ir.Expr{}, trace)
}

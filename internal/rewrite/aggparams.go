package rewrite

import "strconv"

// Parameters in what the proxy computes. In the extended protocol a
// split execution's expressions may read the client's parameters
// (COALESCE(c, $1), LPAD(c, $2, $3)): the server never sees those values
// (the engine sends it NULL in their place), and at each Bind the engine
// makes a copy of the plan whose parameters are constants (BindParams).

// ParamConst is the value of a parameter as a constant: its text (nil:
// NULL) and its type as the client declared it ("" for none: an untyped
// literal, typed by its use).
type ParamConst struct {
	Text *string
	Type string
}

// Params returns the parameter numbers p's expressions read, each once.
func (p *AggPlan) Params() []int {
	var out []int
	seen := map[int]bool{}
	p.walkExprs(func(e *Expr) {
		if e.Kind == ExprParam && !seen[e.Input] {
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
// OFFSET (and its Source's), and window frame offsets.
func (p *AggPlan) LimitParams() []int {
	var out []int
	for x := p; x != nil; x = x.Source {
		for _, lv := range []LimitValue{x.Limit, x.Offset} {
			if lv.Param > 0 {
				out = append(out, lv.Param)
			}
		}
	}
	p.walkExprs(func(e *Expr) {
		if e.Kind != ExprWindow || e.Window.Frame == nil {
			return
		}
		for _, b := range []FrameBound{e.Window.Frame.Start, e.Window.Frame.End} {
			if b.Offset != nil && b.Offset.Kind == ExprParam {
				out = append(out, b.Offset.Input)
			}
		}
	})
	return out
}

// bindLimit makes a LIMIT or OFFSET parameter its value: none for NULL,
// as PostgreSQL reads LIMIT NULL. The value is an integer's text (the
// engine decodes the parameter as bigint).
func bindLimit(lv LimitValue, vals map[int]ParamConst) LimitValue {
	if lv.Param == 0 {
		return lv
	}
	v, ok := vals[lv.Param]
	if !ok || v.Text == nil {
		return LimitValue{}
	}
	x, err := strconv.ParseInt(*v.Text, 10, 64)
	if err != nil {
		return lv // left a parameter: the engine fails the statement
	}
	return LimitValue{Const: &x}
}

// BindParams returns a copy of p whose parameters are the constants
// vals (by parameter number); p is not modified. A parameter missing
// from vals is an untyped NULL.
func (p *AggPlan) BindParams(vals map[int]ParamConst) *AggPlan {
	return p.BindParamsTraced(vals, nil)
}

// BindParamsTraced is BindParams, recording in trace (when not nil) the
// constant each parameter became, with its number.
func (p *AggPlan) BindParamsTraced(vals map[int]ParamConst, trace map[*Expr]int) *AggPlan {
	if p == nil {
		return nil
	}
	out := *p
	// Shared nodes stay shared (GROUP BY 1 is the output's node).
	done := map[*Expr]*Expr{}
	bind := func(e *Expr) *Expr { return bindExpr(e, vals, done, trace) }
	out.Outputs = make([]AggOutput, len(p.Outputs))
	for i, o := range p.Outputs {
		out.Outputs[i] = AggOutput{Name: o.Name, Expr: bind(o.Expr)}
	}
	out.Where, out.Having, out.Repeat, out.JoinResidual = bind(p.Where), bind(p.Having), bind(p.Repeat), bind(p.JoinResidual)
	out.Group = make([]*Expr, len(p.Group))
	for i, g := range p.Group {
		out.Group[i] = bind(g)
	}
	out.Order = make([]AggOrder, len(p.Order))
	for i, o := range p.Order {
		out.Order[i] = o
		out.Order[i].Expr = bind(o.Expr)
	}
	out.Limit, out.Offset = bindLimit(p.Limit, vals), bindLimit(p.Offset, vals)
	out.Source = p.Source.BindParamsTraced(vals, trace)
	return &out
}

func bindExpr(e *Expr, vals map[int]ParamConst, done map[*Expr]*Expr, trace map[*Expr]int) *Expr {
	if e == nil {
		return nil
	}
	if b, ok := done[e]; ok {
		return b
	}
	var out *Expr
	if e.Kind == ExprParam {
		v := vals[e.Input]
		out = &Expr{Kind: ExprConst, Const: v.Text, ConstType: v.Type}
		if trace != nil {
			trace[out] = e.Input
		}
	} else {
		c := *e
		out = &c
		if len(e.Args) > 0 {
			out.Args = make([]*Expr, len(e.Args))
			for i, a := range e.Args {
				out.Args[i] = bindExpr(a, vals, done, trace)
			}
		}
		out.Else = bindExpr(e.Else, vals, done, trace)
		if e.Window != nil {
			w := &Window{}
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
func (p *AggPlan) WalkExprs(f func(*Expr)) { p.walkExprs(f) }

// walkExprs calls f on every expression node of p (and of its Source).
func (p *AggPlan) walkExprs(f func(*Expr)) {
	if p == nil {
		return
	}
	walk := func(e *Expr) { WalkExpr(e, f) }
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
		WalkExpr(set.Expr, func(e *Expr) {
			if e.Kind == ExprParam && !seen[e.Input] {
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
func (p *RMWPlan) BindParams(vals map[int]ParamConst, trace map[*Expr]int) *RMWPlan {
	out := *p
	out.Sets = make([]RMWSet, len(p.Sets))
	done := map[*Expr]*Expr{}
	for i, set := range p.Sets {
		out.Sets[i] = RMWSet{Column: set.Column, Expr: bindExpr(set.Expr, vals, done, trace)}
	}
	return &out
}

// WalkExprs calls f on every expression node of p's computed values.
func (p *RMWPlan) WalkExprs(f func(*Expr)) {
	for _, set := range p.Sets {
		WalkExpr(set.Expr, f)
	}
}

// WalkExpr calls f on e and every expression below it.
func WalkExpr(e *Expr, f func(*Expr)) {
	if e == nil {
		return
	}
	f(e)
	for _, a := range e.Args {
		WalkExpr(a, f)
	}
	WalkExpr(e.Else, f)
	if e.Window != nil {
		for _, p := range e.Window.Partition {
			WalkExpr(p, f)
		}
		for _, o := range e.Window.Order {
			WalkExpr(o.Expr, f)
		}
		if fr := e.Window.Frame; fr != nil {
			WalkExpr(fr.Start.Offset, f)
			WalkExpr(fr.End.Offset, f)
		}
	}
}

// ExprParams returns the parameter numbers e reads, each once.
func ExprParams(e *Expr) []int {
	var out []int
	seen := map[int]bool{}
	WalkExpr(e, func(x *Expr) {
		if x.Kind == ExprParam && !seen[x.Input] {
			seen[x.Input] = true
			out = append(out, x.Input)
		}
	})
	return out
}

// BindExpr returns a copy of e whose parameters are the constants vals,
// recording in trace (when not nil) the constant each became; e is not
// modified.
func BindExpr(e *Expr, vals map[int]ParamConst, trace map[*Expr]int) *Expr {
	return bindExpr(e, vals, map[*Expr]*Expr{}, trace)
}

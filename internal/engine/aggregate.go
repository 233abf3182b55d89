package engine

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgnumeric"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// aggregator is the ResultRewriter of a split execution
// (rewrite.AggPlan): the server's rows are the query's inputs; it
// decrypts them (through the inner plan's decrypter, when there is one),
// groups and aggregates them as they stream, and at the end sends the
// groups that pass HAVING, sorted and limited. Memory grows with the
// number of groups (and the distinct values of DISTINCT aggregates).
type aggregator struct {
	plan *rewrite.AggPlan
	// types holds the inputs' types once a RowDescription showed them,
	// shared by the rewriters of one prepared statement: a portal
	// executed without Describe gets no RowDescription of its own.
	types   *atomic.Pointer[[]onion.Type]
	d       *decrypter // nil when every input is plain
	params  *sessionParams
	formats []int16 // the client's result formats
	inEnc   []*encrypted
	ev      *evaluator
	outT    []onion.Type
	err     error // the first evaluation error, reported at the end

	groups map[string]*group
	order  []*group // in order of first appearance
	sent   int64
}

// group is one group's representative inputs and aggregate states.
type group struct {
	row    []aval
	states []aggState
}

type aggState struct {
	count    int64
	sum      pgnumeric.Sum
	best     aval // min or max
	distinct map[string]bool
}

func newAggregator(plan *rewrite.AggPlan, d *decrypter, inEnc []*encrypted, types *atomic.Pointer[[]onion.Type], params *sessionParams, formats []int16) *aggregator {
	return &aggregator{plan: plan, d: d, inEnc: inEnc, types: types, params: params, formats: formats, groups: map[string]*group{}}
}

// RowDescription types the inputs (the server's plain columns by OID) and
// describes the outputs.
func (a *aggregator) RowDescription(rd *pgproto3.RowDescription) error {
	env, err := a.params.get()
	if err != nil {
		return err
	}
	if a.d != nil {
		if err := a.d.RowDescription(rd); err != nil {
			return err
		}
	}
	if len(rd.Fields) < a.plan.Inputs {
		return fmt.Errorf("engine: the server returned %d columns, the plan has %d inputs", len(rd.Fields), a.plan.Inputs)
	}
	var in []onion.Type
	for i := range a.plan.Inputs {
		if x := a.inEnc[i]; x != nil {
			in = append(in, x.typ)
			continue
		}
		t, ok := typeOfOID(rd.Fields[i].DataTypeOID)
		if !ok {
			return rewrite.Refusal("column %s of type OID %d cannot be computed by the proxy yet", rd.Fields[i].Name, rd.Fields[i].DataTypeOID)
		}
		in = append(in, t)
	}
	a.types.Store(&in)
	fields, err := a.start(in, env)
	if err != nil {
		return err
	}
	rd.Fields = fields
	return nil
}

// start sets up the evaluation over inputs of types in and returns the
// result's fields.
func (a *aggregator) start(in []onion.Type, env onion.Env) ([]pgproto3.FieldDescription, error) {
	ev := &evaluator{env: env, in: in, consts: map[*rewrite.Expr]aval{}, aggs: map[*rewrite.Expr]int{}}
	a.ev = ev
	for _, e := range a.exprs() {
		walkExpr(e, func(x *rewrite.Expr) {
			if x.Kind == rewrite.ExprAgg {
				if _, ok := ev.aggs[x]; !ok {
					ev.aggs[x] = len(ev.aggs)
				}
			}
		})
	}
	fields := make([]pgproto3.FieldDescription, len(a.plan.Outputs))
	a.outT = make([]onion.Type, len(a.plan.Outputs))
	for i, o := range a.plan.Outputs {
		t, err := ev.typeOf(o.Expr)
		if err != nil {
			return nil, err
		}
		if _, err := kindOf(t); err != nil {
			return nil, err
		}
		a.outT[i] = t
		name := o.Name
		if name == "" {
			name = "?column?"
		}
		fields[i] = pgproto3.FieldDescription{Name: []byte(name), DataTypeOID: t.OID(), DataTypeSize: t.Size(), TypeModifier: -1, Format: formatOf(a.formats, i)}
		if o.Expr.Kind == rewrite.ExprInput {
			fields[i].TypeModifier = t.Typmod()
		}
	}
	return fields, nil
}

// exprs are every expression the plan evaluates per group.
func (a *aggregator) exprs() []*rewrite.Expr {
	var out []*rewrite.Expr
	for _, o := range a.plan.Outputs {
		out = append(out, o.Expr)
	}
	out = append(out, a.plan.Group...)
	if a.plan.Having != nil {
		out = append(out, a.plan.Having)
	}
	for _, o := range a.plan.Order {
		out = append(out, o.Expr)
	}
	return out
}

func walkExpr(e *rewrite.Expr, f func(*rewrite.Expr)) {
	if e == nil {
		return
	}
	f(e)
	for _, x := range e.Args {
		walkExpr(x, f)
	}
	walkExpr(e.Else, f)
}

// DataRow folds one input row into its group.
func (a *aggregator) DataRow(row *pgproto3.DataRow) error {
	if a.ev == nil && a.err == nil {
		// A portal of a statement described earlier.
		in := a.types.Load()
		env, err := a.params.get()
		switch {
		case err != nil:
			a.err = err
		case in == nil:
			a.err = rewrite.Refusal("a query the proxy computes must be described before it runs (Describe the statement or the portal)")
		default:
			_, a.err = a.start(*in, env)
		}
	}
	if a.err != nil {
		return wire.ErrSkipRow
	}
	if err := a.fold(row); err != nil && err != wire.ErrSkipRow {
		// Reported instead of the statement's CommandComplete.
		a.err = err
	}
	return wire.ErrSkipRow
}

// fold adds one input row to its group.
func (a *aggregator) fold(row *pgproto3.DataRow) error {
	if a.d != nil {
		if err := a.d.DataRow(row); err != nil {
			return err // including wire.ErrSkipRow: a residual check failed
		}
	}
	in := make([]aval, a.plan.Inputs)
	for i := range in {
		var err error
		if x := a.inEnc[i]; x != nil {
			if in[i], err = fromOnion(a.ev.in[i], a.d.decoded[i], a.ev.env); err != nil {
				var pe *pgconn.PgError
				if errors.As(err, &pe) {
					return &pgconn.PgError{Severity: pe.Severity, Code: pe.Code, Message: fmt.Sprintf("column %s.%s: %s", x.table, x.cat.Name, pe.Message)}
				}
				return fmt.Errorf("column %s.%s: %w", x.table, x.cat.Name, err)
			}
		} else {
			in[i], err = a.plainInput(i, row.Values[i])
		}
		if err != nil {
			return err
		}
	}
	sc := &scope{row: in}
	var key bytes.Buffer
	for _, g := range a.plan.Group {
		v, err := a.ev.eval(g, sc)
		if err != nil {
			return err
		}
		key.WriteString(v.keyOf(a.ev.env))
		key.WriteByte(0)
	}
	g := a.groups[key.String()]
	if g == nil {
		g = &group{row: in, states: make([]aggState, len(a.ev.aggs))}
		a.groups[key.String()] = g
		a.order = append(a.order, g)
	}
	for e, k := range a.ev.aggs {
		if err := a.accumulate(&g.states[k], e, sc); err != nil {
			return err
		}
	}
	return nil
}

// plainInput reads a plain input column (text format).
func (a *aggregator) plainInput(i int, raw []byte) (aval, error) {
	t := a.ev.in[i]
	if raw == nil {
		return nullOf(t), nil
	}
	v, err := t.ParseText(raw, a.ev.env)
	if err != nil {
		return aval{}, err
	}
	return fromOnion(t, v, a.ev.env)
}

func (a *aggregator) accumulate(st *aggState, e *rewrite.Expr, sc *scope) error {
	if e.Star {
		st.count++
		return nil
	}
	v, err := a.ev.eval(e.Args[0], sc)
	if err != nil || v.null {
		return err
	}
	if e.Distinct {
		if st.distinct == nil {
			st.distinct = map[string]bool{}
		}
		k := v.keyOf(a.ev.env)
		if st.distinct[k] {
			return nil
		}
		st.distinct[k] = true
	}
	st.count++
	switch e.Func {
	case "sum", "avg":
		st.sum.Add(v.numeric())
	case "min", "max":
		if st.count == 1 {
			st.best = v
			return nil
		}
		c, err := compare(v, st.best)
		if err != nil {
			return err
		}
		if (e.Func == "min" && c < 0) || (e.Func == "max" && c > 0) {
			st.best = v
		}
	}
	return nil
}

// result is an aggregate's value from its state.
func (a *aggregator) result(e *rewrite.Expr, st *aggState) (aval, error) {
	t, err := a.ev.typeOf(e)
	if err != nil {
		return aval{}, err
	}
	switch e.Func {
	case "count":
		return aval{t: tInt8, i: st.count}, nil
	case "min", "max":
		if st.count == 0 {
			return nullOf(t), nil
		}
		return st.best, nil
	}
	if st.count == 0 {
		return nullOf(t), nil
	}
	if e.Func == "avg" {
		q, _, err := st.sum.Avg()
		return aval{t: tNumeric, d: q}, err
	}
	sum, _, err := st.sum.Result()
	if err != nil {
		return aval{}, err
	}
	if t.Base == onion.BigInt {
		c := sum.Coefficient()
		if !sum.IsFinite() || sum.Scale() != 0 || !c.IsInt64() {
			return intRange(t, 0, true)
		}
		return aval{t: t, i: c.Int64()}, nil
	}
	return aval{t: t, d: sum}, nil
}

// Release sends the result at the end (or the error that stopped it).
func (a *aggregator) Release(atEnd bool) ([]*pgproto3.DataRow, error) {
	if !atEnd {
		return nil, nil
	}
	if a.err != nil {
		return nil, a.err
	}
	if a.ev == nil {
		// No rows and no description: set up from the statement's.
		in := a.types.Load()
		if in == nil {
			return nil, rewrite.Refusal("a query the proxy computes must be described before it runs (Describe the statement or the portal)")
		}
		env, err := a.params.get()
		if err != nil {
			return nil, err
		}
		if _, err := a.start(*in, env); err != nil {
			return nil, err
		}
	}
	return a.finish()
}

// finish computes the groups' outputs, HAVING, ORDER BY and LIMIT.
func (a *aggregator) finish() ([]*pgproto3.DataRow, error) {
	if len(a.plan.Group) == 0 && len(a.order) == 0 {
		// Aggregates without GROUP BY: one row, even over no rows.
		a.order = append(a.order, &group{row: make([]aval, a.plan.Inputs), states: make([]aggState, len(a.ev.aggs))})
	}
	type outRow struct {
		vals []aval
		keys []aval
	}
	var out []outRow
	for _, g := range a.order {
		sc := &scope{row: g.row, aggs: make([]aval, len(g.states))}
		for e, k := range a.ev.aggs {
			var err error
			if sc.aggs[k], err = a.result(e, &g.states[k]); err != nil {
				return nil, err
			}
		}
		if a.plan.Having != nil {
			h, err := a.ev.eval(a.plan.Having, sc)
			if err != nil {
				return nil, err
			}
			if h.null || h.i == 0 {
				continue
			}
		}
		r := outRow{}
		for i, o := range a.plan.Outputs {
			v, err := a.ev.eval(o.Expr, sc)
			if err != nil {
				return nil, err
			}
			if k, _ := kindOf(a.outT[i]); k == kNumeric && !v.null {
				v = aval{t: a.outT[i], d: v.numeric()}
			}
			v.t = a.outT[i]
			r.vals = append(r.vals, v)
		}
		for _, o := range a.plan.Order {
			v, err := a.ev.eval(o.Expr, sc)
			if err != nil {
				return nil, err
			}
			r.keys = append(r.keys, v)
		}
		out = append(out, r)
	}
	var sortErr error
	slices.SortStableFunc(out, func(x, y outRow) int {
		for i, o := range a.plan.Order {
			u, v := x.keys[i], y.keys[i]
			c := nullsOrder(u.null, v.null, o.NullsFirst)
			if c == 0 && !u.null && !v.null {
				var err error
				if c, err = compare(u, v); err != nil && sortErr == nil {
					sortErr = err
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
	})
	if sortErr != nil {
		return nil, sortErr
	}
	off := int64(0)
	if a.plan.Offset.Const != nil {
		off = max(*a.plan.Offset.Const, 0)
	}
	var rows []*pgproto3.DataRow
	for i, r := range out {
		if int64(i) < off {
			continue
		}
		if a.plan.Limit.Const != nil && *a.plan.Limit.Const >= 0 && int64(len(rows)) >= *a.plan.Limit.Const {
			break
		}
		vals := make([][]byte, len(r.vals))
		for j, v := range r.vals {
			if v.null {
				continue
			}
			ov, err := v.toOnion(a.ev.env)
			if err != nil {
				return nil, err
			}
			if formatOf(a.formats, j) == 1 {
				vals[j] = a.outT[j].AppendBinary(make([]byte, 0, 16), ov)
			} else {
				vals[j] = a.outT[j].AppendText(make([]byte, 0, 16), ov, a.ev.env)
			}
		}
		rows = append(rows, &pgproto3.DataRow{Values: vals})
	}
	a.sent = int64(len(rows))
	return rows, nil
}

// CommandTag reports the rows sent.
func (a *aggregator) CommandTag(tag []byte) []byte {
	return strconv.AppendInt([]byte("SELECT "), a.sent, 10)
}

// typeOfOID is the type of a plain column the proxy computes over.
func typeOfOID(oid uint32) (onion.Type, bool) {
	switch oid {
	case 21:
		return onion.Type{Base: onion.SmallInt}, true
	case 23:
		return tInt4, true
	case 20:
		return tInt8, true
	case 1700:
		return tNumeric, true
	case 25, 1043:
		return tText, true
	case 1042:
		return onion.Type{Base: onion.Char}, true
	case 1082:
		return tDate, true
	case 16:
		return tBool, true
	}
	return onion.Type{}, false
}

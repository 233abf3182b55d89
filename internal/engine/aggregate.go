package engine

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pglocale"
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
//
// Rows are decrypted and folded by up to GOMAXPROCS workers, each into
// groups of its own (see folder), which are merged at the end: the rows
// are copied out of the read buffer in batches and handed over, so the
// server's rows are read while earlier ones are decrypted.
type aggregator struct {
	plan *rewrite.AggPlan
	// types holds the inputs' types once a RowDescription showed them,
	// shared by the rewriters of one prepared statement: a portal
	// executed without Describe gets no RowDescription of its own.
	types *aggTypes
	d     *decrypter // nil when every input is plain
	// src computes the plan's Source, whose result rows are the inputs
	// (then d is nil and the server's rows go to src).
	src     *aggregator
	params  *sessionParams
	formats []int16 // the client's result formats
	// clock is the server's time (now()), read before the statement
	// runs: the rows are computed on the goroutine that reads the
	// server's answer, which cannot run a statement itself.
	clock *serverClock
	// collation is the database's: text is ordered as C does, so
	// ordering text under another collation is refused.
	collation string
	inEnc     []*encrypted
	ev        *evaluator
	aggList   []aggRef   // the aggregates of ev.aggs, in index order
	winList   []*ir.Expr // the window functions of ev.wins, in index order
	outT      []onion.Type
	err       error // the first evaluation error, reported at the end

	batch   *rowBatch
	work    chan *rowBatch
	wg      sync.WaitGroup
	folders []*folder

	groups map[string]*group
	order  []*group // in order of first appearance
	rows   int64    // input rows handed to the workers
	sent   int64

	budget *heldBudget // what the groups may hold (shared with src)

	// bound holds the values of the client's parameters the plan's
	// expressions read, set at Bind (nil without any).
	bound    *paramBox
	bindDone bool
}

// paramBox carries one execution's parameter values from Bind to the
// aggregator, which reads them once the server answers.
type paramBox struct {
	declared map[int]ir.ParamConst // typed NULLs
	vals     atomic.Pointer[map[int]ir.ParamConst]
}

// bindParams makes the plan's parameters constants (rewrite.BindParams).
func (a *aggregator) bindParams() {
	if a.bound == nil || a.bindDone {
		return
	}
	a.bindDone = true
	vals := a.bound.declared
	if v := a.bound.vals.Load(); v != nil {
		vals = *v
	}
	a.plan = a.plan.BindParams(vals)
	for x := a; x.src != nil; x = x.src {
		x.src.plan = x.plan.Source
	}
}

// aggRef is one aggregate the plan computes per group and its state's
// index.
type aggRef struct {
	e *ir.Expr
	k int
}

// group is one group's representative inputs and aggregate states; in
// an ungrouped plan, one result row's inputs and its place in the
// server's order.
type group struct {
	row    []aval
	states []aggState
	seq    int64
	wins   []aval // window function values (ungrouped plans; window.go)
}

// aggState is one aggregate over one group. DISTINCT aggregates only
// collect their distinct values (by grouping key) and are computed from
// them at the end, so that the states of two workers merge.
type aggState struct {
	count int64
	sum   pgnumeric.Sum
	// fsum and fsum2 are the sum and the sum of squares of double
	// precision values (float8_accum's sumX and sumX2).
	fsum, fsum2 float64
	// isum is the sum of interval values (interval_accum).
	isum interval
	// sum2 is the sum of squares of numeric values, fsxx the sum of
	// squared deviations of double precision ones (float8_accum's
	// Youngs-Cramer Sxx), for the variances.
	sum2     pgnumeric.Sum
	fsxx     float64
	best     aval // min or max
	distinct map[string]aval
}

// aggTypes holds the input types of a split execution's plan and of its
// Source, once known.
type aggTypes struct {
	in  atomic.Pointer[[]onion.Type]
	src *aggTypes
}

func newAggTypes(p *rewrite.AggPlan) *aggTypes {
	t := &aggTypes{}
	if p.Source != nil {
		t.src = newAggTypes(p.Source)
	}
	return t
}

// newAggregator returns the rewriter of one execution of plan; collation
// is the database's (the proxy orders text only as C does). d decrypts
// the server's rows and inEnc are the encrypted columns among them (see
// aggInputs), for the innermost plan when plan has a Source.
func newAggregator(plan *rewrite.AggPlan, d *decrypter, inEnc []*encrypted, types *aggTypes, params *sessionParams, formats []int16, collation string) *aggregator {
	a := &aggregator{plan: plan, d: d, inEnc: inEnc, types: types, params: params, formats: formats, collation: collation, groups: map[string]*group{}}
	if params != nil {
		a.budget = newHeldBudget(params.maxHeld)
	}
	if plan.Source != nil {
		a.src = newAggregator(plan.Source, d, inEnc, types.src, params, nil, collation)
		a.src.budget = a.budget
		a.d, a.inEnc = nil, make([]*encrypted, plan.Inputs)
	}
	return a
}

// RowDescription types the inputs (the server's plain columns by OID) and
// describes the outputs.
func (a *aggregator) RowDescription(rd *pgproto3.RowDescription) error {
	a.bindParams()
	env, err := a.params.get()
	if err != nil {
		return err
	}
	if a.src != nil {
		if err := a.src.RowDescription(rd); err != nil {
			return err
		}
		in := a.src.outT
		a.types.in.Store(&in)
		fields, err := a.start(in, env)
		rd.Fields = fields
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
	var uncomputable *encrypted // an input of a type the proxy cannot compute
	for i := range a.plan.Inputs {
		if x := a.inEnc[i]; x != nil {
			if err := x.e.collationRefusal(x.table, x.cat); err != nil {
				return err
			}
			in = append(in, x.typ)
			if _, err := kindOf(x.typ); err != nil && uncomputable == nil {
				uncomputable = x
			}
			continue
		}
		t, ok := typeOfOID(rd.Fields[i].DataTypeOID)
		if !ok && slices.Contains(a.plan.RowIDs, i) {
			t, ok = tText, true // tableoid, ctid: only grouped on
		}
		if !ok {
			return rewrite.Refusal("column %s of type OID %d cannot be computed by the proxy yet", rd.Fields[i].Name, rd.Fields[i].DataTypeOID)
		}
		in = append(in, t)
	}
	a.types.in.Store(&in)
	fields, err := a.start(in, env)
	if err != nil {
		return a.nameRefusal(err, uncomputable)
	}
	rd.Fields = fields
	return nil
}

// nameRefusal makes a refusal name the encrypted column it is about, not
// only its type or the function: x, else one the refused call reads,
// else the first encrypted input.
func (a *aggregator) nameRefusal(err error, x *encrypted) error {
	if !isRefusal(err) {
		return err
	}
	if x == nil && a.ev != nil && a.ev.refused != nil {
		walkExpr(a.ev.refused, func(e *ir.Expr) {
			if e.Kind == ir.ExprInput && x == nil && e.Input < len(a.inEnc) {
				x = a.inEnc[e.Input]
			}
		})
	}
	for i := 0; x == nil && i < len(a.inEnc); i++ {
		x = a.inEnc[i]
	}
	if x != nil && !strings.Contains(refusalMessage(err), x.table+"."+x.cat.Name) {
		return withDetailOf(rewrite.Refusal("%s (over encrypted column %s.%s)", refusalMessage(err), x.table, x.cat.Name), err)
	}
	return err
}

// start sets up the evaluation over inputs of types in and returns the
// result's fields.
func (a *aggregator) start(in []onion.Type, env onion.Env) ([]pgproto3.FieldDescription, error) {
	ev := &evaluator{env: env, in: in, consts: map[*ir.Expr]aval{}, aggs: map[*ir.Expr]int{}, wins: map[*ir.Expr]int{}, lookups: map[*ir.Lookup]*lookupTable{}, clock: a.clock}
	a.ev = ev
	a.aggList, a.winList = nil, nil
	var lookupErr error
	for _, e := range a.exprs() {
		walkExpr(e, func(x *ir.Expr) {
			if x.Kind == ir.ExprLookup && ev.lookups[x.Lookup] == nil && lookupErr == nil {
				ev.lookups[x.Lookup], lookupErr = newLookupTable(x.Lookup, env)
			}
			if x.Kind == ir.ExprAgg {
				if _, ok := ev.aggs[x]; !ok {
					ev.aggs[x] = len(ev.aggs)
					a.aggList = append(a.aggList, aggRef{e: x, k: ev.aggs[x]})
				}
			}
			if x.Kind == ir.ExprWindow {
				if _, ok := ev.wins[x]; !ok {
					ev.wins[x] = len(ev.wins)
					a.winList = append(a.winList, x)
				}
			}
		})
	}
	if lookupErr != nil {
		return nil, lookupErr
	}
	for _, e := range a.exprs() {
		if err := ev.checkConstants(e); err != nil {
			return nil, err
		}
	}
	if err := a.checkTextOrder(); err != nil {
		return nil, err
	}
	// The conditions are typed before any row, so that a refusal names
	// its column.
	for _, e := range []*ir.Expr{a.plan.Where, a.plan.Having, a.plan.JoinResidual} {
		if e == nil {
			continue
		}
		if _, err := ev.typeOf(e); err != nil {
			return nil, err
		}
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
		if o.Expr.Kind == ir.ExprInput {
			fields[i].TypeModifier = t.Typmod()
		}
	}
	return fields, nil
}

// checkTextOrder refuses a plan that orders text (a comparison, ORDER
// BY, min or max) unless the database's collation is byte order, as the
// proxy's.
func (a *aggregator) checkTextOrder() error {
	if a.collation == "" || pglocale.ByteOrder(a.collation) {
		return nil
	}
	isText := func(e *ir.Expr) bool {
		t, err := a.ev.typeOf(e)
		k, _ := kindOf(t)
		return err == nil && (k == kText || k == kJSONB) // jsonb orders its strings by the collation
	}
	var bad error
	refuse := func(what string) {
		if bad == nil {
			bad = rewrite.Refusal("%s on text computed by the proxy is not supported: the database's collation is %q, and the proxy orders text only as the C, POSIX and C.UTF-8 collations do (create the database with LC_COLLATE 'C')", what, a.collation)
		}
	}
	for _, e := range a.exprs() {
		walkExpr(e, func(x *ir.Expr) {
			switch {
			case x.Kind == ir.ExprOp && len(x.Args) == 2 && (x.Op == "<" || x.Op == "<=" || x.Op == ">" || x.Op == ">=") && (isText(x.Args[0]) || isText(x.Args[1])):
				refuse("a range comparison")
			case x.Kind == ir.ExprAgg && (x.Func == "min" || x.Func == "max") && len(x.Args) == 1 && isText(x.Args[0]):
				refuse(x.Func)
			}
		})
	}
	for _, o := range a.plan.Order {
		if isText(o.Expr) {
			refuse("ORDER BY")
		}
	}
	return bad
}

// exprs are every expression the plan evaluates per group.
func (a *aggregator) exprs() []*ir.Expr {
	var out []*ir.Expr
	for _, o := range a.plan.Outputs {
		out = append(out, o.Expr)
	}
	out = append(out, a.plan.Group...)
	if a.plan.JoinResidual != nil {
		out = append(out, a.plan.JoinResidual)
	}
	if a.plan.Where != nil {
		out = append(out, a.plan.Where)
	}
	if a.plan.Having != nil {
		out = append(out, a.plan.Having)
	}
	if a.plan.Repeat != nil {
		out = append(out, a.plan.Repeat)
	}
	for _, o := range a.plan.Order {
		out = append(out, o.Expr)
	}
	return out
}

func walkExpr(e *ir.Expr, f func(*ir.Expr)) { ir.WalkExpr(e, f) }

// foldBatchRows is how many rows are handed to a worker at a time.
const foldBatchRows = 256

// rowBatch holds copies of server rows for a worker: the values of row r
// are arena[spans[2i]:spans[2i+1]] for i in [r*cols, (r+1)*cols), and a
// span whose end is -1 is NULL.
type rowBatch struct {
	cols  int
	first int64 // the sequence number of its first row
	n     int
	arena []byte
	spans []int
}

func (b *rowBatch) add(row *pgproto3.DataRow) {
	for _, v := range row.Values {
		if v == nil {
			b.spans = append(b.spans, 0, -1)
			continue
		}
		b.spans = append(b.spans, len(b.arena))
		b.arena = append(b.arena, v...)
		b.spans = append(b.spans, len(b.arena))
	}
	b.n++
}

// rowValues appends the values of row r (aliasing the batch) to dst.
func (b *rowBatch) rowValues(r int, dst [][]byte) [][]byte {
	for i := r * b.cols; i < (r+1)*b.cols; i++ {
		from, to := b.spans[2*i], b.spans[2*i+1]
		if to < 0 {
			dst = append(dst, nil)
			continue
		}
		dst = append(dst, b.arena[from:to:to])
	}
	return dst
}

// DataRow hands one input row to the workers.
func (a *aggregator) DataRow(row *pgproto3.DataRow) error {
	a.bindParams()
	if a.src != nil {
		return a.src.DataRow(row)
	}
	if a.ev == nil && a.err == nil {
		// A portal of a statement described earlier.
		in := a.types.in.Load()
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
	if err := a.budget.err(); err != nil {
		return err // the server's rows are read no further (wire cancels)
	}
	if a.err != nil {
		return wire.ErrSkipRow
	}
	if a.batch == nil {
		a.batch = &rowBatch{cols: len(row.Values), first: a.rows}
	}
	if len(row.Values) != a.batch.cols {
		a.err = fmt.Errorf("engine: the server returned rows of %d and %d columns", a.batch.cols, len(row.Values))
		return wire.ErrSkipRow
	}
	a.batch.add(row)
	a.rows++
	if a.batch.n == foldBatchRows {
		a.dispatch()
	}
	return wire.ErrSkipRow
}

// dispatch hands the current batch to the workers, starting them on the
// first call.
func (a *aggregator) dispatch() {
	if a.work == nil {
		n := max(1, runtime.GOMAXPROCS(0))
		a.work = make(chan *rowBatch, 2*n)
		for range n {
			f := a.newFolder()
			a.folders = append(a.folders, f)
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				for b := range a.work {
					f.foldBatch(b)
				}
			}()
		}
	}
	a.work <- a.batch
	a.batch = &rowBatch{cols: a.batch.cols, first: a.rows, arena: make([]byte, 0, len(a.batch.arena)), spans: make([]int, 0, len(a.batch.spans))}
}

// drain folds what is left and merges the workers' groups.
func (a *aggregator) drain() error {
	if a.work == nil {
		// Few rows: folded here.
		if a.batch != nil && a.batch.n > 0 {
			f := a.newFolder()
			f.foldBatch(a.batch)
			a.folders = append(a.folders, f)
		}
	} else {
		if a.batch.n > 0 {
			a.work <- a.batch
		}
		close(a.work)
		a.wg.Wait()
	}
	a.batch = nil
	for _, f := range a.folders {
		if f.err != nil {
			return f.err
		}
	}
	if a.plan.Ungrouped {
		for _, f := range a.folders {
			a.order = append(a.order, f.order...)
		}
		slices.SortFunc(a.order, func(x, y *group) int { return cmp.Compare(x.seq, y.seq) })
		a.folders = nil
		return nil
	}
	for _, f := range a.folders {
		for _, g := range f.order {
			k := f.keys[g]
			mine := a.groups[k]
			if mine == nil {
				a.groups[k] = g
				a.order = append(a.order, g)
				continue
			}
			for i := range mine.states {
				if err := mine.states[i].merge(&g.states[i], a.aggList[i].e); err != nil {
					return err
				}
			}
		}
	}
	a.folders = nil
	return nil
}

// folder is one worker of a split execution: it decrypts rows with a
// decrypter and an evaluator of its own and folds them into its groups.
type folder struct {
	a      *aggregator
	d      *decrypter
	ev     *evaluator
	groups map[string]*group
	keys   map[*group]string
	order  []*group
	err    error
	key    []byte
	// Reused for every row: row (whose Values the decrypter replaces
	// with its own), vals (the batch's values of the row) and in (the
	// row's input values, copied when a group keeps them).
	row  pgproto3.DataRow
	vals [][]byte
	in   []aval
	raw  *rawGroups // nil when not used
}

func (a *aggregator) newFolder() *folder {
	ev := *a.ev
	ev.consts = map[*ir.Expr]aval{}
	ev.patterns, ev.rowPatterns = nil, nil
	ev.sigs = maps.Clone(a.ev.sigs) // filled on first use: each worker its own
	f := &folder{a: a, ev: &ev, groups: map[string]*group{}, keys: map[*group]string{}}
	if a.d != nil {
		f.d = &decrypter{p: a.d.p, params: a.d.params, formats: a.d.formats, serverBinary: a.d.serverBinary, decodeOnly: true}
		f.d.ex.Store(a.d.ex.Load())
		f.raw = newRawGroups(a)
	}
	return f
}

func (f *folder) foldBatch(b *rowBatch) {
	if f.err != nil {
		return
	}
	for r := range b.n {
		f.vals = b.rowValues(r, f.vals[:0])
		f.row.Values = f.vals
		if err := f.fold(&f.row, b.first+int64(r)); err != nil && err != wire.ErrSkipRow {
			f.err = err
			return
		}
	}
}

// fold adds one input row, the server's seq-th, to its group.
func (f *folder) fold(row *pgproto3.DataRow, seq int64) error {
	a := f.a
	var known *group // found by the grouping inputs' bytes
	if f.raw != nil {
		if known = f.raw.lookup(row); known != nil {
			f.d.skip = f.raw.skip
		}
	}
	if f.d != nil {
		err := f.d.DataRow(row)
		f.d.skip = nil
		if err != nil {
			return err // including wire.ErrSkipRow: a residual check failed
		}
	}
	if cap(f.in) < a.plan.Inputs {
		f.in = make([]aval, a.plan.Inputs)
	}
	in := f.in[:a.plan.Inputs]
	for i := range in {
		var err error
		if x := a.inEnc[i]; x != nil {
			if in[i], err = fromOnion(f.ev.in[i], f.d.decoded[i], f.ev.env); err != nil {
				var pe *pgconn.PgError
				if errors.As(err, &pe) {
					return &pgconn.PgError{Severity: pe.Severity, Code: pe.Code, Message: fmt.Sprintf("column %s.%s: %s", x.table, x.cat.Name, pe.Message)}
				}
				return fmt.Errorf("column %s.%s: %w", x.table, x.cat.Name, err)
			}
		} else {
			in[i], err = plainInput(f.ev, i, row.Values[i])
		}
		if err != nil {
			return err
		}
	}
	g, err := f.foldInputs(in, seq, known)
	if f.raw != nil {
		if known == nil && g != nil {
			f.raw.store(g)
		}
		if !f.raw.worthIt() {
			f.raw = nil
		}
	}
	return err
}

// foldInputs adds one row of input values, the seq-th, to its group, and
// returns the group (nil when the row was dropped or the plan has no
// groups). known, when set, is the row's group, found by the bytes of its
// grouping inputs (which were then not decrypted). in is not kept: a
// group that needs the row keeps a copy.
func (f *folder) foldInputs(in []aval, seq int64, known *group) (*group, error) {
	a := f.a
	sc := &scope{row: in}
	if a.plan.JoinResidual != nil {
		ok, err := f.ev.eval(a.plan.JoinResidual, sc)
		if err != nil {
			return nil, err
		}
		if ok.null || ok.i == 0 {
			// The right side did not match: NULL-extended.
			for _, i := range a.plan.Nullable {
				in[i] = nullOf(f.ev.in[i])
			}
		}
	}
	if a.plan.Where != nil {
		ok, err := f.ev.eval(a.plan.Where, sc)
		if err != nil {
			return nil, err
		}
		if ok.null || ok.i == 0 {
			return nil, nil
		}
	}
	if a.plan.Ungrouped {
		if err := a.budget.charge(groupCost(in, 0)); err != nil {
			return nil, err
		}
		f.order = append(f.order, &group{row: slices.Clone(in), seq: seq})
		return nil, nil
	}
	g := known
	if g == nil {
		f.key = f.key[:0]
		for _, ge := range a.plan.Group {
			v, err := f.ev.eval(ge, sc)
			if err != nil {
				return nil, err
			}
			f.key = append(v.appendKey(f.key, f.ev.env), 0)
		}
		g = f.groups[string(f.key)]
		if g == nil {
			if err := a.budget.charge(len(f.key) + groupCost(in, len(a.aggList))); err != nil {
				return nil, err
			}
			g = &group{row: slices.Clone(in), states: make([]aggState, len(a.aggList))}
			k := string(f.key)
			f.groups[k] = g
			f.keys[g] = k
			f.order = append(f.order, g)
		}
	}
	for _, ag := range a.aggList {
		if err := f.accumulate(&g.states[ag.k], ag.e, sc); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// plainInput reads a plain input column (text format).
func plainInput(ev *evaluator, i int, raw []byte) (aval, error) {
	t := ev.in[i]
	if raw == nil {
		return nullOf(t), nil
	}
	v, err := t.ParseText(raw, ev.env)
	if err != nil {
		return aval{}, err
	}
	return fromOnion(t, v, ev.env)
}

func (f *folder) accumulate(st *aggState, e *ir.Expr, sc *scope) error {
	if e.Star {
		st.count++
		return nil
	}
	v, err := f.ev.eval(e.Args[0], sc)
	if err != nil || v.null {
		return err
	}
	if e.Distinct {
		if st.distinct == nil {
			st.distinct = map[string]aval{}
		}
		k := v.keyOf(f.ev.env)
		if _, ok := st.distinct[k]; !ok {
			if err := f.a.budget.charge(2*len(k) + heldRowOverhead); err != nil {
				return err
			}
			st.distinct[k] = v
		}
		return nil
	}
	return st.add(e.Func, v)
}

// add folds a non-NULL value into the state of aggregate fn.
func (st *aggState) add(fn string, v aval) error {
	st.count++
	switch fn {
	case "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop":
		if k, _ := kindOf(v.t); k == kFloat {
			return st.addDeviation(v.float())
		}
		x := v.numeric()
		st.sum.Add(x)
		if x.IsFinite() {
			sq, err := x.Mul(x)
			if err != nil {
				return err
			}
			st.sum2.Add(sq)
		} else {
			st.sum2.Add(x)
		}
	case "sum", "avg":
		switch k, _ := kindOf(v.t); k {
		case kFloat:
			return st.addFloat(fn, v.float())
		case kIntv:
			var err error
			st.isum, err = st.isum.add(intervalOf(v))
			return err
		}
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
		// Of equal values (1.0 and 1.00) the later one, as
		// numeric_larger and the other transition functions keep.
		if (fn == "min" && c <= 0) || (fn == "max" && c >= 0) {
			st.best = v
		}
	}
	return nil
}

// addFloat folds a double precision value into a sum (float8pl) or an
// average (float8_accum: its sum of squares overflows too).
func (st *aggState) addFloat(fn string, x float64) error {
	s, err := floatAdd(st.fsum, x)
	if err != nil {
		return err
	}
	st.fsum = s
	if fn == "avg" {
		if st.fsum2, err = floatAdd(st.fsum2, x*x); err != nil {
			return err
		}
	}
	return nil
}

// addDeviation folds a double precision value into a variance's state
// (st.count already counts it) as float8_accum does (Youngs-Cramer).
func (st *aggState) addDeviation(x float64) error {
	old := st.fsum
	st.fsum += x
	n := float64(st.count)
	if st.count > 1 {
		tmp := x*n - st.fsum
		st.fsxx += tmp * tmp / (n * (n - 1))
		if math.IsInf(st.fsum, 0) || math.IsInf(st.fsxx, 0) {
			if !math.IsInf(old, 0) && !math.IsInf(x, 0) {
				return errOverflow
			}
			st.fsxx = math.NaN()
		}
	} else if math.IsNaN(x) || math.IsInf(x, 0) {
		st.fsxx = math.NaN()
	}
	return nil
}

// variance is the value of a variance or standard deviation aggregate
// fn from its state.
func (st *aggState) variance(fn string, t onion.Type) (aval, error) {
	sample := fn != "stddev_pop" && fn != "var_pop"
	stddev := strings.HasPrefix(fn, "stddev")
	if t.Base == onion.Float8 {
		n := float64(st.count)
		if st.count == 0 || sample && st.count <= 1 {
			return nullOf(t), nil
		}
		v := st.fsxx / n
		if sample {
			v = st.fsxx / (n - 1)
		}
		if stddev {
			v = math.Sqrt(v)
		}
		return float8Val(v), nil
	}
	sx, ok, err := st.sum.Result()
	if err != nil || !ok {
		return nullOf(t), err
	}
	sx2, _, err := st.sum2.Result()
	if err != nil {
		return aval{}, err
	}
	nonFinite := !sx.IsFinite() || !sx2.IsFinite()
	v, ok, err := pgnumeric.Variance(sx, sx2, st.count, nonFinite, sample, stddev)
	if err != nil || !ok {
		return nullOf(t), err
	}
	return aval{t: tNumeric, d: v}, nil
}

// floatAdd is a + b with CHECKFLOATVAL's overflow check.
func floatAdd(a, b float64) (float64, error) {
	s := a + b
	if math.IsInf(s, 0) && !math.IsInf(a, 0) && !math.IsInf(b, 0) {
		return 0, errOverflow
	}
	return s, nil
}

// merge folds another worker's state of the same aggregate e into st.
func (st *aggState) merge(o *aggState, e *ir.Expr) error {
	if e.Distinct {
		if st.distinct == nil {
			st.distinct = o.distinct
			return nil
		}
		for k, v := range o.distinct {
			if _, ok := st.distinct[k]; !ok {
				st.distinct[k] = v
			}
		}
		return nil
	}
	switch {
	case o.count == 0:
		return nil
	case st.count == 0:
		*st = *o
		return nil
	}
	if e.Func == "min" || e.Func == "max" {
		c, err := compare(o.best, st.best)
		if err != nil {
			return err
		}
		if (e.Func == "min" && c < 0) || (e.Func == "max" && c > 0) {
			st.best = o.best
		}
	}
	if e.Func != "avg" && e.Func != "sum" && e.Func != "count" && e.Func != "min" && e.Func != "max" {
		// float8_combine's Sxx, before the counts are summed.
		n1, n2 := float64(st.count), float64(o.count)
		tmp := st.fsum/n1 - o.fsum/n2
		st.fsxx += o.fsxx + n1*n2*tmp*tmp/(n1+n2)
	}
	st.count += o.count
	st.sum.Merge(&o.sum)
	st.sum2.Merge(&o.sum2)
	var err error
	if st.isum, err = st.isum.add(o.isum); err != nil {
		return err
	}
	if st.fsum, err = floatAdd(st.fsum, o.fsum); err != nil {
		return err
	}
	st.fsum2, err = floatAdd(st.fsum2, o.fsum2)
	return err
}

// result is an aggregate's value from its state.
func (a *aggregator) result(e *ir.Expr, st *aggState) (aval, error) {
	t, err := a.ev.typeOf(e)
	if err != nil {
		return aval{}, err
	}
	if e.Distinct && !e.Star {
		// Computed from the distinct values now, in ascending order
		// as PostgreSQL sorts them (numeric sums are exact; double
		// precision ones depend on the order).
		vals := make([]aval, 0, len(st.distinct))
		for _, v := range st.distinct {
			vals = append(vals, v)
		}
		var sortErr error
		slices.SortFunc(vals, func(x, y aval) int {
			c, err := compare(x, y)
			if err != nil && sortErr == nil {
				sortErr = err
			}
			return c
		})
		if sortErr != nil {
			return aval{}, sortErr
		}
		d := aggState{}
		for _, v := range vals {
			if err := d.add(e.Func, v); err != nil {
				return aval{}, err
			}
		}
		st = &d
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
	switch e.Func {
	case "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop":
		return st.variance(e.Func, t)
	}
	if st.count == 0 {
		return nullOf(t), nil
	}
	switch t.Base {
	case onion.Float8:
		if e.Func == "avg" {
			return float8Val(st.fsum / float64(st.count)), nil
		}
		return float8Val(st.fsum), nil
	case onion.Interval:
		if e.Func == "avg" {
			q, err := intervalDiv(st.isum, float64(st.count))
			return q.val(), err
		}
		return st.isum.val(), nil
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
	out, err := a.results()
	if err != nil {
		return nil, a.nameRefusal(err, nil)
	}
	return a.encode(out)
}

// results computes the result rows once every input row was handed over.
func (a *aggregator) results() ([][]aval, error) {
	a.bindParams() // no row and no description came
	var srcRows [][]aval
	if a.src != nil {
		var err error
		if srcRows, err = a.src.results(); err != nil {
			return nil, err
		}
	}
	if a.err != nil {
		return nil, a.err
	}
	if err := a.drain(); err != nil {
		return nil, err
	}
	if a.ev == nil {
		// No rows and no description: set up from the statement's.
		in := a.types.in.Load()
		if in == nil && a.src != nil && a.src.ev != nil {
			in = &a.src.outT
		}
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
	if a.src != nil {
		// The derived table's rows, folded here.
		f := a.newFolder()
		for i, r := range srcRows {
			if _, err := f.foldInputs(r, int64(i), nil); err != nil {
				return nil, err
			}
		}
		a.folders = []*folder{f}
		if err := a.drain(); err != nil {
			return nil, err
		}
	}
	return a.finish()
}

// compareSortKeys orders two rows' ORDER BY keys x and y as order says
// (directions, NULLs first or last); the first comparison error is kept
// in *err.
func compareSortKeys(x, y []aval, order []ir.AggOrder, err *error) int {
	for i, o := range order {
		u, v := x[i], y[i]
		c := nullsOrder(u.null, v.null, o.NullsFirst)
		if c == 0 && !u.null && !v.null {
			var e error
			if c, e = compare(u, v); e != nil && *err == nil {
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

// finish computes the groups' outputs, HAVING, ORDER BY and LIMIT.
func (a *aggregator) finish() ([][]aval, error) {
	if len(a.plan.Group) == 0 && len(a.order) == 0 && !a.plan.Ungrouped {
		// Aggregates without GROUP BY: one row, even over no rows.
		a.order = append(a.order, &group{row: make([]aval, a.plan.Inputs), states: make([]aggState, len(a.aggList))})
	}
	type outRow struct {
		vals []aval
		keys []aval
	}
	// Aggregates and HAVING per group, then window functions over the
	// groups that remain (over the rows, ungrouped), then the outputs.
	var kept []*scope
	for _, g := range a.order {
		sc := &scope{row: g.row, aggs: make([]aval, len(g.states))}
		for _, ag := range a.aggList {
			var err error
			if sc.aggs[ag.k], err = a.result(ag.e, &g.states[ag.k]); err != nil {
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
		kept = append(kept, sc)
	}
	if len(a.winList) > 0 {
		if err := a.computeWindows(kept); err != nil {
			return nil, err
		}
	}
	var out []outRow
	for _, sc := range kept {
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
		copies := int64(1)
		if a.plan.Repeat != nil {
			n, err := a.ev.eval(a.plan.Repeat, sc)
			if err != nil {
				return nil, err
			}
			copies = n.i // an integer count, never NULL
		}
		for range copies {
			out = append(out, r)
		}
	}
	var sortErr error
	slices.SortStableFunc(out, func(x, y outRow) int {
		return compareSortKeys(x.keys, y.keys, a.plan.Order, &sortErr)
	})
	if sortErr != nil {
		return nil, sortErr
	}
	if n := a.plan.DistinctOn; n > 0 {
		// DISTINCT ON: the first row of each run equal on the first n
		// keys (NULLs equal), as the rows are sorted.
		kept := out[:0]
		var last []byte
		for i, r := range out {
			var k []byte
			for _, v := range r.keys[:n] {
				k = append(v.appendKey(k, a.ev.env), 0)
			}
			if i == 0 || !bytes.Equal(k, last) {
				kept = append(kept, r)
			}
			last = k
		}
		out = kept
	}
	if a.plan.Limit.Param > 0 || a.plan.Offset.Param > 0 {
		return nil, fmt.Errorf("engine: a LIMIT or OFFSET parameter was not bound")
	}
	off := int64(0)
	if a.plan.Offset.Const != nil {
		if off = *a.plan.Offset.Const; off < 0 {
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "2201X", Message: "OFFSET must not be negative"}
		}
	}
	if a.plan.Limit.Const != nil && *a.plan.Limit.Const < 0 {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "2201W", Message: "LIMIT must not be negative"}
	}
	var rows [][]aval
	for i, r := range out {
		if int64(i) < off {
			continue
		}
		if a.plan.Limit.Const != nil && int64(len(rows)) >= *a.plan.Limit.Const {
			break
		}
		rows = append(rows, r.vals)
	}
	return rows, nil
}

// encode writes result rows in the client's formats.
func (a *aggregator) encode(out [][]aval) ([]*pgproto3.DataRow, error) {
	rows := make([]*pgproto3.DataRow, 0, len(out))
	for _, r := range out {
		vals := make([][]byte, len(r))
		for j, v := range r {
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
	case 701:
		return tFloat8, true
	case 1083:
		return onion.Type{Base: onion.Time}, true
	case 1114:
		return onion.Type{Base: onion.Timestamp}, true
	case 1184:
		return onion.Type{Base: onion.Timestamptz}, true
	case 1186:
		return onion.Type{Base: onion.Interval}, true
	case 2950:
		return onion.Type{Base: onion.UUID}, true
	case oidTextArr:
		return tTextArray, true
	}
	return onion.Type{}, false
}

// readClock reads the server's time ahead when plan computes it (now()
// and the like; see aggregator.clock), and gives it to a and the
// aggregator of its source.
func (s *session) readClock(a *aggregator, ahead bool) {
	volatile := false
	for p := a.plan; p != nil; p = p.Source {
		for _, e := range (&aggregator{plan: p}).exprs() {
			volatile = volatile || volatileExpr(e)
		}
	}
	if !volatile {
		return
	}
	c := s.sessionClock(ahead)
	c.times() // now, not on the server's goroutine; a failure is kept for the evaluation
	for x := a; x != nil; x = x.src {
		x.clock = c
	}
}

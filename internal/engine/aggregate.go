package engine

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pglocale"
	"github.com/pgonion/pgonion/internal/procs"
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
	clock *exec.ServerClock
	// collation is the database's: text is ordered as C does, so
	// ordering text under another collation is refused.
	collation string
	inEnc     []*encrypted
	ev        *exec.Evaluator
	aggList   []aggRef   // the aggregates of ev.aggs, in index order
	winList   []*ir.Expr // the window functions of ev.wins, in index order
	outT      []onion.Type
	err       error // the first evaluation error, reported at the end

	batch   *rowBatch
	work    chan *rowBatch
	wg      sync.WaitGroup
	unclaim func() // gives the workers' cores back (procs.Claim)
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
	row    []exec.Value
	states []exec.AggState
	seq    int64
	wins   []exec.Value // window function values (ungrouped plans; window.go)
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
			if _, err := exec.KindOf(x.typ); err != nil && uncomputable == nil {
				uncomputable = x
			}
			continue
		}
		t, ok := exec.TypeOfOID(rd.Fields[i].DataTypeOID)
		if !ok && slices.Contains(a.plan.RowIDs, i) {
			t, ok = exec.TypeText, true // tableoid, ctid: only grouped on
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
	if x == nil && a.ev != nil && a.ev.Refused() != nil {
		walkExpr(a.ev.Refused(), func(e *ir.Expr) {
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
	ev := exec.NewEvaluator(in, env)
	ev.Clock = a.clock
	a.ev = ev
	aggs, wins, err := ev.Prepare(a.exprs())
	if err != nil {
		return nil, err
	}
	a.aggList, a.winList = nil, wins
	for k, x := range aggs {
		a.aggList = append(a.aggList, aggRef{e: x, k: k})
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
		if _, err := ev.TypeOf(e); err != nil {
			return nil, err
		}
	}
	fields := make([]pgproto3.FieldDescription, len(a.plan.Outputs))
	a.outT = make([]onion.Type, len(a.plan.Outputs))
	for i, o := range a.plan.Outputs {
		t, err := ev.TypeOf(o.Expr)
		if err != nil {
			return nil, err
		}
		if _, err := exec.KindOf(t); err != nil {
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
		t, err := a.ev.TypeOf(e)
		k, _ := exec.KindOf(t)
		return err == nil && (k == exec.KindText || k == exec.KindJSONB) // jsonb orders its strings by the collation
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

// firstBatchRows is how many rows like the first one the first batch
// of a result has room for (up to firstBatchBytes): growing from
// nothing took a dozen copies for 100 rows (sysbench's SUM), and room
// for a whole batch would be wasted on a result of one row.
const (
	firstBatchRows  = 32
	firstBatchBytes = 64 << 10
)

// newRowBatch returns an empty batch sized for rows like row, the
// first of the result (numbered first).
func newRowBatch(row *pgproto3.DataRow, first int64) *rowBatch {
	n := 0
	for _, v := range row.Values {
		n += len(v)
	}
	return &rowBatch{
		cols:  len(row.Values),
		first: first,
		arena: make([]byte, 0, min(firstBatchRows*n, firstBatchBytes)),
		spans: make([]int, 0, firstBatchRows*2*len(row.Values)),
	}
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
		a.batch = newRowBatch(row, a.rows)
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
		n := max(1, procs.Full())
		a.unclaim = procs.Claim()
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
		a.unclaim()
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
				if err := mine.states[i].Merge(&g.states[i], a.aggList[i].e); err != nil {
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
	ev     *exec.Evaluator
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
	in   []exec.Value
	raw  *rawGroups // nil when not used
}

func (a *aggregator) newFolder() *folder {
	f := &folder{a: a, ev: a.ev.Clone(), groups: map[string]*group{}, keys: map[*group]string{}}
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
	// A worker's panic would end the process, not the statement: the
	// session's guard only covers its own goroutine.
	defer func() {
		if v := recover(); v != nil {
			f.err = fmt.Errorf("engine: panic folding rows: %v", v)
		}
	}()
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
		f.in = make([]exec.Value, a.plan.Inputs)
	}
	in := f.in[:a.plan.Inputs]
	for i := range in {
		var err error
		if x := a.inEnc[i]; x != nil {
			if in[i], err = exec.FromOnion(f.ev.In[i], f.d.decoded[i], f.ev.Env); err != nil {
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
func (f *folder) foldInputs(in []exec.Value, seq int64, known *group) (*group, error) {
	a := f.a
	sc := &exec.Scope{Row: in}
	if a.plan.JoinResidual != nil {
		ok, err := f.ev.Eval(a.plan.JoinResidual, sc)
		if err != nil {
			return nil, err
		}
		if ok.Null || ok.Int == 0 {
			// The right side did not match: NULL-extended.
			for _, i := range a.plan.Nullable {
				in[i] = exec.NullOf(f.ev.In[i])
			}
		}
	}
	if a.plan.Where != nil {
		ok, err := f.ev.Eval(a.plan.Where, sc)
		if err != nil {
			return nil, err
		}
		if ok.Null || ok.Int == 0 {
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
			v, err := f.ev.Eval(ge, sc)
			if err != nil {
				return nil, err
			}
			f.key = append(v.AppendKey(f.key, f.ev.Env), 0)
		}
		g = f.groups[string(f.key)]
		if g == nil {
			if err := a.budget.charge(len(f.key) + groupCost(in, len(a.aggList))); err != nil {
				return nil, err
			}
			g = &group{row: slices.Clone(in), states: make([]exec.AggState, len(a.aggList))}
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
func plainInput(ev *exec.Evaluator, i int, raw []byte) (exec.Value, error) {
	t := ev.In[i]
	if raw == nil {
		return exec.NullOf(t), nil
	}
	v, err := t.ParseText(raw, ev.Env)
	if err != nil {
		return exec.Value{}, err
	}
	return exec.FromOnion(t, v, ev.Env)
}

func (f *folder) accumulate(st *exec.AggState, e *ir.Expr, sc *exec.Scope) error {
	return f.ev.Accumulate(st, e, sc, func(keyBytes int) error {
		return f.a.budget.charge(2*keyBytes + heldRowOverhead)
	})
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
func (a *aggregator) results() ([][]exec.Value, error) {
	a.bindParams() // no row and no description came
	var srcRows [][]exec.Value
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

// finish computes the groups' outputs, HAVING, ORDER BY and LIMIT.
func (a *aggregator) finish() ([][]exec.Value, error) {
	if len(a.plan.Group) == 0 && len(a.order) == 0 && !a.plan.Ungrouped {
		// Aggregates without GROUP BY: one row, even over no rows.
		a.order = append(a.order, &group{row: make([]exec.Value, a.plan.Inputs), states: make([]exec.AggState, len(a.aggList))})
	}
	type outRow struct {
		vals []exec.Value
		keys []exec.Value
	}
	// Aggregates and HAVING per group, then window functions over the
	// groups that remain (over the rows, ungrouped), then the outputs.
	var kept []*exec.Scope
	for _, g := range a.order {
		sc := &exec.Scope{Row: g.row, Aggs: make([]exec.Value, len(g.states))}
		for _, ag := range a.aggList {
			var err error
			if sc.Aggs[ag.k], err = a.ev.AggResult(ag.e, &g.states[ag.k]); err != nil {
				return nil, err
			}
		}
		if a.plan.Having != nil {
			h, err := a.ev.Eval(a.plan.Having, sc)
			if err != nil {
				return nil, err
			}
			if h.Null || h.Int == 0 {
				continue
			}
		}
		kept = append(kept, sc)
	}
	if len(a.winList) > 0 {
		if err := exec.ComputeWindows(a.ev, a.winList, kept); err != nil {
			return nil, err
		}
	}
	var out []outRow
	for _, sc := range kept {
		r := outRow{}
		for i, o := range a.plan.Outputs {
			v, err := a.ev.Eval(o.Expr, sc)
			if err != nil {
				return nil, err
			}
			if k, _ := exec.KindOf(a.outT[i]); k == exec.KindNumeric && !v.Null {
				v = exec.Value{Type: a.outT[i], Num: v.Numeric()}
			}
			v.Type = a.outT[i]
			r.vals = append(r.vals, v)
		}
		for _, o := range a.plan.Order {
			v, err := a.ev.Eval(o.Expr, sc)
			if err != nil {
				return nil, err
			}
			r.keys = append(r.keys, v)
		}
		copies := int64(1)
		if a.plan.Repeat != nil {
			n, err := a.ev.Eval(a.plan.Repeat, sc)
			if err != nil {
				return nil, err
			}
			copies = n.Int // an integer count, never NULL
		}
		for range copies {
			out = append(out, r)
		}
	}
	var sortErr error
	slices.SortStableFunc(out, func(x, y outRow) int {
		return exec.CompareSortKeys(x.keys, y.keys, a.plan.Order, &sortErr)
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
				k = append(v.AppendKey(k, a.ev.Env), 0)
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
	var rows [][]exec.Value
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
func (a *aggregator) encode(out [][]exec.Value) ([]*pgproto3.DataRow, error) {
	rows := make([]*pgproto3.DataRow, 0, len(out))
	for _, r := range out {
		vals := make([][]byte, len(r))
		for j, v := range r {
			if v.Null {
				continue
			}
			ov, err := v.ToOnion(a.ev.Env)
			if err != nil {
				return nil, err
			}
			if formatOf(a.formats, j) == 1 {
				vals[j] = a.outT[j].AppendBinary(make([]byte, 0, 16), ov)
			} else {
				vals[j] = a.outT[j].AppendText(make([]byte, 0, 16), ov, a.ev.Env)
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

// readClock reads the server's time ahead when plan computes it (now()
// and the like; see aggregator.clock), and gives it to a and the
// aggregator of its source.
func (s *session) readClock(a *aggregator, ahead bool) {
	volatile := false
	for p := a.plan; p != nil; p = p.Source {
		for _, e := range (&aggregator{plan: p}).exprs() {
			volatile = volatile || exec.VolatileExpr(e)
		}
	}
	if !volatile {
		return
	}
	c := s.sessionClock(ahead)
	c.Times() // now, not on the server's goroutine; a failure is kept for the evaluation
	for x := a; x != nil; x = x.src {
		x.clock = c
	}
}

// encTypes is the types of encrypted inputs in, the zero Type for a
// plain one.
func encTypes(in []*encrypted) []onion.Type {
	out := make([]onion.Type, len(in))
	for i, x := range in {
		if x != nil {
			out[i] = x.typ
		}
	}
	return out
}

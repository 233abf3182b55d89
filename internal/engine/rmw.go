package engine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgproto3"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgarray"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/schemes/rnd"
	"github.com/pgonion/pgonion/internal/wire"
)

// checkColumns are the columns t's proxy-enforced checks read.
func checkColumns(rc *rowChecks) []*catalog.Column {
	if rc == nil {
		return nil
	}
	var out []*catalog.Column
	for _, c := range rc.checks {
		for _, col := range c.Columns {
			if !slices.ContainsFunc(out, func(o *catalog.Column) bool { return o.ID == col.ID }) {
				out = append(out, col)
			}
		}
	}
	return out
}

// rmw is one UPDATE the proxy computes (rewrite.RMWPlan), set up: the
// types of the values it reads and writes, and its evaluator.
type rmw struct {
	p      *rewrite.RMWPlan
	t      *catalog.Table
	checks *rowChecks
	in     []onion.Type // of p.Inputs
	out    []onion.Type // of p.Sets
	xs     []*encrypted // of p.Sets
	ev     *exec.Evaluator
}

// newRMW types p's inputs and expressions, refusing what the proxy
// cannot compute.
func (s *session) newRMW(p *rewrite.RMWPlan, t *catalog.Table, checks *rowChecks, env onion.Env) (*rmw, error) {
	r := &rmw{p: p, t: t, checks: checks, in: make([]onion.Type, len(p.Inputs)), out: make([]onion.Type, len(p.Sets)), xs: make([]*encrypted, len(p.Sets))}
	var err error
	for i, c := range p.Inputs {
		if err := s.e.collationRefusal(t.Name, c); err != nil {
			return nil, err
		}
		if r.in[i], err = rewrite.ColumnType(c); err == nil {
			_, err = exec.KindOf(r.in[i])
		}
		if err != nil {
			return nil, rewrite.Refusal("UPDATE of table %s reads column %s of type %s, which the proxy cannot compute with yet", t.Name, c.Name, c.Type)
		}
	}
	for i, set := range p.Sets {
		if r.out[i], err = rewrite.ColumnType(set.Column); err != nil {
			return nil, rewrite.Refusal("UPDATE of column %s.%s of type %s by the proxy is not supported yet", t.Name, set.Column.Name, set.Column.Type)
		}
		if r.xs[i], err = s.e.encrypted(t.Name, set.Column); err != nil {
			return nil, err
		}
	}
	if err := r.plan(env); err != nil {
		return nil, err
	}
	return r, nil
}

// plan makes r's evaluator and plans its SET expressions.
func (r *rmw) plan(env onion.Env) error {
	r.ev = exec.NewEvaluator(r.in, env)
	for _, set := range r.p.Sets {
		if bad := r.ev.Plan(set.Expr); bad != nil {
			return rewrite.Refusal("SET %s = <expression> on table %s: %s", set.Column.Name, r.t.Name, errMessage(bad))
		}
	}
	return nil
}

// bound returns r for p, the same UPDATE with the client's parameters
// bound (RMWPlan.BindParams): its types and columns are r's, its
// expressions planned again.
func (r *rmw) bound(p *rewrite.RMWPlan, env onion.Env) (*rmw, error) {
	b := *r
	b.p = p
	if err := b.plan(env); err != nil {
		return nil, err
	}
	return &b, nil
}

// row computes the new values of one row read (ctid, xmin, then the
// inputs as text) and checks them.
func (r *rmw) row(row []*string, env onion.Env) ([]onion.Value, error) {
	if len(row) != 2+len(r.in) || row[0] == nil || row[1] == nil {
		return nil, fmt.Errorf("engine: the read of an UPDATE of %s returned %d columns", r.t.Name, len(row))
	}
	vals := make([]exec.Value, len(r.in))
	for i, v := range row[2:] {
		vals[i] = exec.NullOf(r.in[i])
		if v == nil {
			continue
		}
		ov, err := r.in[i].ParseText([]byte(*v), env)
		if err != nil {
			return nil, err
		}
		if vals[i], err = exec.FromOnion(r.in[i], ov, env); err != nil {
			return nil, err
		}
	}
	next := make([]onion.Value, len(r.p.Sets))
	for i, set := range r.p.Sets {
		a, err := r.ev.Eval(set.Expr, &exec.Scope{Row: vals})
		if err != nil {
			return nil, err
		}
		if next[i], err = assignValue(a, r.out[i], env); err != nil {
			return nil, err
		}
	}
	if r.checks != nil {
		value := func(c *catalog.Column) (onion.Value, bool) {
			for i, set := range r.p.Sets {
				if set.Column.ID == c.ID {
					return next[i], true
				}
			}
			for i, ic := range r.p.Inputs {
				if ic.ID == c.ID {
					v, err := vals[i].ToOnion(env)
					return v, err == nil
				}
			}
			return onion.Null(), false
		}
		if err := r.checks.verify(value, false, env); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// encrypt encrypts a row's new values, each with a fresh salt (its salt
// override).
func (r *rmw) encrypt(next []onion.Value) ([]onion.Cells, [][]byte, error) {
	cells := make([]onion.Cells, len(next))
	salts := make([][]byte, len(next))
	for i := range next {
		salts[i] = rnd.NewSalt()
		var err error
		if cells[i], err = r.xs[i].encrypt(next[i], salts[i]); err != nil {
			return nil, nil, fmt.Errorf("failed to encrypt a value of %s.%s: %w", r.t.Name, r.p.Sets[i].Column.Name, err)
		}
	}
	return cells, salts, nil
}

// planUpdateRMW runs the read of an UPDATE the proxy computes
// (rewrite.RMWPlan) ahead of it, in the client's transaction, computes
// each row's new values with split execution's evaluator, checks them
// against the table's checks, encrypts them with a fresh salt per row,
// and plans the UPDATE of the rows read. In the extended protocol the
// read runs at each Bind (planUpdateRMWParams).
func (s *session) planUpdateRMW(p *rewrite.RMWPlan, t *catalog.Table, checks *rowChecks, ext *extended) (*stmtPlan, error) {
	env, err := s.params.get()
	if err != nil {
		return nil, err
	}
	if ext != nil {
		return s.planUpdateRMWParams(p, t, checks, ext, env)
	}
	r, err := s.newRMW(p, t, checks, env)
	if err != nil {
		return nil, err
	}
	r.ev.Clock = s.sessionClock(s.aheadOK) // now() in the values: the UPDATE's transaction's
	if !s.aheadOK || s.exec == nil {
		return nil, rewrite.Refusal("UPDATE of table %s setting a column to an expression over encrypted columns is computed by the proxy, which reads the rows first: only as the first statement of a query string", t.Name)
	}
	// The read, planned like a client's SELECT (it may peel, in this
	// transaction: then this UPDATE is planned again at the new layers).
	s.mu.Lock()
	gen := s.txGen
	s.mu.Unlock()
	rp, err := s.plan(p.Read, nil)
	if err != nil {
		return nil, err
	}
	rows := &subqueryRows{}
	sql := p.Read.SQL
	if rp != nil {
		sql, rows.inner = rp.sql, rp.results
	}
	// Held, the read's row locks last until the UPDATE, in one
	// transaction, so no concurrent write can make it fail with 40001.
	// It returns the transaction's start too, for a now() later in the
	// transaction.
	tail := &clockTail{next: rows, s: s, epoch: s.epochBefore()}
	if err := s.execAhead(withTxClock(sql), tail, true); err != nil {
		return nil, err
	}
	if rows.err != nil {
		return nil, rows.err
	}
	s.mu.Lock()
	replan := s.txGen != gen
	s.mu.Unlock()
	if replan {
		return nil, errPeeledInTx
	}
	if err := s.holdWrites(t); err != nil {
		return nil, err
	}
	out := make([]rewrite.RMWRow, len(rows.rows))
	for i, row := range rows.rows {
		next, err := r.row(row, env)
		if err != nil {
			return nil, err
		}
		cells, salts, err := r.encrypt(next)
		if err != nil {
			return nil, err
		}
		rr := rewrite.RMWRow{CTID: *row[0], XMin: *row[1], Cells: make([]rewrite.Cells, len(p.Sets))}
		for k := range p.Sets {
			rr.Cells[k] = literalCells(cells[k], r.xs[k].oc)
			rr.Cells[k][rewrite.SaltSuffix] = rewrite.ByteaLiteral(salts[k])
		}
		out[i] = rr
	}
	sql, err = p.Render(out, s.aheadHeld())
	if err != nil {
		return nil, err
	}
	return &stmtPlan{sql: sql}, nil
}

// planUpdateRMWParams plans an UPDATE the proxy computes for the
// extended protocol: the server parses the UPDATE of the rows read once,
// with the rows and their new cells as array parameters
// (RMWPlan.RenderArrays); at each Bind the proxy runs the read, with the
// client's parameters, ahead of the client's statement (wire ExecQuery:
// only where nothing of the request cycle ran before, or in a
// transaction block), and binds the arrays. The client's parameters
// reach the server only where a plain column's SET uses them.
func (s *session) planUpdateRMWParams(p *rewrite.RMWPlan, t *catalog.Table, checks *rowChecks, ext *extended, env onion.Env) (*stmtPlan, error) {
	// The computed values may read the client's parameters: typed here
	// as NULLs of their declared types, bound at each Bind.
	setParams := p.Params()
	declaredOID := func(n int) uint32 {
		if n-1 < len(ext.oids) {
			return ext.oids[n-1]
		}
		return 0
	}
	declared := map[int]ir.ParamConst{}
	for _, n := range setParams {
		declared[n] = ir.ParamConst{Type: paramConstType(declaredOID(n))}
	}
	trace := map[*ir.Expr]int{}
	typed := p.BindParams(declared, trace)
	r, err := s.newRMW(typed, t, checks, env)
	if err != nil {
		return nil, err
	}
	inferred := exec.InferTypes(typed.WalkExprs, trace, r.in, env)
	if s.execQuery == nil {
		return nil, rewrite.Refusal("UPDATE of table %s setting a column to an expression over encrypted columns is computed by the proxy, which cannot read the rows first here", t.Name)
	}
	readRefs := rewrite.ParamRefs(p.Read)
	read, err := s.prepareAhead(p.Read, ext.oids, false)
	if err != nil {
		return nil, err
	}
	read.sql, read.clock = withTxClock(read.sql), true // see planUpdateRMW
	arrays, err := p.Arrays()
	if err != nil {
		return nil, err
	}
	// An UPDATE by primary key reads at most one row: its cells are
	// bound as scalars, not arrays (RenderScalars).
	single := p.SingleRow()
	hp := newHoleParams(ext.oids, append(readRefs, setParams...))
	nodes := make([]*pg_query.Node, len(arrays))
	for i, a := range arrays {
		oid, elem := arrayOIDsOf(a.Elem)
		if single {
			oid = elem
		}
		nodes[i] = hp.add(paramSlot{hole: i}, oid)
	}
	render := p.RenderArrays
	if single {
		render = p.RenderScalars
	}
	sql, err := render(nodes)
	if err != nil {
		return nil, err
	}
	// The client's parameters the server's UPDATE does not use (they fed
	// the read or the computed values) reach it as NULL.
	sts, err := rewrite.Parse(sql)
	if err != nil || len(sts) != 1 {
		return nil, fmt.Errorf("engine: re-parsing the UPDATE of %s: %v", t.Name, err)
	}
	used := map[int]bool{}
	for _, n := range rewrite.ParamRefs(sts[0]) {
		used[n] = true
	}
	holeOf := map[int]*encrypted{}
	for n := 1; n <= hp.n; n++ {
		if !used[n] {
			holeOf[n] = &encrypted{cat: &catalog.Column{Name: fmt.Sprintf("$%d", n)}, typ: exec.TypeText}
		}
	}
	for _, n := range setParams {
		if used[n] {
			return nil, rewrite.Refusal("parameter $%d is used both in a value the proxy computes and elsewhere; pass the value twice", n)
		}
		holeOf[n] = exprParam(n, hp.clients[n-1], inferred[n])
	}
	if ext.serverOIDs, err = hp.finish(sql, holeOf); err != nil {
		return nil, err
	}
	// The read's parameters are described as the read describes them,
	// those the server types as it types them.
	readDescribed := read.described
	for n, x := range holeOf {
		if _, computed := declared[n]; hp.clients[n-1] == 0 && !computed {
			x.typ = exec.TypeText
			if n-1 < len(readDescribed) {
				if t, ok := exec.TypeOfOID(readDescribed[n-1]); ok {
					x.typ = t
				}
			}
		}
	}
	ext.describe = hp.describe
	ext.bind = func(b *pgproto3.Bind) error {
		env, err := s.params.get()
		if err != nil {
			return err
		}
		bs, err := hp.startBind(b, b.PreparedStatement, &s.params)
		if err != nil {
			return err
		}
		// This execution's computed values, its parameters bound.
		r := r
		if len(setParams) > 0 {
			vals := map[int]ir.ParamConst{}
			for _, n := range setParams {
				pc := declared[n]
				if raw := b.Parameters[n-1]; raw != nil {
					x := holeOf[n]
					v, err := decodeParam(x, hp.clients[n-1], bs.formats[n-1], raw, env)
					if err != nil {
						return err
					}
					text := string(x.typ.AppendText(nil, v, env))
					pc.Text = &text
				}
				vals[n] = pc
			}
			if r, err = r.bound(p.BindParams(vals, nil), env); err != nil {
				return err
			}
		}
		// The read, with the client's parameters (its own comparison
		// values encrypted by its plan), held: its row locks last until
		// the client's Execute, in one transaction (see planUpdateRMW).
		rows, err := read.run(s, b)
		if errors.Is(err, wire.ErrExecUnavailable) {
			return rewrite.Refusal("UPDATE of table %s setting a column to an expression over encrypted columns is computed by the proxy, which reads the rows first: in the extended protocol only as the first statement after a Sync, or in a transaction block", t.Name)
		}
		if err != nil {
			return err
		}
		if err := s.holdWrites(t); err != nil {
			return err
		}
		if single && len(rows.rows) > 1 {
			// The key is no longer unique (dropped, or rows in
			// inheritance children): the statement cannot write them.
			return rewrite.Refusal("UPDATE of table %s by its primary key read %d rows; prepare the statement again", t.Name, len(rows.rows))
		}
		cols := make([][][]byte, len(arrays))
		r.ev.Clock = s.sessionClock(true) // this execution's
		for _, row := range rows.rows {
			next, err := r.row(row, env)
			if err != nil {
				return err
			}
			cells, salts, err := r.encrypt(next)
			if err != nil {
				return err
			}
			for i, a := range arrays {
				switch a.What {
				case "tid":
					cols[i] = append(cols[i], []byte(*row[0]))
				case "xmin":
					cols[i] = append(cols[i], []byte(*row[1]))
				case "cell":
					if a.Suffix == rewrite.SaltSuffix {
						cols[i] = append(cols[i], salts[a.Set])
					} else {
						cols[i] = append(cols[i], cellValue(cells[a.Set], a.Suffix))
					}
				}
			}
		}
		vals := make([][]byte, len(hp.slots))
		for i, a := range arrays {
			switch {
			case !single:
				_, elem := arrayOIDsOf(a.Elem)
				vals[i] = pgarray.AppendBinary(nil, elem, cols[i])
			case len(cols[i]) == 1:
				vals[i] = cols[i][0]
			} // else no row: NULL, and the UPDATE matches none
		}
		bs.finish(vals)
		return nil
	}
	return &stmtPlan{sql: sql}, nil
}

// arrayOIDsOf are the OIDs of an RMW array of elements of SQL type elem
// (rewrite.RMWArray) and of its elements.
func arrayOIDsOf(elem string) (array, element uint32) {
	switch elem {
	case "bytea":
		return oidByteaArr, oidBytea
	case "uuid":
		return oidUUIDArr, oidUUID
	}
	return oidTextArr, oidText
}

// assignValue converts a computed value to a column's type as an
// assignment does: through its text form when the types differ (numeric
// to numeric(p,s) rounds, too long a varchar fails with 22001).
func assignValue(a exec.Value, t onion.Type, env onion.Env) (onion.Value, error) {
	if a.Null {
		return onion.Null(), nil
	}
	if a.Type == t {
		return a.ToOnion(env)
	}
	ka, _ := exec.KindOf(a.Type)
	kt, _ := exec.KindOf(t)
	if number(ka) && number(kt) {
		// The assignment cast: double precision and numeric round into
		// an integer (half to even, half away from zero), as PostgreSQL
		// casts them, rather than being read as text.
		v, err := exec.Cast(exec.NewEvaluator(nil, env), []exec.Value{a}, t)
		if err != nil {
			return onion.Value{}, err
		}
		return v.ToOnion(env)
	}
	return t.ParseText([]byte(a.Text(env)), env)
}

// number reports whether values of kind k are numbers.
func number(k exec.Kind) bool {
	return k == exec.KindInt || k == exec.KindNumeric || k == exec.KindFloat
}

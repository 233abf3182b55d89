package rewrite

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
)

// RMWPlan is an UPDATE whose new values the proxy computes
// (read-modify-write): SET c = <expression> over encrypted columns,
//
//	UPDATE t SET a = a * 2, b = lower(b) WHERE k = 5
//
// The server cannot evaluate the expression over ciphertexts, so the
// proxy first reads the rows it changes, and locks them,
//
//	SELECT t.ctid, t.xmin::text, t.a, t.b FROM t WHERE k = 5 FOR NO KEY UPDATE OF t
//
// (planned like a client's SELECT: it decrypts), computes each row's new
// values, and sends an UPDATE of exactly those row versions with their
// new cells (Render). The engine runs the read in the UPDATE's
// transaction (an implicit one outside a block), so its locks last
// until the write. Where it cannot (the first of several statements of
// one query string) and a row changed between the two, the UPDATE fails
// with 40001 rather than lose the other write.
type RMWPlan struct {
	Table *catalog.Table
	// Read reads the rows: ctid, xmin (text), then Inputs.
	Read Statement
	// Inputs are the columns Read returns after ctid and xmin.
	Inputs []*catalog.Column
	// Sets are the assignments the proxy computes, in SET order.
	Sets []RMWSet

	version  int32
	relation *pg_query.RangeVar
	fixed    []*pg_query.Node // SET items of plain columns the server computes
	// singleRow: the WHERE fixes every column of the table's primary key
	// to a constant or parameter, so the read returns at most one row.
	singleRow bool
}

// RMWSet is one assignment the proxy computes: Expr over Inputs, for an
// encrypted Column.
type RMWSet struct {
	Column *catalog.Column
	Expr   *ir.Expr
}

// PlanUpdateRMW plans st as a read-modify-write when one of its SET items
// needs it: an encrypted column set to an expression (not a constant, a
// parameter, NULL, DEFAULT or an increment its Add onion computes). It
// returns nil for any other UPDATE. A plain column set to an expression
// over encrypted columns is refused (by PlanUpdate): the server would
// store, in plaintext, a value computed from ones it must not see. extra are more columns to read (those of the
// checks the new values must pass). st is not modified.
func PlanUpdateRMW(st Statement, t *catalog.Table, extra []*catalog.Column) (*RMWPlan, error) {
	upd := st.Tree.Stmt.GetUpdateStmt()
	if upd == nil {
		return nil, nil
	}
	qualifier := upd.Relation.Relname
	if upd.Relation.Alias != nil {
		qualifier = upd.Relation.Alias.Aliasname
	}
	rows := []string{qualifier}
	targets, err := dmlExpandMultiAssign(upd.TargetList, t, "UPDATE")
	if err != nil {
		return nil, err
	}
	// Generated columns an UPDATE must recompute: from the values it
	// sets when it sets all they read (PlanUpdate), else by reading the
	// rows.
	_, known := setGenerations(targets, t)
	computed := map[*pg_query.ResTarget]bool{}
	for _, n := range targets {
		rt := n.GetResTarget()
		c := t.Column(rt.Name)
		switch {
		case c == nil || len(rt.Indirection) > 0 || dmlInternalColumn(t, rt.Name):
			// Left to PlanUpdate, which refuses or passes them.
		case c.Policy == catalog.Plain:
			// A plain column set from encrypted ones would show the
			// server what it hides: left to PlanUpdate, which refuses.
		case c.Generation != nil:
			if rt.Val.GetSetToDefault() == nil {
				return nil, GeneratedWriteError(c.Name, true)
			}
			computed[rt] = !known // recomputed
		case readByGeneration(t, c) != nil && !known:
			computed[rt] = true // and the generated columns reading it
		default:
			if _, sign := incrementOf(rt.Val, c.Name, rows); sign != 0 {
				// The Add onion computes it, unless the column has none
				// or a check must see the new value.
				checked := slices.ContainsFunc(extra, func(x *catalog.Column) bool { return x.ID == c.ID })
				computed[rt] = !hasCapability(c, onion.KindAdd) || checked
				continue
			}
			h := Hole{Column: c}
			computed[rt] = holeValue(rt.Val, &h, t.Name, "UPDATE of") != nil
		}
	}
	need := false
	for _, v := range computed {
		need = need || v
	}
	if !need {
		return nil, nil
	}
	switch {
	case upd.WithClause != nil, len(upd.FromClause) > 0:
		return nil, Refusal("UPDATE of table %s with encrypted columns setting a column to an expression the proxy computes, with WITH or FROM, is not supported yet", t.Name)
	case len(upd.ReturningList) > 0:
		return nil, Refusal("UPDATE of table %s with encrypted columns setting a column to an expression the proxy computes, with RETURNING, is not supported yet", t.Name)
	case upd.WhereClause.GetCurrentOfExpr() != nil:
		return nil, Refusal("UPDATE ... WHERE CURRENT OF on table %s setting a column to an expression the proxy computes is not supported", t.Name)
	}
	p := &RMWPlan{Table: t, version: st.version, relation: upd.Relation, singleRow: keyedByPrimaryKey(upd.WhereClause, t, qualifier)}
	b := &aggBuilder{inputs: map[string]int{}, st: st}
	assigned := map[string]bool{}
	newValues := map[string]*pg_query.Node{} // SET values of encrypted columns
	for _, n := range targets {
		rt := n.GetResTarget()
		c := t.Column(rt.Name)
		if c != nil && c.Policy != catalog.Plain && len(rt.Indirection) == 0 {
			if assigned[c.Name] {
				return nil, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: fmt.Sprintf("multiple assignments to same column %q", c.Name)}
			}
			assigned[c.Name] = true
		}
		if c == nil || c.Policy == catalog.Plain {
			if dmlInternalColumn(t, rt.Name) {
				return nil, Refusal("UPDATE of column %s.%s is not supported: the proxy alone writes it", t.Name, rt.Name)
			}
			if err := dmlFindRef(rt.Val, t, rows).exprRefusal(t.Name, "SET "+rt.Name); err != nil {
				return nil, err
			}
			p.fixed = append(p.fixed, n) // a plain column the server computes
			continue
		}
		if len(rt.Indirection) > 0 {
			return nil, Refusal("UPDATE of a subfield or element of encrypted column %s.%s is not supported", t.Name, c.Name)
		}
		if c.Generation != nil {
			continue // recomputed below
		}
		newValues[c.Name] = rt.Val
		var e *ir.Expr
		if n.GetResTarget().Val.GetSetToDefault() != nil {
			e = &ir.Expr{Kind: ir.ExprConst, Const: c.Default}
			if c.DefaultExpr != nil {
				if e, err = DefaultExprOf(c); err != nil {
					return nil, err
				}
			}
		} else if e, err = b.expr(rt.Val); err != nil {
			return nil, Refusal("SET %s = <expression> on table %s: %s", c.Name, t.Name, message(err))
		}
		p.Sets = append(p.Sets, RMWSet{Column: c, Expr: e})
	}
	// Generated columns reading a column set (or set to DEFAULT
	// themselves): their expression over the row's new values.
	for _, g := range Generated(t) {
		inputs := generationInputs(g)
		if !assigned[g.Name] && !slices.ContainsFunc(inputs, func(name string) bool { return newValues[name] != nil }) {
			continue
		}
		n := generationNode(g)
		if n == nil {
			return nil, fmt.Errorf("rewrite: the generation expression of %s.%s does not parse", t.Name, g.Name)
		}
		var bad error
		substituteRefs(n.ProtoReflect(), func(cr *pg_query.ColumnRef) *pg_query.Node {
			name := fieldName(cr.Fields[len(cr.Fields)-1])
			v := newValues[name]
			if v.GetSetToDefault() != nil && bad == nil {
				bad = Refusal("SET %s = DEFAULT on table %s: generated column %s reads it; set the value itself", name, t.Name, g.Name)
			}
			return v
		})
		if bad != nil {
			return nil, bad
		}
		e, err := b.expr(n)
		if err != nil {
			return nil, Refusal("generated column %s.%s: %s", t.Name, g.Name, message(err))
		}
		p.Sets = append(p.Sets, RMWSet{Column: g, Expr: e})
	}
	for _, c := range extra {
		b.input(&pg_query.ColumnRef{Fields: []*pg_query.Node{pg_query.MakeStrNode(c.Name)}})
	}
	for _, n := range b.targets {
		fields := n.GetResTarget().Val.GetColumnRef().Fields
		name := fieldName(fields[len(fields)-1])
		if len(fields) > 2 || len(fields) == 2 && fieldName(fields[0]) != qualifier {
			return nil, Refusal("SET on table %s reads a column of another table", t.Name)
		}
		col := t.Column(name)
		if col == nil {
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "42703", Message: fmt.Sprintf("column %q of relation %q does not exist", name, t.Name)}
		}
		p.Inputs = append(p.Inputs, col)
	}
	// The read: ctid and xmin, the inputs, the client's WHERE, locked.
	ref := func(name string) *pg_query.Node {
		return &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: []*pg_query.Node{pg_query.MakeStrNode(qualifier), pg_query.MakeStrNode(name)}}}}
	}
	list := []*pg_query.Node{
		pg_query.MakeResTargetNodeWithVal(ref("ctid"), -1),
		pg_query.MakeResTargetNodeWithVal(typeCast(ref("xmin"), "text", false), -1),
	}
	for _, c := range p.Inputs {
		list = append(list, pg_query.MakeResTargetNodeWithVal(ref(c.Name), -1))
	}
	sel := &pg_query.SelectStmt{
		TargetList:  list,
		FromClause:  []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: proto.Clone(upd.Relation).(*pg_query.RangeVar)}}},
		WhereClause: upd.WhereClause,
		// FOR NO KEY UPDATE, the lock PostgreSQL's UPDATE takes unless
		// it changes a key column (then the UPDATE takes FOR UPDATE
		// itself): it keeps every other writer off the rows read, and
		// lets foreign-key checks (FOR KEY SHARE) through, as plaintext
		// does.
		LockingClause: []*pg_query.Node{{Node: &pg_query.Node_LockingClause{LockingClause: &pg_query.LockingClause{
			Strength: pg_query.LockClauseStrength_LCS_FORNOKEYUPDATE, WaitPolicy: pg_query.LockWaitPolicy_LockWaitBlock,
			LockedRels: []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: &pg_query.RangeVar{Relname: qualifier, Inh: true, Relpersistence: "p", Location: -1}}}}}}}},
		LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT, Op: pg_query.SetOperation_SETOP_NONE,
	}
	sql, err := deparseNode(&pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}}, st.version)
	if err != nil {
		return nil, fmt.Errorf("rewrite: deparsing the read of an UPDATE of %s: %w", t.Name, err)
	}
	sts, err := Parse(sql)
	if err != nil || len(sts) != 1 {
		return nil, fmt.Errorf("rewrite: reparsing the read of an UPDATE of %s: %v", t.Name, err)
	}
	p.Read = sts[0]
	return p, nil
}

// RMWRow is one row the proxy updates: the row version it read, and the
// SQL literals of its new values: Cells[i] the cells of Sets[i] by
// suffix, the salt override ("_salt") included.
type RMWRow struct {
	CTID, XMin string
	Cells      []Cells
}

// names are the UPDATE's qualifier of the table's columns, the table's
// name and the UPDATE's target (with its alias).
func (p *RMWPlan) names() (qualifier, rel, target string) {
	qualifier = p.relation.Relname
	if p.relation.Alias != nil {
		qualifier = p.relation.Alias.Aliasname
	}
	rel = ident(p.relation.Relname)
	if p.relation.Schemaname != "" {
		rel = ident(p.relation.Schemaname) + "." + rel
	}
	target = rel
	if p.relation.Alias != nil {
		target += " AS " + ident(qualifier)
	}
	return qualifier, rel, target
}

// Render returns the UPDATE of rows, naming every row version read.
// held says the read's row locks last until this UPDATE (it ran FOR
// UPDATE in the UPDATE's transaction), so every version read is still
// current. Unheld, the UPDATE fails with 40001 (pgonion.expect_rows),
// changing nothing, when not all of them are.
func (p *RMWPlan) Render(rows []RMWRow, held bool) (string, error) {
	qualifier, rel, target := p.names()
	if len(rows) == 0 {
		// Nothing matched: an UPDATE of no row (its command tag says 0).
		return fmt.Sprintf("UPDATE %s SET %s = %s WHERE false", target, SaltColumn, SaltColumn), nil
	}
	names := []string{"tid", "xmin"}
	var sets []string
	var types [][]*pg_query.TypeName // per set, per value: the cast of the first row's values
	for i, s := range p.Sets {
		_, pcs, err := columnLayout(s.Column)
		if err != nil {
			return "", err
		}
		var ts []*pg_query.TypeName
		for k, pc := range pcs {
			name := fmt.Sprintf("c%d_%d", i, k)
			names = append(names, name)
			sets = append(sets, fmt.Sprintf("%s = pgonion_v.%s", ident(pc.Name), name))
			tn, err := typeNameOf(pc.SQLType)
			if err != nil {
				return "", err
			}
			ts = append(ts, tn)
		}
		types = append(types, ts)
	}
	match := func(r string) string {
		return fmt.Sprintf("%s.ctid = pgonion_v.tid AND %s.xmin::text = pgonion_v.xmin", r, r)
	}
	tmpl := fmt.Sprintf("WITH pgonion_v (%s) AS (SELECT 1 AS %s) UPDATE %s SET %s FROM pgonion_v WHERE %s",
		strings.Join(names, ", "), rowsMarker, target, strings.Join(sets, ", "), match(ident(qualifier)))
	if !held {
		tmpl = fmt.Sprintf("WITH pgonion_v (%s) AS (SELECT 1 AS %s), %s "+
			"UPDATE %s SET %s FROM pgonion_v, pgonion_locked WHERE %s AND pgonion_locked.ok",
			strings.Join(names, ", "), rowsMarker, rmwGuard(rel, match("pgonion_r")), target, strings.Join(sets, ", "), match(ident(qualifier)))
	}
	var lists []*pg_query.Node
	for r, row := range rows {
		cast := func(v *pg_query.Node, tn *pg_query.TypeName) *pg_query.Node {
			if v == nil {
				v = nullConst()
			}
			if r > 0 && v.GetAConst() != nil && !v.GetAConst().Isnull {
				return v
			}
			return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{Arg: v, TypeName: tn, Location: -1}}}
		}
		vals := []*pg_query.Node{typeCast(pg_query.MakeAConstStrNode(row.CTID, -1), "tid", false), pg_query.MakeAConstStrNode(row.XMin, -1)}
		for i, s := range p.Sets {
			_, pcs, _ := columnLayout(s.Column)
			for k, pc := range pcs {
				v := row.Cells[i][pc.Suffix]
				if v != nil && v.GetTypeCast() != nil {
					vals = append(vals, v) // typed already
					continue
				}
				vals = append(vals, cast(v, types[i][k]))
			}
		}
		lists = append(lists, pg_query.MakeListNode(vals))
	}
	values := &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{ValuesLists: lists, Op: pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT}}}
	if len(p.fixed) == 0 {
		// The statement around the rows depends only on the plan's
		// shape: deparsed once, the rows' VALUES spliced in. In the
		// simple protocol each UPDATE is planned anew, and parsing and
		// deparsing the whole of it was a third of the proxy's work.
		if prefix, suffix, ok := rmwTemplate(tmpl, p.version); ok {
			v, err := deparseNode(values, p.version)
			if err != nil {
				return "", fmt.Errorf("rewrite: deparsing the rows of the UPDATE of %s: %w", p.Table.Name, err)
			}
			return prefix + v + suffix, nil
		}
	}
	sts, err := Parse(tmpl)
	if err != nil || len(sts) != 1 {
		return "", fmt.Errorf("rewrite: building the UPDATE of %s: %v", p.Table.Name, err)
	}
	upd := sts[0].Tree.Stmt.GetUpdateStmt()
	upd.WithClause.Ctes[0].GetCommonTableExpr().Ctequery = values
	upd.TargetList = append(upd.TargetList, p.fixed...)
	sql, err := deparseNode(&pg_query.Node{Node: &pg_query.Node_UpdateStmt{UpdateStmt: upd}}, p.version)
	if err != nil {
		return "", fmt.Errorf("rewrite: deparsing the UPDATE of %s: %w", p.Table.Name, err)
	}
	return sql, nil
}

// rmwGuard is the CTE pgonion_locked of an UPDATE whose read was not
// held: it locks the row versions read (pgonion_v) and fails with 40001
// unless all of them are still current. Where the read holds its locks
// the guard only repeats them; it was a third of the server's time per
// UPDATE under pgbench's tpcb-like load.
func rmwGuard(rel, match string) string {
	return fmt.Sprintf("pgonion_locked AS MATERIALIZED (SELECT %s.expect_rows((SELECT count(*) FROM (SELECT 1 FROM %s pgonion_r JOIN pgonion_v ON %s FOR NO KEY UPDATE OF pgonion_r) pgonion_n), (SELECT count(*) FROM pgonion_v)) AS ok)",
		ProxySchema, rel, match)
}

// rowsMarker names the placeholder of Render's template where the rows'
// VALUES go.
const rowsMarker = "pgonion_rows_here"

// rmwTemplates are Render's templates, deparsed, split at their rows:
// template text -> [2]string (the text before and after the rows).
var rmwTemplates sync.Map

// rmwTemplate returns the deparsed text of tmpl (a Render template)
// before and after the placeholder of its rows, deparsing it the first
// time; ok is false when the placeholder is not found exactly once.
func rmwTemplate(tmpl string, version int32) (prefix, suffix string, ok bool) {
	if v, hit := rmwTemplates.Load(tmpl); hit {
		parts := v.([2]string)
		return parts[0], parts[1], true
	}
	sts, err := Parse(tmpl)
	if err != nil || len(sts) != 1 {
		return "", "", false
	}
	sql, err := deparseNode(sts[0].Tree.Stmt, version)
	if err != nil {
		return "", "", false
	}
	const placeholder = "SELECT 1 AS " + rowsMarker
	if strings.Count(sql, placeholder) != 1 {
		return "", "", false
	}
	before, after, _ := strings.Cut(sql, placeholder)
	if n := countTemplates.Add(1); n <= maxTemplates {
		rmwTemplates.Store(tmpl, [2]string{before, after})
	}
	return before, after, true
}

// maxTemplates bounds rmwTemplates (one per table and SET list).
const maxTemplates = 4096

var countTemplates atomic.Int64

// RMWArray is one array parameter of RenderArrays: the text[] of the
// rows' ctids ("tid") or xmins ("xmin"), or the cells of Sets[Set] with
// Suffix, an array of Elem: bytea, uuid, or text (search tokens, as
// array literals).
type RMWArray struct {
	What   string // "tid", "xmin" or "cell"
	Set    int
	Suffix string
	Elem   string // the SQL type of the array's elements
}

// Arrays lists the array parameters of RenderArrays, in order.
func (p *RMWPlan) Arrays() ([]RMWArray, error) {
	out := []RMWArray{{What: "tid", Elem: "text"}, {What: "xmin", Elem: "text"}}
	for i, s := range p.Sets {
		_, pcs, err := columnLayout(s.Column)
		if err != nil {
			return nil, err
		}
		for _, pc := range pcs {
			t := pc.SQLType
			if pc.Suffix == "_srch" {
				t = "text"
			}
			out = append(out, RMWArray{What: "cell", Set: i, Suffix: pc.Suffix, Elem: t})
		}
	}
	return out, nil
}

// RenderArrays is Render for the extended protocol: the same UPDATE of
// the row versions read, whose rows and new cells are array parameters
// (params[i] for Arrays()[i]), so that the statement is parsed once and
// the rows bound at each execution. The read is always held there (the
// engine refuses where it cannot be), so it has no guard.
func (p *RMWPlan) RenderArrays(params []*pg_query.Node) (string, error) {
	arrays, err := p.Arrays()
	if err != nil {
		return "", err
	}
	if len(params) != len(arrays) {
		return "", fmt.Errorf("rewrite: the UPDATE of %s takes %d arrays, not %d", p.Table.Name, len(arrays), len(params))
	}
	qualifier, _, target := p.names()
	var names, selects, sets, aliases []string
	for i, a := range arrays {
		alias := fmt.Sprintf("a%d", i)
		aliases = append(aliases, alias)
		switch a.What {
		case "tid":
			names = append(names, "tid")
			selects = append(selects, "pgonion_a."+alias+"[pgonion_i.i]::tid")
		case "xmin":
			names = append(names, "xmin")
			selects = append(selects, "pgonion_a."+alias+"[pgonion_i.i]")
		default:
			name := fmt.Sprintf("c%d", i)
			names = append(names, name)
			sel := "pgonion_a." + alias + "[pgonion_i.i]"
			_, pcs, _ := columnLayout(p.Sets[a.Set].Column)
			for _, pc := range pcs {
				if pc.Suffix == a.Suffix {
					if a.Suffix == "_srch" {
						sel += "::" + pc.SQLType
					}
					sets = append(sets, fmt.Sprintf("%s = pgonion_v.%s", ident(pc.Name), name))
				}
			}
			selects = append(selects, sel)
		}
	}
	match := func(r string) string {
		return fmt.Sprintf("%s.ctid = pgonion_v.tid AND %s.xmin::text = pgonion_v.xmin", r, r)
	}
	// The arrays are subscripted by row number rather than unnested:
	// see migrations/0023_row_numbers.sql and 0024.
	nulls := make([]string, len(aliases))
	for i, a := range aliases {
		nulls[i] = "NULL AS " + a
	}
	tmpl := fmt.Sprintf("WITH pgonion_v (%s) AS (SELECT %s FROM (SELECT %s) AS pgonion_a, %s.row_numbers(cardinality(pgonion_a.a0)) AS pgonion_i (i)) "+
		"UPDATE %s SET %s FROM pgonion_v WHERE %s",
		strings.Join(names, ", "), strings.Join(selects, ", "), strings.Join(nulls, ", "), ProxySchema,
		target, strings.Join(sets, ", "), match(ident(qualifier)))
	sts, err := Parse(tmpl)
	if err != nil || len(sts) != 1 {
		return "", fmt.Errorf("rewrite: building the UPDATE of %s: %v", p.Table.Name, err)
	}
	upd := sts[0].Tree.Stmt.GetUpdateStmt()
	cte := upd.WithClause.Ctes[0].GetCommonTableExpr().Ctequery.GetSelectStmt()
	targets := cte.FromClause[0].GetRangeSubselect().Subquery.GetSelectStmt().TargetList
	for i, n := range params {
		targets[i].GetResTarget().Val = typeCast(n, arrays[i].Elem, true)
	}
	upd.TargetList = append(upd.TargetList, p.fixed...)
	sql, err := deparseNode(&pg_query.Node{Node: &pg_query.Node_UpdateStmt{UpdateStmt: upd}}, p.version)
	if err != nil {
		return "", fmt.Errorf("rewrite: deparsing the UPDATE of %s: %w", p.Table.Name, err)
	}
	return sql, nil
}

// SingleRow reports whether the read returns at most one row: the WHERE
// fixes every column of the table's primary key (as the engine read it)
// to a constant or a parameter.
func (p *RMWPlan) SingleRow() bool { return p.singleRow }

// RenderScalars is RenderArrays for a SingleRow plan: the row's ctid,
// xmin and new cells are scalar parameters (params[i] for Arrays()[i],
// of its element type), NULL when the read found no row. PostgreSQL
// runs it about 20 µs faster than the UPDATE joined to the arrays.
func (p *RMWPlan) RenderScalars(params []*pg_query.Node) (string, error) {
	arrays, err := p.Arrays()
	if err != nil {
		return "", err
	}
	if len(params) != len(arrays) {
		return "", fmt.Errorf("rewrite: the UPDATE of %s takes %d parameters, not %d", p.Table.Name, len(arrays), len(params))
	}
	qualifier, _, target := p.names()
	var sets []string
	var tid, xmin string
	for i, a := range arrays {
		param := fmt.Sprintf("$%d", params[i].GetParamRef().GetNumber())
		switch a.What {
		case "tid":
			tid = param + "::text::tid"
		case "xmin":
			xmin = param + "::text"
		default:
			_, pcs, _ := columnLayout(p.Sets[a.Set].Column)
			for _, pc := range pcs {
				if pc.Suffix == a.Suffix {
					typ := a.Elem
					if a.Suffix == "_srch" {
						typ = pc.SQLType // its tokens as an array literal
					}
					sets = append(sets, fmt.Sprintf("%s = %s::%s", ident(pc.Name), param, typ))
				}
			}
		}
	}
	q := ident(qualifier)
	sts, err := Parse(fmt.Sprintf("UPDATE %s SET %s WHERE %s.ctid = %s AND %s.xmin::text = %s",
		target, strings.Join(sets, ", "), q, tid, q, xmin))
	if err != nil || len(sts) != 1 {
		return "", fmt.Errorf("rewrite: building the UPDATE of %s: %v", p.Table.Name, err)
	}
	upd := sts[0].Tree.Stmt.GetUpdateStmt()
	upd.TargetList = append(upd.TargetList, p.fixed...)
	sql, err := deparseNode(&pg_query.Node{Node: &pg_query.Node_UpdateStmt{UpdateStmt: upd}}, p.version)
	if err != nil {
		return "", fmt.Errorf("rewrite: deparsing the UPDATE of %s: %w", p.Table.Name, err)
	}
	return sql, nil
}

// keyedByPrimaryKey reports whether where's top-level conjuncts set
// every column of t's primary key (t.PrimaryKey, logical names) equal
// to a constant or a parameter. An unknown or absent key is false.
func keyedByPrimaryKey(where *pg_query.Node, t *catalog.Table, qualifier string) bool {
	if len(t.PrimaryKey) == 0 {
		return false
	}
	column := func(n *pg_query.Node) string {
		cr := n.GetColumnRef()
		if cr == nil {
			return ""
		}
		switch len(cr.Fields) {
		case 1:
			return fieldName(cr.Fields[0])
		case 2:
			if fieldName(cr.Fields[0]) == qualifier {
				return fieldName(cr.Fields[1])
			}
		}
		return ""
	}
	fixed := func(n *pg_query.Node) bool {
		for n.GetTypeCast() != nil {
			n = n.GetTypeCast().Arg
		}
		return n.GetParamRef() != nil || n.GetAConst() != nil
	}
	keyed := map[string]bool{}
	for _, c := range conjuncts(where) {
		a := c.GetAExpr()
		if a == nil || a.Kind != pg_query.A_Expr_Kind_AEXPR_OP || strings.Join(stringList(a.Name), ".") != "=" {
			continue
		}
		if name := column(a.Lexpr); name != "" && fixed(a.Rexpr) {
			keyed[name] = true
		}
		if name := column(a.Rexpr); name != "" && fixed(a.Lexpr) {
			keyed[name] = true
		}
	}
	for _, k := range t.PrimaryKey {
		if !keyed[k] {
			return false
		}
	}
	return true
}

// ident quotes an identifier.
func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// typeNameOf parses a type's SQL name ("numeric(12,2)", "bigint[]").
func typeNameOf(typ string) (*pg_query.TypeName, error) {
	if v, ok := typeNameMemo.Load(typ); ok {
		return proto.Clone(v.(*pg_query.TypeName)).(*pg_query.TypeName), nil
	}
	sts, err := Parse("SELECT NULL::" + typ)
	if err != nil || len(sts) != 1 {
		return nil, fmt.Errorf("rewrite: type %q: %v", typ, err)
	}
	tc := sts[0].Tree.Stmt.GetSelectStmt().GetTargetList()[0].GetResTarget().GetVal().GetTypeCast()
	if tc == nil {
		return nil, fmt.Errorf("rewrite: type %q", typ)
	}
	if n := countTypeNames.Add(1); n <= maxTemplates {
		typeNameMemo.Store(typ, proto.Clone(tc.TypeName))
	}
	return tc.TypeName, nil
}

// typeNameMemo memoizes typeNameOf: type name -> *pg_query.TypeName (never
// handed out, only copies).
var typeNameMemo sync.Map

var countTypeNames atomic.Int64

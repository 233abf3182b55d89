package rewrite

import (
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
)

// UpdatePlan is the rewritten form of an UPDATE of a table with encrypted
// columns.
type UpdatePlan struct {
	Table *catalog.Table
	// Holes lists the values of the encrypted columns the statement sets,
	// in SET order, all with Row 0: the proxy encrypts each with the one
	// salt it passes to Render.
	Holes []Hole
	// Returning maps the rows of RETURNING to the client's columns; nil
	// without RETURNING.
	Returning *Projection
	// Where are the comparison values of WHERE to encrypt (FillHoles
	// before Render), and Needs the onion layers WHERE needs.
	Where []CmpHole
	Needs []Need
	// Guard, when set before Render, is the argument of
	// pgonion.apply_change that the statement runs once, before it
	// changes any row (it records first increments in the catalog, in
	// the statement's own transaction).
	Guard *pg_query.Node

	version int32                // of the parse tree format
	base    *pg_query.UpdateStmt // the server statement, but its SET list
	set     []dmlSetItem
}

// PlanUpdate rewrites UPDATE t SET ... [FROM ...] [WHERE ...] [RETURNING
// ...] for a table with encrypted columns. st is not modified.
//
// An encrypted column may be set to a constant, a parameter, NULL or
// DEFAULT (which is NULL: encrypted columns have no server default); it
// becomes a Hole, and SET c__eq = <cell>, c__ord = <cell>, ... for every
// physical column of its layout plus c__salt = <salt> (see Render): the
// row salt cannot be reused, since only the server holds it, nor
// replaced, since the row's other columns depend on it. SET (a, b) =
// (1, 2) and SET (a, b) = ROW(1, 2) are planned as SET a = 1, b = 2, which
// is what PostgreSQL does with them; SET (a, b) = (SELECT ...) is refused
// when it sets an encrypted column.
//
// Plain columns may be set to any expression that does not touch an
// encrypted column; WHERE (including WHERE CURRENT OF), FROM and WITH may
// not touch encrypted columns either, nor may WITH modify data. Column
// references count by name (a column of a FROM table named like an
// encrypted column of t is refused too); other tables in FROM are not
// looked up: the caller must refuse (or plan) FROM tables with encrypted
// columns of their own. RETURNING projects encrypted columns like SELECT
// (see projectTargetList); RETURNING * is refused with FROM, where it would
// expand to the other tables' columns too.
//
// Refused with 0A000: anything else that touches an encrypted column,
// setting a physical column the proxy owns (pgonion_salt, c__eq, ...), a
// subfield or element of an encrypted column, and a client parameter that
// is both the value of an encrypted column and used elsewhere. Two SETs of
// one encrypted column fail like on PostgreSQL (42601).
func PlanUpdate(st Statement, t *catalog.Table) (*UpdatePlan, error) {
	upd := st.Tree.Stmt.GetUpdateStmt()
	if upd == nil {
		return nil, fmt.Errorf("rewrite: not an UPDATE statement")
	}
	qualifier := upd.Relation.Relname
	if upd.Relation.Alias != nil {
		qualifier = upd.Relation.Alias.Aliasname
	}
	if err := dmlCheckWith(upd.WithClause, t, "UPDATE"); err != nil {
		return nil, err
	}
	selfAliases, err := dmlOtherTables(upd.FromClause, t, "FROM")
	if err != nil {
		return nil, err
	}
	rows := append([]string{qualifier}, selfAliases...)
	p := &UpdatePlan{Table: t, version: st.version}
	if len(upd.FromClause) == 0 && upd.WhereClause.GetCurrentOfExpr() == nil {
		if p.Where, p.Needs, err = planDMLWhere(upd.WhereClause, t, qualifier); err != nil {
			return nil, err
		}
	} else if err := dmlFindRef(upd.WhereClause, t, rows).clauseRefusal(t.Name, "WHERE"); err != nil {
		return nil, err
	}
	targets := upd.TargetList
	if expanded, err := dmlExpandMultiAssign(targets, t, "UPDATE"); err == nil {
		// The generated columns the values set recompute (PlanUpdateRMW
		// left this UPDATE here because it sets all they read).
		gens, _ := setGenerations(expanded, t)
		for _, g := range gens {
			if !slices.ContainsFunc(expanded, func(n *pg_query.Node) bool { return n.GetResTarget().GetName() == g.Name }) {
				def := &pg_query.Node{Node: &pg_query.Node_SetToDefault{SetToDefault: &pg_query.SetToDefault{Location: -1}}}
				targets = append(slices.Clip(targets), pg_query.MakeResTargetNodeWithNameAndVal(g.Name, def, -1))
			}
		}
	}
	p.set, p.Holes, err = dmlPlanSet(targets, t, dmlSetContext{statement: "UPDATE", rows: rows})
	if err != nil {
		return nil, err
	}
	returning, proj, err := dmlReturning(upd.ReturningList, t, qualifier, len(upd.FromClause) > 0)
	if err != nil {
		return nil, err
	}
	p.Returning = proj
	p.base = &pg_query.UpdateStmt{
		Relation:      upd.Relation,
		WhereClause:   upd.WhereClause,
		FromClause:    upd.FromClause,
		ReturningList: returning,
		WithClause:    upd.WithClause,
	}
	rest := []protoreflect.Message{p.base.ProtoReflect()}
	for _, it := range p.set {
		for _, n := range it.fixed {
			rest = append(rest, n.ProtoReflect())
		}
	}
	if err := dmlCheckParams(p.Holes, t.Name, rest...); err != nil {
		return nil, err
	}
	return p, nil
}

// Render returns the server SQL. cells gives the onion expressions of each
// hole, in Holes order (a missing suffix is NULL; a NULL value has no
// cells); salt is the expression of the one fresh salt (onion.SaltSize
// random bytes) with which the proxy encrypted every hole's cells. It is
// written to the salt override column (c__salt) of each encrypted column
// the statement sets. salt may be nil only when there are no Holes.
//
// For the simple protocol the cells and the salt are literals
// (ByteaLiteral, Int8ArrayLiteral). For the extended protocol they are
// parameters (ParamNode) numbered after the client's own, which keep their
// numbers in the plain columns' expressions; a client parameter that only
// fed an encrypted column is then unreferenced, so its type must be
// declared in the Parse message and its Bind value replaced by NULL.
//
// Render does not modify the plan: it may be called again, and
// concurrently.
func (p *UpdatePlan) Render(cells []Cells, salt *pg_query.Node) (string, error) {
	if len(cells) != len(p.Holes) {
		return "", fmt.Errorf("rewrite: UPDATE of %s: Render got %d cells for %d holes", p.Table.Name, len(cells), len(p.Holes))
	}
	if salt == nil && len(p.Holes) > 0 {
		return "", fmt.Errorf("rewrite: UPDATE of %s: Render needs a salt for its %d holes", p.Table.Name, len(p.Holes))
	}
	where := p.base.WhereClause
	if p.Guard != nil {
		conds := []*pg_query.Node{oneTimeCall("apply_change", p.Guard)}
		if where != nil {
			conds = append(conds, where)
		}
		where = andNodes(conds)
	}
	u := &pg_query.UpdateStmt{
		Relation:      p.base.Relation,
		TargetList:    dmlRenderSet(p.set, cells, salt),
		WhereClause:   where,
		FromClause:    p.base.FromClause,
		ReturningList: p.base.ReturningList,
		WithClause:    p.base.WithClause,
	}
	sql, err := deparseNode(&pg_query.Node{Node: &pg_query.Node_UpdateStmt{UpdateStmt: u}}, p.version)
	if err != nil {
		return "", fmt.Errorf("rewrite: deparsing UPDATE of %s: %w", p.Table.Name, err)
	}
	return sql, nil
}

// oneTimeCall returns (SELECT pgonion.fn(arg)): an uncorrelated scalar
// subquery, which PostgreSQL evaluates once per statement (an InitPlan)
// whatever the volatility of fn.
func oneTimeCall(fn string, arg *pg_query.Node) *pg_query.Node {
	call := pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode(ProxySchema), pg_query.MakeStrNode(fn)}, []*pg_query.Node{arg}, -1)
	sel := &pg_query.SelectStmt{TargetList: []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(call, -1)}}
	return &pg_query.Node{Node: &pg_query.Node_SubLink{SubLink: &pg_query.SubLink{
		SubLinkType: pg_query.SubLinkType_EXPR_SUBLINK,
		Subselect:   &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}},
		Location:    -1,
	}}}
}

// deparseNode returns the SQL text of one statement node.
func deparseNode(n *pg_query.Node, version int32) (string, error) {
	return Statement{Tree: &pg_query.RawStmt{Stmt: n}, version: version}.Deparse()
}

// dmlSetItem is one item of a planned SET list (UPDATE, or ON CONFLICT DO
// UPDATE).
type dmlSetItem struct {
	// fixed are the server's SET items as they are: a plain column's, or
	// the copies of EXCLUDED's physical columns for enc = EXCLUDED.enc.
	fixed []*pg_query.Node
	// hole is the index in the plan's Holes of the value of an encrypted
	// column, -1 for fixed items.
	hole int
	// column and layout are the encrypted column of the hole and its
	// physical columns but the salt override.
	column *catalog.Column
	layout []onion.PhysicalColumn
	// increment is the hole's Hole.Increment.
	increment int
}

// dmlSetContext says where a SET list is.
type dmlSetContext struct {
	statement string   // "UPDATE" or "ON CONFLICT DO UPDATE", for messages
	rows      []string // the names of t's whole row in scope
	excluded  bool     // enc = EXCLUDED.enc is allowed (ON CONFLICT)
	row       int      // the Row of the holes
	firstHole int      // the index in the plan's Holes of the first hole
}

// dmlPlanSet plans a SET list of table t (see PlanUpdate); it returns the
// items in order and the holes (numbered from ctx.firstHole).
func dmlPlanSet(targets []*pg_query.Node, t *catalog.Table, ctx dmlSetContext) ([]dmlSetItem, []Hole, error) {
	targets, err := dmlExpandMultiAssign(targets, t, ctx.statement)
	if err != nil {
		return nil, nil, err
	}
	var items []dmlSetItem
	var holes []Hole
	var assigned []string // encrypted columns set so far
	for _, n := range targets {
		rt := n.GetResTarget()
		if dmlInternalColumn(t, rt.Name) {
			return nil, nil, Refusal("%s of column %s.%s is not supported: the proxy alone writes it", ctx.statement, t.Name, rt.Name)
		}
		c := t.Column(rt.Name)
		if c == nil && len(rt.Indirection) > 0 {
			// SET t.enc = ... is not SQL (the server would report the
			// unknown column t), but must not carry enc's value there.
			if ec := t.Column(fieldName(rt.Indirection[0])); ec != nil && ec.Policy != catalog.Plain {
				return nil, nil, Refusal("%s of %s.%s: a qualified SET target is not supported", ctx.statement, rt.Name, ec.Name)
			}
		}
		if c == nil || c.Policy == catalog.Plain {
			// A plain column, or an unknown one the server reports.
			if err := dmlFindRef(rt.Val, t, ctx.rows).exprRefusal(t.Name, "SET "+rt.Name); err != nil {
				return nil, nil, err
			}
			items = append(items, dmlSetItem{fixed: []*pg_query.Node{n}, hole: -1})
			continue
		}
		if len(rt.Indirection) > 0 {
			return nil, nil, Refusal("%s of a subfield or element of encrypted column %s.%s is not supported", ctx.statement, t.Name, c.Name)
		}
		if slices.Contains(assigned, c.Name) {
			return nil, nil, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: fmt.Sprintf("multiple assignments to same column %q", c.Name)}
		}
		assigned = append(assigned, c.Name)
		if c.Generation != nil && rt.Val.GetSetToDefault() == nil {
			return nil, nil, GeneratedWriteError(c.Name, true)
		}
		if g := readByGeneration(t, c); ctx.excluded && (g != nil || c.Generation != nil) {
			// An UPDATE recomputes it (from the values it sets, or by
			// read-modify-write); ON CONFLICT DO UPDATE does not yet.
			if g == nil {
				g = c
			}
			return nil, nil, Refusal("%s of %s.%s is not supported: the proxy computes generated column %s from the row's values, which only an UPDATE reads", ctx.statement, t.Name, c.Name, g.Name)
		}
		_, layout, err := columnLayout(c)
		if err != nil {
			return nil, nil, err
		}
		layout = slices.DeleteFunc(layout, func(pc onion.PhysicalColumn) bool { return pc.Suffix == SaltSuffix })
		if ctx.excluded {
			if from, ok := dmlExcludedColumn(rt.Val); ok {
				if from != c.Name {
					return nil, nil, Refusal("%s of encrypted column %s.%s from EXCLUDED.%s is not supported: only EXCLUDED.%s", ctx.statement, t.Name, c.Name, from, c.Name)
				}
				items = append(items, dmlSetItem{fixed: dmlExcludedCopy(c, layout), hole: -1})
				continue
			}
		}
		h := Hole{Row: ctx.row, Column: c}
		val := rt.Val
		if c.Generation != nil {
			// Computed from the row's other holes (the engine checks
			// that the UPDATE sets all the column reads).
			h.Generated = true
			items = append(items, dmlSetItem{hole: ctx.firstHole + len(holes), column: c, layout: layout})
			holes = append(holes, h)
			continue
		}
		if ctx.statement == "UPDATE" {
			if v, sign := incrementOf(val, c.Name, ctx.rows); sign != 0 {
				if !hasCapability(c, onion.KindAdd) {
					return nil, nil, Refusal("UPDATE ... SET %s = %s %s value on encrypted column %s.%s needs its add onion, which its policy does not give it (capabilities: %v)", c.Name, c.Name, map[int]string{1: "+", -1: "-"}[sign], t.Name, c.Name, c.Capabilities)
				}
				val, h.Increment = v, sign
			}
		}
		if err := holeValue(val, &h, t.Name, ctx.statement+" of"); err != nil {
			return nil, nil, err
		}
		items = append(items, dmlSetItem{hole: ctx.firstHole + len(holes), column: c, layout: layout, increment: h.Increment})
		holes = append(holes, h)
	}
	return items, holes, nil
}

func orNull(n *pg_query.Node) *pg_query.Node {
	if n == nil {
		return nullConst()
	}
	return n
}

// incrementOf recognizes SET c = c + v, c = v + c and c = c - v (c
// possibly qualified by one of rows) and returns v and the sign; 0 for
// anything else.
func incrementOf(n *pg_query.Node, column string, rows []string) (*pg_query.Node, int) {
	e := n.GetAExpr()
	if e == nil || e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil || e.Rexpr == nil {
		return nil, 0
	}
	names := stringList(e.Name)
	if len(names) != 1 || (names[0] != "+" && names[0] != "-") {
		return nil, 0
	}
	self := func(x *pg_query.Node) bool {
		cr := x.GetColumnRef()
		if cr == nil {
			return false
		}
		f := stringList(cr.Fields)
		switch len(f) {
		case 1:
			return f[0] == column
		case 2:
			return f[1] == column && slices.Contains(rows, f[0])
		}
		return false
	}
	switch {
	case self(e.Lexpr) && isValue(e.Rexpr):
		if names[0] == "-" {
			return e.Rexpr, -1
		}
		return e.Rexpr, 1
	case names[0] == "+" && self(e.Rexpr) && isValue(e.Lexpr):
		return e.Lexpr, 1
	}
	return nil, 0
}

// dmlExpandMultiAssign returns targets with each SET (a, b) = (x, y) or
// ROW(x, y) item replaced by a = x, b = y, which is how PostgreSQL
// evaluates them. SET (a, b) = (SELECT ...) stays, but is refused when it
// sets an encrypted column. targets is not modified.
func dmlExpandMultiAssign(targets []*pg_query.Node, t *catalog.Table, statement string) ([]*pg_query.Node, error) {
	out := make([]*pg_query.Node, 0, len(targets))
	for _, n := range targets {
		rt := n.GetResTarget()
		ma := rt.Val.GetMultiAssignRef()
		if ma == nil {
			out = append(out, n)
			continue
		}
		row := ma.Source.GetRowExpr()
		if row == nil {
			c := t.Column(rt.Name)
			switch {
			case c == nil || c.Policy == catalog.Plain:
				out = append(out, n) // the server evaluates or rejects it
				continue
			case ma.Source.GetSubLink() != nil:
				return nil, Refusal("%s of encrypted column %s.%s from a multiple-column SET (...) = (SELECT ...) is not supported; assign constants or parameters", statement, t.Name, c.Name)
			}
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: "source for a multiple-column UPDATE item must be a sub-SELECT or ROW() expression"}
		}
		if len(row.Args) != int(ma.Ncolumns) {
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: "number of columns does not match number of values"}
		}
		out = append(out, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{
			Name: rt.Name, Indirection: rt.Indirection, Val: row.Args[ma.Colno-1], Location: rt.Location}}})
	}
	return out, nil
}

// dmlExcludedColumn returns the column name of EXCLUDED.name.
func dmlExcludedColumn(n *pg_query.Node) (string, bool) {
	cr := n.GetColumnRef()
	if cr == nil || len(cr.Fields) != 2 || fieldName(cr.Fields[0]) != "excluded" || fieldName(cr.Fields[1]) == "" {
		return "", false
	}
	return fieldName(cr.Fields[1]), true
}

// dmlExcludedCopy is SET c = EXCLUDED.c for an encrypted column: each
// physical column from EXCLUDED's, and the salt override from the
// excluded row's, whose cells used its row salt unless it has an override.
func dmlExcludedCopy(c *catalog.Column, layout []onion.PhysicalColumn) []*pg_query.Node {
	excluded := func(name string) *pg_query.Node {
		return pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode("excluded"), pg_query.MakeStrNode(name)}, -1)
	}
	var out []*pg_query.Node
	for _, pc := range layout {
		out = append(out, pg_query.MakeResTargetNodeWithNameAndVal(pc.Name, excluded(pc.Name), -1))
	}
	salt := &pg_query.Node{Node: &pg_query.Node_CoalesceExpr{CoalesceExpr: &pg_query.CoalesceExpr{
		Args: []*pg_query.Node{excluded(SaltOverrideColumn(c.Name)), excluded(SaltColumn)}, Location: -1}}}
	return append(out, pg_query.MakeResTargetNodeWithNameAndVal(SaltOverrideColumn(c.Name), salt, -1))
}

// dmlRenderSet returns the server's SET list of planned items: cells are
// indexed by the items' holes, salt is the salt of their cells.
func dmlRenderSet(items []dmlSetItem, cells []Cells, salt *pg_query.Node) []*pg_query.Node {
	var out []*pg_query.Node
	for _, it := range items {
		if it.hole < 0 {
			out = append(out, it.fixed...)
			continue
		}
		if it.increment != 0 {
			// The server multiplies the Add ciphertexts modulo n²
			// (migration 0006); the other onions of the row go stale, so
			// they become NULL: a NULL Eq cell beside a non-NULL Add cell
			// means "read the Add onion".
			for _, pc := range it.layout {
				v := nullConst()
				if pc.Suffix == "_add" {
					self := pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(pc.Name)}, -1)
					v = &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: &pg_query.FuncCall{
						Funcname: []*pg_query.Node{pg_query.MakeStrNode("pgonion"), pg_query.MakeStrNode("hom_add")},
						Args:     []*pg_query.Node{self, orNull(cells[it.hole]["_add"]), orNull(cells[it.hole][HomModulusCell])},
						Location: -1, Funcformat: pg_query.CoercionForm_COERCE_EXPLICIT_CALL}}}
				}
				out = append(out, pg_query.MakeResTargetNodeWithNameAndVal(pc.Name, v, -1))
			}
			continue
		}
		for _, pc := range it.layout {
			v := cells[it.hole][pc.Suffix]
			if v == nil {
				v = nullConst()
			}
			out = append(out, pg_query.MakeResTargetNodeWithNameAndVal(pc.Name, v, -1))
		}
		out = append(out, pg_query.MakeResTargetNodeWithNameAndVal(SaltOverrideColumn(it.column.Name), salt, -1))
	}
	return out
}

package rewrite

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"slices"

	"github.com/pgonion/pgonion/internal/ir"
)

// This file lets split execution check, in the proxy, conditions of a
// LEFT JOIN's ON clause that the server cannot evaluate over the onions
// (o_comment NOT LIKE '%special%requests%', TPC-H 13). The server runs
// the join on the rest of the ON clause; for each joined row whose right
// side fails the residual, the proxy sets the right side's columns to
// NULL, as if that right row had not matched.
//
// That is exact only where a surplus NULL-extended row changes nothing:
// a grouped query whose groups are keyed by left-side expressions and
// whose aggregates ignore NULLs and read only right-side columns
// (count(o_orderkey), sum(o.x * 2)); checkJoinResidual refuses the rest.

// joinResidual is a LEFT JOIN's ON conditions the proxy checks.
type joinResidual struct {
	conds []*pg_query.Node
	right *pg_query.RangeVar // the nullable side
	left  []*pg_query.RangeVar
}

// splitJoinResidual takes, out of the ON clause of a LEFT JOIN of sel's
// FROM whose right side is a table, the conjuncts the server cannot
// evaluate; nil when there are none.
func splitJoinResidual(sel *pg_query.SelectStmt, version int32, lookup TableLookup) (*joinResidual, error) {
	var found *joinResidual
	for i, item := range sel.FromClause {
		j := item.GetJoinExpr()
		if j == nil || j.Jointype != pg_query.JoinType_JOIN_LEFT || j.Quals == nil || j.Rarg.GetRangeVar() == nil {
			continue
		}
		var keep, residual []*pg_query.Node
		for _, c := range conjuncts(j.Quals) {
			if serverEvaluatesOn(sel, []int{i}, c, version, lookup) {
				keep = append(keep, c)
			} else {
				residual = append(residual, c)
			}
		}
		if len(residual) == 0 {
			continue
		}
		if len(keep) == 0 || found != nil {
			return nil, Refusal("these LEFT JOIN ... ON conditions are not supported in a query the proxy computes")
		}
		j.Quals = andNodes(keep)
		found = &joinResidual{conds: residual, right: j.Rarg.GetRangeVar()}
		for k, other := range sel.FromClause {
			if k != i {
				walkRangeVars(other.ProtoReflect(), func(rv *pg_query.RangeVar) { found.left = append(found.left, rv) })
			}
		}
		walkRangeVars(j.Larg.ProtoReflect(), func(rv *pg_query.RangeVar) { found.left = append(found.left, rv) })
	}
	return found, nil
}

// moveInnerJoinQuals moves the ON conjuncts of sel's inner joins that the
// server cannot evaluate to the WHERE clause, which the proxy checks: for
// an inner join that is not inside an outer join, a condition in ON and
// the same condition in WHERE keep the same rows.
func moveInnerJoinQuals(sel *pg_query.SelectStmt, version int32, lookup TableLookup) {
	var moved []*pg_query.Node
	var visit func(n *pg_query.Node, path []int)
	visit = func(n *pg_query.Node, path []int) {
		j := n.GetJoinExpr()
		if j == nil || j.Jointype != pg_query.JoinType_JOIN_INNER {
			return
		}
		visit(j.Larg, append(slices.Clone(path), 0))
		visit(j.Rarg, append(slices.Clone(path), 1))
		if j.Quals == nil {
			return
		}
		var keep []*pg_query.Node
		for _, c := range conjuncts(j.Quals) {
			// A comparison of bare columns (a join key) stays: the
			// proxy would compare every pair of rows.
			if columnsOnly(c) || serverEvaluatesOn(sel, path, c, version, lookup) {
				keep = append(keep, c)
			} else {
				moved = append(moved, c)
			}
		}
		if len(keep) == 0 {
			keep = []*pg_query.Node{boolConst(true)}
		}
		j.Quals = andNodes(keep)
	}
	for i, item := range sel.FromClause {
		visit(item, []int{i})
	}
	if len(moved) > 0 {
		sel.WhereClause = andNodes(append(conjuncts(sel.WhereClause), moved...))
	}
}

// columnsOnly reports whether c compares column references only (a = b,
// a BETWEEN b AND c).
func columnsOnly(c *pg_query.Node) bool {
	a := c.GetAExpr()
	if a == nil {
		return false
	}
	ops := []*pg_query.Node{a.Lexpr}
	if l := a.Rexpr.GetList(); l != nil {
		ops = append(ops, l.Items...)
	} else {
		ops = append(ops, a.Rexpr)
	}
	for _, n := range ops {
		if n.GetColumnRef() == nil {
			return false
		}
	}
	return true
}

// serverEvaluatesOn reports whether the server can evaluate condition c
// as the only ON condition of the join at path (joinAt) of sel.
func serverEvaluatesOn(sel *pg_query.SelectStmt, path []int, c *pg_query.Node, version int32, lookup TableLookup) bool {
	probe := proto.Clone(sel).(*pg_query.SelectStmt)
	joinAt(probe, path).Quals = proto.Clone(c).(*pg_query.Node)
	probe.WhereClause = nil
	return serverEvaluates(pg_query.MakeAConstIntNode(1, -1), probe, version, lookup)
}

// joinAt is the join expression of sel's FROM at path: the FROM item's
// index, then 0 (left) or 1 (right) per level.
func joinAt(sel *pg_query.SelectStmt, path []int) *pg_query.JoinExpr {
	n := sel.FromClause[path[0]]
	for _, side := range path[1:] {
		if side == 0 {
			n = n.GetJoinExpr().Larg
		} else {
			n = n.GetJoinExpr().Rarg
		}
	}
	return n.GetJoinExpr()
}

// isRight reports whether a column reference reads the nullable side:
// qualified by its name, or unqualified and a column of its table and of
// no left-side table. ok is false when that cannot be told (a table the
// catalog does not know).
func (r *joinResidual) isRight(cr *pg_query.ColumnRef, lookup TableLookup) (right, ok bool) {
	f := stringList(cr.Fields)
	if len(f) >= 2 {
		return f[len(f)-2] == rangeVarName(r.right), true
	}
	has := func(rv *pg_query.RangeVar) (bool, bool) {
		t := lookup.table(rv)
		if t == nil {
			return false, false
		}
		return t.Column(f[0]) != nil, true
	}
	inRight, known := has(r.right)
	if !known {
		return false, false
	}
	for _, rv := range r.left {
		inLeft, known := has(rv)
		if !known {
			return false, false
		}
		if inLeft {
			return false, !inRight // both sides: ambiguous, PostgreSQL says so
		}
	}
	return inRight, true
}

func rangeVarName(rv *pg_query.RangeVar) string {
	if rv.Alias != nil {
		return rv.Alias.Aliasname
	}
	return rv.Relname
}

// checkWhere refuses a WHERE clause that reads the right side: the
// server would evaluate it before the proxy checks the residual.
func (r *joinResidual) checkWhere(where *pg_query.Node, lookup TableLookup) error {
	var err error
	if where == nil {
		return nil
	}
	inspect(where.ProtoReflect(), func(m protoreflect.Message) bool {
		cr, ok := m.Interface().(*pg_query.ColumnRef)
		if !ok || err != nil {
			return err == nil
		}
		if right, known := r.isRight(cr, lookup); right || !known {
			err = Refusal("a LEFT JOIN ... ON condition the proxy checks (on table %s) is not supported with a WHERE clause that reads that table", r.right.Relname)
		}
		return false
	})
	return err
}

// checkJoinResidual plans the residual of a LEFT JOIN (see the top of
// the file) into p, refusing queries where it would not be exact.
func (b *aggBuilder) checkJoinResidual(r *joinResidual, lookup TableLookup) error {
	refuse := func(why string) error {
		return Refusal("a LEFT JOIN ... ON condition the proxy checks (on table %s) is supported only in a grouped query whose groups read the left side and whose aggregates read only the right side and ignore NULLs: %s", r.right.Relname, why)
	}
	var residual *ir.Expr
	for _, c := range r.conds {
		e, err := b.expr(c)
		if err != nil {
			return err
		}
		if hasAgg(e) {
			return refuse("an aggregate in ON")
		}
		residual = andExpr(residual, e)
	}
	right := map[int]bool{}
	for i, t := range b.targets {
		cr := t.GetResTarget().GetVal().GetColumnRef()
		isRight, ok := r.isRight(cr, lookup)
		if !ok {
			return refuse("qualify the column names with their tables")
		}
		if isRight {
			right[i] = true
		}
	}
	reads := func(e *ir.Expr, inAgg bool) (readsRight bool) {
		var walk func(*ir.Expr, bool)
		walk = func(x *ir.Expr, under bool) {
			if x == nil {
				return
			}
			if x.Kind == ir.ExprInput && right[x.Input] && !under {
				readsRight = true
			}
			for _, a := range x.Args {
				walk(a, under || x.Kind == ir.ExprAgg)
			}
			walk(x.Else, under)
		}
		walk(e, inAgg)
		return readsRight
	}
	if b.plan.Ungrouped || len(b.plan.Group) == 0 {
		return refuse("the query is not grouped")
	}
	if reads(b.plan.Where, false) {
		return refuse("WHERE reads the right side")
	}
	for _, g := range b.plan.Group {
		if reads(g, false) {
			return refuse("GROUP BY reads the right side")
		}
	}
	var aggs []*ir.Expr
	var outside []*ir.Expr
	for _, o := range b.plan.Outputs {
		outside = append(outside, o.Expr)
	}
	outside = append(outside, b.plan.Having)
	for _, o := range b.plan.Order {
		outside = append(outside, o.Expr)
	}
	for _, e := range outside {
		if reads(e, false) {
			return refuse("an expression outside the aggregates reads the right side")
		}
		var collect func(*ir.Expr)
		collect = func(x *ir.Expr) {
			if x == nil {
				return
			}
			if x.Kind == ir.ExprAgg {
				aggs = append(aggs, x)
				return
			}
			for _, a := range x.Args {
				collect(a)
			}
			collect(x.Else)
		}
		collect(e)
	}
	for _, a := range aggs {
		if a.Star || len(a.Args) != 1 || !strictOver(a.Args[0], right) {
			return refuse("an aggregate reads the left side, is count(*), or its argument is not NULL whenever the right side is")
		}
	}
	var nullable []int
	for i := range b.targets {
		if right[i] {
			nullable = append(nullable, i)
		}
	}
	b.plan.JoinResidual, b.plan.Nullable = residual, nullable
	return nil
}

// strictOver reports whether e is NULL whenever the inputs in right are:
// a right input, or arithmetic over right inputs and constants that reads
// at least one of them.
func strictOver(e *ir.Expr, right map[int]bool) bool {
	switch e.Kind {
	case ir.ExprInput:
		return right[e.Input]
	case ir.ExprOp:
		if e.Op != "+" && e.Op != "-" && e.Op != "*" && e.Op != "/" {
			return false
		}
		some := false
		for _, a := range e.Args {
			switch {
			case a.Kind == ir.ExprConst:
			case strictOver(a, right):
				some = true
			default:
				return false
			}
		}
		return some
	}
	return false
}

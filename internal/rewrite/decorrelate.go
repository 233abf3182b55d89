package rewrite

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pgonion/pgonion/internal/ir"
)

// This file decorrelates scalar subqueries that aggregate rows matched by
// equality with columns of the enclosing query (TPC-H 17 and 20):
//
//	l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem WHERE l_partkey = p_partkey)
//
// The proxy evaluates the subquery once for every key, grouped by its
// side of the correlation,
//
//	SELECT l_partkey, 0.2 * avg(l_quantity) FROM lineitem GROUP BY l_partkey
//
// and the enclosing query, computed by split execution, looks the value
// up for each row by the enclosing side (p_partkey). A key without rows
// has no group: its value is NULL, which is what the subquery returns
// over no rows only when every aggregate in it is NULL over no rows, so
// count() is not decorrelated.
//
// The lookup's values and keys stay in the proxy; the server sees the
// grouped subquery as a statement of its own.

// lookupFunc names the placeholder of a decorrelated subquery in the
// enclosing statement: pgonion_lookup(index, outer keys...), with the
// secret location (checkSecrets refuses a statement that would send it
// to the server).
const lookupFunc = "pgonion_lookup"

// lookupSet holds the lookups of a statement, by index.
type lookupSet struct {
	items []*ir.Lookup
}

// correlated records sub (a scalar subquery that is not uncorrelated) if
// the proxy can decorrelate it: a single aggregate expression over FROM
// items the proxy knows, whose WHERE conjuncts either resolve inside it
// or equate a column inside with a column outside.
func (f *subqueryFinder) correlated(n *pg_query.Node, sl *pg_query.SubLink, sub, encl *pg_query.SelectStmt, ctes []*pg_query.CommonTableExpr) {
	if sub.Op != pg_query.SetOperation_SETOP_NONE || sub.WithClause != nil || len(sub.GroupClause) > 0 || sub.HavingClause != nil ||
		len(sub.DistinctClause) > 0 || len(sub.SortClause) > 0 || sub.LimitCount != nil || sub.LimitOffset != nil ||
		len(sub.WindowClause) > 0 || len(sub.ValuesLists) > 0 || len(sub.LockingClause) > 0 || len(sub.TargetList) != 1 {
		return
	}
	target := sub.TargetList[0].GetResTarget().GetVal()
	if !nullOverNoRows(target, false) {
		return
	}
	with, r := f.readCTEs(sub, ctes)
	sc := &nameScope{}
	var quals []*pg_query.Node
	for _, item := range sub.FromClause {
		if !r.fromItem(item, sc, &quals) {
			return
		}
	}
	for _, it := range sc.items {
		if !it.known {
			return // a name it does not resolve might be outside
		}
	}
	if !r.encrypted || !r.exprs(quals, sc) || !r.expr(target, sc) {
		return
	}
	var inner, outer, kept []*pg_query.Node
	for _, c := range conjuncts(sub.WhereClause) {
		if r.expr(c, sc) {
			kept = append(kept, c)
			continue
		}
		a := c.GetAExpr()
		if a == nil || a.Kind != pg_query.A_Expr_Kind_AEXPR_OP || strings.Join(stringList(a.Name), ".") != "=" {
			return
		}
		l, rr := a.Lexpr.GetColumnRef(), a.Rexpr.GetColumnRef()
		if l == nil || rr == nil {
			return
		}
		in, out := a.Lexpr, a.Rexpr
		switch li, ri := sc.resolves(l), sc.resolves(rr); {
		case li && !ri:
		case ri && !li:
			in, out = out, in
		default:
			return
		}
		inner = append(inner, proto.Clone(in).(*pg_query.Node))
		outer = append(outer, out)
	}
	if len(inner) == 0 {
		return
	}
	grouped := &pg_query.SelectStmt{
		TargetList:  append(resTargets(inner), proto.Clone(sub.TargetList[0]).(*pg_query.Node)),
		FromClause:  cloneNodes(sub.FromClause),
		WhereClause: andNodes(cloneNodes(kept)),
		GroupClause: cloneNodes(inner),
		Op:          pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT,
	}
	// The outer keys must be columns of the enclosing SELECT itself (not
	// of a level further out), which the restriction reads.
	ewith, er := f.readCTEs(encl, ctes)
	esc := &nameScope{}
	var equals []*pg_query.Node
	for _, item := range encl.FromClause {
		if !er.fromItem(item, esc, &equals) {
			return
		}
	}
	for _, it := range esc.items {
		if !it.known {
			return
		}
	}
	for _, o := range outer {
		if !esc.resolves(o.GetColumnRef()) {
			return
		}
	}
	full, ok := f.statement(grouped, with)
	if !ok {
		return
	}
	sq := Subquery{Kind: SubqueryLookup, Statement: full, node: n, link: sl, outer: outer}
	if restricted := restrictKeys(proto.Clone(grouped).(*pg_query.SelectStmt), inner, outer, encl); restricted != nil {
		if st, ok := f.statement(restricted, mergeWith(with, ewith)); ok {
			sq.Statement, sq.Fallback = st, &full
		}
	}
	f.found = append(f.found, sq)
}

// restrictKeys narrows grouped (a decorrelated subquery) to the keys the
// enclosing SELECT can look up, a magic set: each inner key IN (SELECT
// its outer key FROM the enclosing FROM WHERE the enclosing conjuncts
// without subqueries). Every row the enclosing query looks up passes
// those conjuncts, so no key it needs is dropped. nil when no conjunct
// restricts anything (the semi-join would only cost).
func restrictKeys(grouped *pg_query.SelectStmt, inner, outer []*pg_query.Node, encl *pg_query.SelectStmt) *pg_query.SelectStmt {
	var conds []*pg_query.Node
	for _, c := range conjuncts(encl.WhereClause) {
		if !hasSubLink(c) {
			conds = append(conds, c)
		}
	}
	if len(conds) == 0 || hasSubLink(&pg_query.Node{Node: &pg_query.Node_List{List: &pg_query.List{Items: encl.FromClause}}}) {
		return nil
	}
	where := conjuncts(grouped.WhereClause)
	for i := range inner {
		keys := &pg_query.SelectStmt{
			TargetList:  resTargets([]*pg_query.Node{proto.Clone(outer[i]).(*pg_query.Node)}),
			FromClause:  cloneNodes(encl.FromClause),
			WhereClause: andNodes(cloneNodes(conds)),
			Op:          pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT,
		}
		where = append(where, &pg_query.Node{Node: &pg_query.Node_SubLink{SubLink: &pg_query.SubLink{
			SubLinkType: pg_query.SubLinkType_ANY_SUBLINK, Testexpr: proto.Clone(inner[i]).(*pg_query.Node),
			Subselect: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: keys}}, Location: -1}}})
	}
	grouped.WhereClause = andNodes(where)
	return grouped
}

// mergeWith is the CTEs of a and those of b not in a.
func mergeWith(a, b []*pg_query.Node) []*pg_query.Node {
	seen := map[string]bool{}
	out := append([]*pg_query.Node(nil), a...)
	for _, n := range a {
		seen[n.GetCommonTableExpr().Ctename] = true
	}
	for _, n := range b {
		if !seen[n.GetCommonTableExpr().Ctename] {
			out = append(out, n)
		}
	}
	return out
}

// hasSubLink reports whether n holds a subquery.
func hasSubLink(n *pg_query.Node) bool {
	found := false
	inspect(n.ProtoReflect(), func(m protoreflect.Message) bool {
		if _, ok := m.Interface().(*pg_query.SubLink); ok {
			found = true
		}
		return !found
	})
	return found
}

func resTargets(ns []*pg_query.Node) []*pg_query.Node {
	out := make([]*pg_query.Node, len(ns))
	for i, n := range ns {
		out[i] = pg_query.MakeResTargetNodeWithVal(n, -1)
	}
	return out
}

// nullOverNoRows reports whether n, the select list of an aggregate
// subquery, is NULL over no rows and reads columns only inside
// aggregates: sum, avg, min and max (not count) combined with constants
// by arithmetic.
func nullOverNoRows(n *pg_query.Node, inAgg bool) bool {
	switch x := n.Node.(type) {
	case *pg_query.Node_FuncCall:
		fc := x.FuncCall
		switch funcName(fc) {
		case "sum", "avg", "min", "max":
		default:
			return false
		}
		return !inAgg && len(fc.Args) == 1 && fc.Over == nil && fc.AggFilter == nil && !fc.AggStar
	case *pg_query.Node_AExpr:
		a := x.AExpr
		if a.Kind != pg_query.A_Expr_Kind_AEXPR_OP {
			return false
		}
		switch strings.Join(stringList(a.Name), ".") {
		case "+", "-", "*", "/":
		default:
			return false
		}
		// NULL op x is NULL: one side suffices, the other must not read
		// columns outside aggregates.
		lnull := a.Lexpr != nil && nullOverNoRows(a.Lexpr, inAgg)
		rnull := nullOverNoRows(a.Rexpr, inAgg)
		return (lnull || a.Lexpr == nil || constant(a.Lexpr)) && (rnull || constant(a.Rexpr)) && (lnull || rnull)
	case *pg_query.Node_TypeCast:
		return nullOverNoRows(x.TypeCast.Arg, inAgg)
	}
	return false
}

// constant reports whether n is a constant (possibly cast).
func constant(n *pg_query.Node) bool {
	if tc := n.GetTypeCast(); tc != nil {
		return constant(tc.Arg)
	}
	return n.GetAConst() != nil
}

// lookupNode is the placeholder of lookup i of the statement, replacing
// sublink: pgonion_lookup.<name>(i, outer...), where name is the
// subquery's output name (figureColname reads it as the function's).
func lookupNode(i int, outer []*pg_query.Node, sublink *pg_query.Node) *pg_query.Node {
	name, _ := figureColname(sublink)
	args := append([]*pg_query.Node{pg_query.MakeAConstIntNode(int64(i), -1)}, outer...)
	return &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: &pg_query.FuncCall{
		Funcname: []*pg_query.Node{pg_query.MakeStrNode(lookupFunc), pg_query.MakeStrNode(name)}, Args: args,
		Funcformat: pg_query.CoercionForm_COERCE_EXPLICIT_CALL, Location: secretLocation}}}
}

// lookupOf returns the lookup a placeholder names, and its outer keys.
func (s Statement) lookupOf(fc *pg_query.FuncCall) (*ir.Lookup, []*pg_query.Node, bool) {
	if fc.Location != secretLocation || len(fc.Funcname) != 2 || fieldName(fc.Funcname[0]) != lookupFunc || len(fc.Args) < 2 || s.lookups == nil {
		return nil, nil, false
	}
	iv, ok := fc.Args[0].GetAConst().GetVal().(*pg_query.A_Const_Ival)
	if !ok {
		return nil, nil, false
	}
	i := int(iv.Ival.Ival)
	if i < 0 || i >= len(s.lookups.items) {
		return nil, nil, false
	}
	return s.lookups.items[i], fc.Args[1:], true
}

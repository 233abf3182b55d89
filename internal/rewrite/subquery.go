package rewrite

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pgonion/pgonion/internal/ir"
)

// This file lets the proxy evaluate uncorrelated subqueries over encrypted
// columns before the statement that contains them (Monomi's multi-round
// execution): a subquery the server cannot evaluate inside the statement
// (LIKE in a subquery, aggregates of expressions, a comparison of an
// aggregate with a scalar subquery) runs on its own through the proxy,
// and its result replaces it as constants, which the statement then
// compares with encrypted columns on the server (encrypted like any
// constant) or the proxy uses in what it computes.
//
// A result computed from encrypted columns is a secret constant
// (SecretConst): the planner accepts it only where it is encrypted or
// evaluated by the proxy, and refuses a statement that would send it to
// the server in plaintext (checkSecrets).

// SubqueryKind is the form of a subquery the proxy evaluates.
type SubqueryKind int

// Subquery kinds.
const (
	// SubqueryScalar is (SELECT ...) used as a value.
	SubqueryScalar SubqueryKind = iota
	// SubqueryIn is x IN (SELECT ...), or x NOT IN when under NOT.
	SubqueryIn
	// SubqueryExists is EXISTS (SELECT ...).
	SubqueryExists
	// SubqueryLookup is a correlated scalar subquery, decorrelated: its
	// Statement returns the correlation keys and the value for each
	// (see decorrelate.go).
	SubqueryLookup
)

// Subquery is an uncorrelated subquery of a statement, to be evaluated
// by the proxy (Statement) and replaced by its result (Substitute).
type Subquery struct {
	Kind SubqueryKind
	// Statement is the subquery as a statement of its own, with the CTEs
	// of the enclosing statement it reads.
	Statement Statement
	// Fallback, when set, is what to evaluate instead if the proxy
	// cannot plan Statement (a lookup's statement without the
	// restriction to the enclosing query's keys).
	Fallback *Statement
	node     *pg_query.Node // holds the SubLink; replaced by the result
	link     *pg_query.SubLink
	outer    []*pg_query.Node // SubqueryLookup: the enclosing query's keys
	lookups  *lookupSet
}

// Subqueries returns the subqueries of st that the proxy can evaluate
// ahead of it: uncorrelated scalar subqueries, single-column IN
// subqueries and EXISTS, that read a table with encrypted columns, and
// are not inside another subquery (which is evaluated as a whole), and
// correlated scalar subqueries the proxy can decorrelate
// (SubqueryLookup). A subquery whose column references the proxy cannot
// all resolve inside it (a table it does not know the columns of) counts
// as correlated. st's tree is not modified; Substitute modifies it.
//
// For a DELETE or UPDATE, the uncorrelated subqueries of its WHERE (as
// ORMs write a filter over related tables: WHERE id IN (SELECT U0.id ...
// JOIN ...)) are returned, so that once they are replaced the statement
// names the target table alone.
func Subqueries(st *Statement, lookup TableLookup) []Subquery {
	var where *pg_query.Node
	sel := st.Tree.GetStmt().GetSelectStmt()
	switch {
	case sel != nil:
	case st.Tree.GetStmt().GetDeleteStmt() != nil:
		where = st.Tree.GetStmt().GetDeleteStmt().WhereClause
	case st.Tree.GetStmt().GetUpdateStmt() != nil:
		where = st.Tree.GetStmt().GetUpdateStmt().WhereClause
	}
	if sel == nil && where == nil {
		return nil
	}
	if st.lookups == nil {
		st.lookups = &lookupSet{}
	}
	f := &subqueryFinder{lookup: lookup, version: st.version}
	if sel != nil {
		f.selectStmt(sel, nil)
	} else {
		inspect(where.ProtoReflect(), func(m protoreflect.Message) bool {
			if x, ok := m.Interface().(*pg_query.Node); ok {
				if sl := x.GetSubLink(); sl != nil {
					f.subLink(x, sl, nil, nil)
					return false
				}
			}
			return true
		})
	}
	for i := range f.found {
		f.found[i].lookups = st.lookups
	}
	if sel != nil && len(f.found) > 0 {
		// A subquery the proxy replaces by its value keeps the column
		// name PostgreSQL gives it (its own output's), not the
		// constant's type.
		for _, t := range sel.TargetList {
			if rt := t.GetResTarget(); rt != nil && rt.Name == "" && rt.Val.GetSubLink() != nil {
				rt.Name = outputName(rt)
			}
		}
	}
	return f.found
}

type subqueryFinder struct {
	lookup  TableLookup
	version int32
	found   []Subquery
}

// selectStmt looks for subqueries in one SELECT; ctes are the CTEs of the
// enclosing levels.
func (f *subqueryFinder) selectStmt(sel *pg_query.SelectStmt, ctes []*pg_query.CommonTableExpr) {
	if sel == nil {
		return
	}
	if w := sel.WithClause; w != nil {
		if w.Recursive {
			return
		}
		for _, n := range w.Ctes {
			cte := n.GetCommonTableExpr()
			f.selectStmt(cte.GetCtequery().GetSelectStmt(), ctes)
			ctes = append(ctes, cte)
		}
	}
	inspect(sel.ProtoReflect(), func(m protoreflect.Message) bool {
		switch x := m.Interface().(type) {
		case *pg_query.Node:
			if sl := x.GetSubLink(); sl != nil {
				f.subLink(x, sl, sel, ctes)
				return false
			}
		case *pg_query.SelectStmt:
			if x == sel {
				return true
			}
			f.selectStmt(x, ctes) // derived tables, set operations
			return false
		case *pg_query.WithClause:
			return false // done above
		}
		return true
	})
}

// subLink records the subquery of n if the proxy can evaluate it.
func (f *subqueryFinder) subLink(n *pg_query.Node, sl *pg_query.SubLink, encl *pg_query.SelectStmt, ctes []*pg_query.CommonTableExpr) {
	sub := sl.GetSubselect().GetSelectStmt()
	if sub == nil {
		return
	}
	var kind SubqueryKind
	switch sl.SubLinkType {
	case pg_query.SubLinkType_EXPR_SUBLINK:
		kind = SubqueryScalar
	case pg_query.SubLinkType_ANY_SUBLINK:
		if len(sl.OperName) > 0 && strings.Join(stringList(sl.OperName), ".") != "=" || sl.Testexpr.GetRowExpr() != nil {
			return
		}
		kind = SubqueryIn
	case pg_query.SubLinkType_EXISTS_SUBLINK:
		kind = SubqueryExists
	default:
		return
	}
	with, r := f.readCTEs(sub, ctes)
	if !r.level(sub, nil) {
		if kind == SubqueryScalar && encl != nil {
			f.correlated(n, sl, sub, encl, ctes)
		}
		return
	}
	if !r.encrypted {
		return
	}
	if st, ok := f.statement(proto.Clone(sub).(*pg_query.SelectStmt), with); ok {
		f.found = append(f.found, Subquery{Kind: kind, Statement: st, node: n, link: sl})
	}
}

// readCTEs returns the CTEs of the enclosing levels that sub reads
// (with those they read, in their order), and a resolver that knows
// them.
func (f *subqueryFinder) readCTEs(sub *pg_query.SelectStmt, ctes []*pg_query.CommonTableExpr) ([]*pg_query.Node, *resolver) {
	byName := map[string]*pg_query.CommonTableExpr{}
	for _, c := range ctes {
		byName[c.Ctename] = c
	}
	needed := map[string]bool{}
	var need func(m protoreflect.Message) bool
	need = func(m protoreflect.Message) bool {
		if rv, ok := m.Interface().(*pg_query.RangeVar); ok && rv.Schemaname == "" {
			if c := byName[rv.Relname]; c != nil && !needed[rv.Relname] {
				needed[rv.Relname] = true
				inspect(c.ProtoReflect(), need)
			}
			return false
		}
		return true
	}
	inspect(sub.ProtoReflect(), need)
	var with []*pg_query.Node
	r := &resolver{lookup: f.lookup, ctes: map[string]*pg_query.CommonTableExpr{}}
	for _, c := range ctes {
		if needed[c.Ctename] {
			with = append(with, &pg_query.Node{Node: &pg_query.Node_CommonTableExpr{CommonTableExpr: c}})
			r.ctes[c.Ctename] = c
		}
	}
	return with, r
}

// statement makes stmt (a copy of a subquery) a statement of its own,
// with the CTEs it reads; false when it has a WITH of its own as well.
func (f *subqueryFinder) statement(stmt *pg_query.SelectStmt, with []*pg_query.Node) (Statement, bool) {
	if len(with) > 0 {
		if stmt.WithClause != nil {
			return Statement{}, false // a WITH inside and outside: not merged
		}
		stmt.WithClause = &pg_query.WithClause{Ctes: cloneNodes(with)}
	}
	st := Statement{Kind: "Select", Tree: &pg_query.RawStmt{Stmt: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: stmt}}}, version: f.version}
	if sql, err := st.Deparse(); err == nil {
		st.SQL = sql
	}
	return st, true
}

func cloneNodes(ns []*pg_query.Node) []*pg_query.Node {
	out := make([]*pg_query.Node, len(ns))
	for i, n := range ns {
		out[i] = proto.Clone(n).(*pg_query.Node)
	}
	return out
}

// resolver checks that every column reference of a subquery resolves
// inside it (it is uncorrelated), and notes whether it reads a table
// with encrypted columns.
type resolver struct {
	lookup    TableLookup
	ctes      map[string]*pg_query.CommonTableExpr // of the enclosing statement
	checked   map[*pg_query.CommonTableExpr]bool   // those of ctes resolved
	encrypted bool
}

// nameScope is the FROM items of one level, for resolving names.
type nameScope struct {
	parent  *nameScope
	items   []nameItem
	ctes    map[string]*pg_query.CommonTableExpr
	outputs map[string]bool // select list names (GROUP BY, ORDER BY)
}

// nameItem is one FROM item: its qualifier and its columns (known false
// when the proxy does not know them).
type nameItem struct {
	qualifier string
	cols      map[string]bool
	known     bool
}

// level reports whether every column reference of sel (and of its
// subqueries) resolves within sel or its enclosing levels up to the
// subquery's top.
func (r *resolver) level(sel *pg_query.SelectStmt, parent *nameScope) bool {
	if sel == nil {
		return true
	}
	if sel.Op != pg_query.SetOperation_SETOP_NONE {
		return r.level(sel.Larg, parent) && r.level(sel.Rarg, parent) && r.exprs(sel.SortClause, &nameScope{parent: parent}) && r.expr(sel.LimitCount, parent) && r.expr(sel.LimitOffset, parent)
	}
	sc := &nameScope{parent: parent, outputs: map[string]bool{}}
	if w := sel.WithClause; w != nil {
		if w.Recursive {
			return false
		}
		sc.ctes = map[string]*pg_query.CommonTableExpr{}
		for _, n := range w.Ctes {
			cte := n.GetCommonTableExpr()
			if !r.level(cte.GetCtequery().GetSelectStmt(), sc) {
				return false
			}
			sc.ctes[cte.Ctename] = cte
		}
	}
	var quals []*pg_query.Node
	for _, n := range sel.FromClause {
		if !r.fromItem(n, sc, &quals) {
			return false
		}
	}
	for _, t := range sel.TargetList {
		if name := outputName(t.GetResTarget()); name != "" {
			sc.outputs[name] = true
		}
	}
	for _, v := range sel.ValuesLists {
		if !r.expr(v, sc) {
			return false
		}
	}
	return r.exprs(quals, sc) && r.exprs(sel.TargetList, sc) && r.expr(sel.WhereClause, sc) && r.exprs(sel.GroupClause, sc) &&
		r.expr(sel.HavingClause, sc) && r.exprs(sel.SortClause, sc) && r.exprs(sel.DistinctClause, sc) &&
		r.expr(sel.LimitCount, sc) && r.expr(sel.LimitOffset, sc) && len(sel.WindowClause) == 0
}

// fromItem adds a FROM item to sc.
func (r *resolver) fromItem(n *pg_query.Node, sc *nameScope, quals *[]*pg_query.Node) bool {
	switch x := n.Node.(type) {
	case *pg_query.Node_RangeVar:
		rv := x.RangeVar
		it := nameItem{qualifier: rv.Relname}
		if rv.Alias != nil {
			it.qualifier = rv.Alias.Aliasname
		}
		if cte := r.cte(rv, sc); cte != nil {
			it.cols, it.known = outputNames(cte.GetCtequery().GetSelectStmt(), cte.Aliascolnames)
			if r.ctes[rv.Relname] == cte && !r.checked[cte] {
				// A CTE of the enclosing statement: the tables it reads
				// count, and it must be uncorrelated too.
				if r.checked == nil {
					r.checked = map[*pg_query.CommonTableExpr]bool{}
				}
				r.checked[cte] = true
				if !r.level(cte.GetCtequery().GetSelectStmt(), nil) {
					return false
				}
			}
		} else {
			if t := r.lookup.table(rv); t != nil {
				r.encrypted = r.encrypted || ddlHasEncrypted(t)
				it.cols, it.known = map[string]bool{}, true
				for _, c := range t.Columns {
					it.cols[c.Name] = true
				}
			}
		}
		if rv.Alias != nil && len(rv.Alias.Colnames) > 0 {
			it.cols, it.known = map[string]bool{}, true
			for _, c := range rv.Alias.Colnames {
				it.cols[fieldName(c)] = true
			}
		}
		sc.items = append(sc.items, it)
	case *pg_query.Node_JoinExpr:
		j := x.JoinExpr
		if j.Alias != nil || j.IsNatural {
			return false
		}
		if !r.fromItem(j.Larg, sc, quals) || !r.fromItem(j.Rarg, sc, quals) {
			return false
		}
		if j.Quals != nil {
			*quals = append(*quals, j.Quals)
		}
	case *pg_query.Node_RangeSubselect:
		rs := x.RangeSubselect
		parent := sc.parent
		if rs.Lateral {
			parent = sc
		}
		sub := rs.Subquery.GetSelectStmt()
		if !r.level(sub, parent) {
			return false
		}
		it := nameItem{}
		if rs.Alias != nil {
			it.qualifier = rs.Alias.Aliasname
			it.cols, it.known = outputNames(sub, rs.Alias.Colnames)
		}
		sc.items = append(sc.items, it)
	default:
		return false // functions and the like: columns unknown
	}
	return true
}

// cte returns the CTE a FROM item names, nil for a table.
func (r *resolver) cte(rv *pg_query.RangeVar, sc *nameScope) *pg_query.CommonTableExpr {
	if rv.Schemaname != "" {
		return nil
	}
	for s := sc; s != nil; s = s.parent {
		if c := s.ctes[rv.Relname]; c != nil {
			return c
		}
	}
	return r.ctes[rv.Relname]
}

// outputNames are the column names of a derived table or CTE.
func outputNames(sel *pg_query.SelectStmt, aliases []*pg_query.Node) (map[string]bool, bool) {
	out := map[string]bool{}
	for _, a := range aliases {
		out[fieldName(a)] = true
	}
	for sel != nil && sel.Op != pg_query.SetOperation_SETOP_NONE {
		sel = sel.Larg
	}
	if sel == nil {
		return out, false
	}
	for i, t := range sel.TargetList {
		rt := t.GetResTarget()
		if cr := rt.Val.GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			return out, false
		}
		if i >= len(aliases) {
			out[outputName(rt)] = true
		}
	}
	return out, true
}

func (r *resolver) exprs(ns []*pg_query.Node, sc *nameScope) bool {
	for _, n := range ns {
		if !r.expr(n, sc) {
			return false
		}
	}
	return true
}

// expr reports whether every column reference in n resolves in sc.
func (r *resolver) expr(n *pg_query.Node, sc *nameScope) bool {
	if n == nil {
		return true
	}
	ok := true
	inspect(n.ProtoReflect(), func(m protoreflect.Message) bool {
		if !ok {
			return false
		}
		switch x := m.Interface().(type) {
		case *pg_query.ColumnRef:
			ok = sc.resolves(x)
			return false
		case *pg_query.SelectStmt:
			ok = r.level(x, sc)
			return false
		}
		return true
	})
	return ok
}

// resolves reports whether a column reference names a column of an item
// of sc or its parents (or an output name of sc).
func (sc *nameScope) resolves(cr *pg_query.ColumnRef) bool {
	var names []string
	for _, f := range cr.Fields {
		if f.GetAStar() != nil {
			names = append(names, "*")
		} else {
			names = append(names, fieldName(f))
		}
	}
	switch len(names) {
	case 1:
		if names[0] == "*" {
			return true
		}
		if sc.outputs[names[0]] {
			return true
		}
		for s := sc; s != nil; s = s.parent {
			for _, it := range s.items {
				if !it.known {
					return false // it might be a column of that item, or an outer one
				}
				if it.cols[names[0]] {
					return true
				}
			}
		}
		return false
	case 2, 3:
		q, col := names[len(names)-2], names[len(names)-1]
		for s := sc; s != nil; s = s.parent {
			for _, it := range s.items {
				if it.qualifier == q {
					return col == "*" || !it.known || it.cols[col] || systemColumn(col)
				}
			}
		}
	}
	return false
}

// Substitute replaces the subquery in its statement by its result: a
// scalar subquery by its value (NULL for no row; more than one row is
// PostgreSQL's error 21000), x IN (subquery) by x IN (the values) or, for
// no row, false (NOT IN: true), EXISTS by true or false. Whether an IN
// or EXISTS subquery returned rows is not secret: the server learns it.
// A lookup is replaced by a placeholder only the proxy evaluates (split
// execution), which looks the value up by the enclosing query's keys.
func (s Subquery) Substitute(r ir.SubqueryResult) error {
	if s.Kind == SubqueryLookup {
		if len(r.Types) != len(s.outer)+1 {
			return fmt.Errorf("rewrite: a lookup of %d keys got %d columns", len(s.outer), len(r.Types))
		}
		s.lookups.items = append(s.lookups.items, &ir.Lookup{Keys: len(s.outer), Result: r})
		s.node.Node = lookupNode(len(s.lookups.items)-1, s.outer, s.node).Node
		return nil
	}
	if len(r.Types) != 1 && s.Kind != SubqueryExists {
		return fmt.Errorf("rewrite: a subquery's result has %d columns", len(r.Types))
	}
	switch s.Kind {
	case SubqueryScalar:
		switch len(r.Rows) {
		case 0:
			s.node.Node = typedNull(r.Types[0]).Node
		case 1:
			s.node.Node = resultConst(r.Rows[0][0], r.Types[0], r.Secret).Node
		default:
			return &pgconn.PgError{Severity: "ERROR", Code: "21000", Message: "more than one row returned by a subquery used as an expression"}
		}
	case SubqueryIn:
		if len(r.Rows) == 0 {
			s.node.Node = boolConst(false).Node
			return nil
		}
		items := make([]*pg_query.Node, len(r.Rows))
		for i, row := range r.Rows {
			items[i] = resultConst(row[0], r.Types[0], r.Secret)
		}
		s.node.Node = &pg_query.Node_AExpr{AExpr: &pg_query.A_Expr{Kind: pg_query.A_Expr_Kind_AEXPR_IN, Name: []*pg_query.Node{pg_query.MakeStrNode("=")},
			Lexpr: s.link.Testexpr, Rexpr: &pg_query.Node{Node: &pg_query.Node_List{List: &pg_query.List{Items: items}}}}}
	case SubqueryExists:
		s.node.Node = boolConst(len(r.Rows) > 0).Node
	}
	return nil
}

// SubstituteParam replaces the subquery by parameter $n, whose value the
// engine computes from the subquery's rows at each Bind (extended
// protocol): x IN (subquery) by x = ANY($n) (an array, its type the
// server infers from x), a scalar subquery by $n, EXISTS by $n::boolean.
// A lookup cannot be replaced so. secretType, when not empty, is the
// PostgreSQL name of the type of the subquery's column, whose values the
// proxy computed from encrypted columns: the parameter is then marked
// secret (a cast to that type, or its array), so that the planners let
// it reach the server only encrypted, or compute with it in the proxy.
func (s Subquery) SubstituteParam(n int, secretType string) error {
	p := ParamNode(n)
	if secretType != "" && s.Kind != SubqueryExists {
		tn := typeName(secretType)
		if s.Kind == SubqueryIn {
			tn.ArrayBounds = []*pg_query.Node{{Node: &pg_query.Node_Integer{Integer: &pg_query.Integer{Ival: -1}}}}
		}
		p = &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{Arg: p, TypeName: tn, Location: secretLocation}}}
	}
	switch s.Kind {
	case SubqueryScalar:
		s.node.Node = p.Node
	case SubqueryIn:
		s.node.Node = &pg_query.Node_AExpr{AExpr: &pg_query.A_Expr{Kind: pg_query.A_Expr_Kind_AEXPR_OP_ANY, Name: []*pg_query.Node{pg_query.MakeStrNode("=")},
			Lexpr: s.link.Testexpr, Rexpr: p, Location: -1}}
	case SubqueryExists:
		s.node.Node = typeCast(p, "bool", false).Node
	default:
		return Refusal("a correlated subquery cannot be evaluated ahead of the statement in the extended protocol")
	}
	return nil
}

// secretLocation marks the casts of secret constants (TypeCast.Location):
// no parsed node has a negative location other than -1.
const secretLocation = -1917

// resultConst is a subquery's value: 'text'::type, marked secret.
func resultConst(v *string, typ string, secret bool) *pg_query.Node {
	if v == nil {
		return typedNull(typ)
	}
	loc := int32(-1)
	if secret {
		loc = secretLocation
	}
	return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{
		Arg: pg_query.MakeAConstStrNode(*v, -1), TypeName: typeName(typ), Location: loc}}}
}

func boolConst(b bool) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Val: &pg_query.A_Const_Boolval{Boolval: &pg_query.Boolean{Boolval: b}}, Location: -1}}}
}

func typedNull(typ string) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{
		Arg: &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true, Location: -1}}}, TypeName: typeName(typ), Location: -1}}}
}

func typeName(typ string) *pg_query.TypeName {
	return &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode("pg_catalog"), pg_query.MakeStrNode(typ)}, Typemod: -1, Location: -1}
}

// isSecret reports whether n is a secret constant or a lookup.
func isSecret(n *pg_query.Node) bool {
	if fc := n.GetFuncCall(); fc != nil {
		return fc.Location == secretLocation
	}
	tc := n.GetTypeCast()
	return tc != nil && tc.Location == secretLocation
}

// checkSecrets refuses a rewritten statement that still holds a secret
// constant: every secret the planner could encrypt was replaced by a
// ciphertext, so what is left would reach the server in plaintext.
func checkSecrets(st Statement) error {
	found := false
	inspect(st.Tree.ProtoReflect(), func(m protoreflect.Message) bool {
		if n, ok := m.Interface().(*pg_query.Node); ok && isSecret(n) {
			found = true
		}
		return !found
	})
	if found {
		return Refusal("a subquery's result computed from encrypted columns is used where the server would see it in plaintext (compared with a plain column, or in an expression): only comparisons with encrypted columns and what the proxy computes may use it")
	}
	return nil
}

package rewrite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pgonion/pgonion/internal/catalog"
)

// This file lets split execution answer a join of tables with a grouped
// derived table (TPC-H 15: supplier joined with revenue per supplier),
// which the proxy cannot compute as one relation and join. The two
// levels are merged into one grouped query:
//
//	SELECT s.name, r.total FROM s, (SELECT k, sum(x) AS total FROM t
//	  WHERE w GROUP BY k) r WHERE s.key = r.k AND r.total > 10
//
// becomes
//
//	SELECT s.name, sum(t.x) AS total FROM s, t WHERE w AND s.key = t.k
//	  GROUP BY t.k, s.ctid, s.tableoid, s.name HAVING sum(t.x) > 10
//
// Exact because each group of the merged query is one row of s (its
// ctid and tableoid, with the columns of s it reads, which depend on
// them) together with one group k of the derived table: the conditions
// left in WHERE read only s and k, which are the same on every row of
// the group, so the group's rows are all rows of t with key k that pass
// w, and its aggregates are the derived table's. A row of s meets no
// group it does not join, as in the join. Conditions reading the derived
// table's aggregates move to HAVING.

// fromItem is a table of a FROM list, by the name that qualifies its
// columns.
type fromItem struct {
	name  string
	table *catalog.Table
	rv    *pg_query.RangeVar
}

// knownTables returns the tables of a FROM list (tables and joins of
// tables), false when one of them is not a table the catalog knows (or a
// CTE of that name may hide it), or a join has an alias.
func knownTables(from []*pg_query.Node, lookup TableLookup, ctes *pg_query.WithClause) ([]fromItem, bool) {
	var items []fromItem
	var add func(n *pg_query.Node) bool
	add = func(n *pg_query.Node) bool {
		if rv := n.GetRangeVar(); rv != nil {
			if rv.Schemaname == "" && cteNamed(ctes, rv.Relname) {
				return false
			}
			t := lookup.table(rv)
			items = append(items, fromItem{name: rangeVarName(rv), table: t, rv: rv})
			return t != nil
		}
		if j := n.GetJoinExpr(); j != nil && j.Alias == nil {
			return add(j.Larg) && add(j.Rarg)
		}
		return false
	}
	for _, n := range from {
		if !add(n) {
			return nil, false
		}
	}
	return items, true
}

// cteNamed reports whether w defines a CTE called name.
func cteNamed(w *pg_query.WithClause, name string) bool {
	if w == nil {
		return false
	}
	for _, n := range w.Ctes {
		if n.GetCommonTableExpr().GetCtename() == name {
			return true
		}
	}
	return false
}

// owners returns the items that have a column called name.
func owners(items []fromItem, name string) []fromItem {
	var out []fromItem
	for _, it := range items {
		if it.table.Column(name) != nil || name == "ctid" || name == "tableoid" {
			out = append(out, it)
		}
	}
	return out
}

// qualifyRefs qualifies, below m (not inside subqueries), each
// unqualified column reference to a column of exactly one of items with
// that item's name; false when one names a column of several.
func qualifyRefs(m protoreflect.Message, items []fromItem) bool {
	ok := true
	substituteRefs(m, func(cr *pg_query.ColumnRef) *pg_query.Node {
		if len(cr.Fields) != 1 || cr.Fields[0].GetAStar() != nil {
			return nil
		}
		name := fieldName(cr.Fields[0])
		switch o := owners(items, name); len(o) {
		case 0:
			return nil
		case 1:
			return columnRef(o[0].name, name)
		}
		ok = false
		return nil
	})
	return ok
}

// renameQualifier makes the column references of sel qualified by name
// (below its FROM list, select list, WHERE, GROUP BY and HAVING) use
// alias instead; false when that cannot be done (the name in a reference
// with a schema, or sel has subqueries, which may refer to it).
func renameQualifier(sel *pg_query.SelectStmt, name, alias string) bool {
	ok := true
	nodes := slices.Concat(sel.FromClause, sel.TargetList, sel.GroupClause, []*pg_query.Node{sel.WhereClause, sel.HavingClause})
	for _, n := range nodes {
		if n == nil {
			continue
		}
		if hasSubLink(n) {
			return false
		}
		substituteRefs(n.ProtoReflect(), func(cr *pg_query.ColumnRef) *pg_query.Node {
			f := stringList(cr.Fields)
			switch {
			case len(f) == 2 && f[0] == name:
				return columnRef(alias, f[1])
			case len(f) > 2 && f[len(f)-2] == name:
				ok = false
			}
			return nil
		})
	}
	return ok
}

// flattenInnerJoins returns the items of a FROM list with its inner
// joins (JOIN ... ON, without USING, NATURAL or an alias) taken apart:
// FROM a JOIN b ON c is FROM a, b WHERE c. quals are the ON conditions.
func flattenInnerJoins(from []*pg_query.Node) (items, quals []*pg_query.Node) {
	for _, n := range from {
		j := n.GetJoinExpr()
		if j == nil || j.Jointype != pg_query.JoinType_JOIN_INNER || j.IsNatural || len(j.UsingClause) > 0 || j.Alias != nil || j.JoinUsingAlias != nil {
			items = append(items, n)
			continue
		}
		l, lq := flattenInnerJoins([]*pg_query.Node{j.Larg})
		r, rq := flattenInnerJoins([]*pg_query.Node{j.Rarg})
		items = slices.Concat(items, l, r)
		quals = slices.Concat(quals, lq, rq, conjuncts(j.Quals))
	}
	return items, quals
}

// columnRef is the column reference qualifier.name.
func columnRef(qualifier, name string) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{
		Fields: []*pg_query.Node{pg_query.MakeStrNode(qualifier), pg_query.MakeStrNode(name)}}}}
}

// resolveGroupAliases replaces each GROUP BY item of sel that names an
// output column (and, as PostgreSQL requires of such an item, no column
// of the FROM list) by the output's expression. Only when the FROM list
// is known tables; the items are left as they are otherwise.
func resolveGroupAliases(sel *pg_query.SelectStmt, lookup TableLookup) {
	items, ok := knownTables(sel.FromClause, lookup, sel.WithClause)
	if !ok {
		return
	}
	for i, n := range sel.GroupClause {
		cr := n.GetColumnRef()
		if cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetAStar() != nil {
			continue
		}
		name := fieldName(cr.Fields[0])
		if len(owners(items, name)) > 0 {
			continue
		}
		for _, t := range sel.TargetList {
			if rt := t.GetResTarget(); outputName(rt) == name {
				sel.GroupClause[i] = proto.Clone(rt.Val).(*pg_query.Node)
				break
			}
		}
	}
}

// mergeGrouped merges sel, when it is an ungrouped join of known tables
// with one grouped derived table, into one grouped query (see the top of
// this file), and returns the columns identifying rows it groups on
// (tableoid and ctid of each table: oid and tid values, to be grouped
// on as text); sel is unchanged, and ok false, otherwise. err is an
// error of the query itself (a column of the derived table that does
// not exist, an ambiguous name).
func mergeGrouped(sel *pg_query.SelectStmt, lookup TableLookup) (rowIDs []*pg_query.ColumnRef, ok bool, err error) {
	fromItems, quals := flattenInnerJoins(sel.FromClause)
	if len(fromItems) < 2 || len(sel.GroupClause) > 0 || sel.HavingClause != nil {
		return nil, false, nil
	}
	whereConds := slices.Concat(quals, conjuncts(sel.WhereClause)) // cloned before use below
	for _, n := range slices.Concat(sel.TargetList, sel.SortClause, whereConds) {
		if n != nil && (containsAggregate(n) || hasSubLink(n)) {
			return nil, false, nil // subqueries could read the derived table
		}
	}
	var rs *pg_query.RangeSubselect
	var others []*pg_query.Node
	for _, n := range fromItems {
		if r := n.GetRangeSubselect(); r != nil {
			if rs != nil {
				return nil, false, nil
			}
			rs = r
			continue
		}
		if n.GetRangeVar() == nil {
			return nil, false, nil
		}
		others = append(others, n)
	}
	if rs == nil || rs.Lateral || rs.Alias == nil {
		return nil, false, nil
	}
	in := rs.Subquery.GetSelectStmt()
	if in == nil || in.Op != pg_query.SetOperation_SETOP_NONE || len(in.GroupClause) == 0 || len(in.DistinctClause) > 0 ||
		in.LimitCount != nil || in.LimitOffset != nil || len(in.SortClause) > 0 || in.WithClause != nil || len(in.WindowClause) > 0 ||
		len(in.ValuesLists) > 0 || in.IntoClause != nil || len(in.LockingClause) > 0 {
		return nil, false, nil
	}
	outer, known := knownTables(others, lookup, sel.WithClause)
	if !known {
		return nil, false, nil
	}
	// Work on copies: sel changes only once the merge is sure.
	in = proto.Clone(in).(*pg_query.SelectStmt)
	inner, known := knownTables(in.FromClause, lookup, sel.WithClause)
	if !known {
		return nil, false, nil
	}
	resolveGroupAliases(in, lookup)
	if !qualifyRefs(in.ProtoReflect(), inner) {
		return nil, false, nil
	}
	for i := range inner {
		taken := func(name string) bool {
			return name == rs.Alias.Aliasname || slices.ContainsFunc(outer, func(o fromItem) bool { return o.name == name }) ||
				slices.ContainsFunc(inner[:i], func(o fromItem) bool { return o.name == name })
		}
		if !taken(inner[i].name) || inner[i].rv == nil {
			continue
		}
		// Merged, the names would clash (a table joined with a grouping
		// of itself): the derived table's gets an alias of its own.
		alias := inner[i].name
		for k := 2; taken(alias); k++ {
			alias = fmt.Sprintf("%s_%d", inner[i].name, k)
		}
		if !renameQualifier(in, inner[i].name, alias) {
			return nil, false, nil
		}
		inner[i].rv.Alias = &pg_query.Alias{Aliasname: alias}
		inner[i].name = alias
	}
	for _, n := range in.GroupClause {
		if n.GetGroupingSet() != nil {
			return nil, false, nil
		}
		if k, isPos := position(n); isPos && (k < 1 || k > len(in.TargetList)) {
			return nil, false, nil
		}
	}
	var group []*pg_query.Node
	for _, n := range in.GroupClause {
		if k, isPos := position(n); isPos {
			n = proto.Clone(in.TargetList[k-1].GetResTarget().Val).(*pg_query.Node)
		}
		group = append(group, n)
	}
	outs := map[string]*pg_query.Node{}
	for i, t := range in.TargetList {
		rt := t.GetResTarget()
		if cr := rt.Val.GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			return nil, false, nil
		}
		name := outputName(rt)
		if i < len(rs.Alias.Colnames) {
			name = fieldName(rs.Alias.Colnames[i])
		}
		if name == "" || outs[name] != nil {
			return nil, false, nil
		}
		outs[name] = rt.Val
	}
	// The outer level's references: to the derived table, its
	// expressions; to the tables, qualified (the merged FROM list has
	// more tables that could claim an unqualified name).
	alias := rs.Alias.Aliasname
	clash := false
	var qerr error // an error of the query itself, as PostgreSQL reports it
	var outerRefs []*pg_query.Node
	repl := func(cr *pg_query.ColumnRef) *pg_query.Node {
		f := stringList(cr.Fields)
		if cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			clash = true
			return nil
		}
		switch {
		case len(f) == 2 && f[0] == alias:
			if outs[f[1]] == nil && qerr == nil {
				qerr = &pgconn.PgError{Severity: "ERROR", Code: "42703", Message: fmt.Sprintf("column %s.%s does not exist", alias, f[1])}
			}
			return outs[f[1]]
		case f[len(f)-1] == "ctid" || f[len(f)-1] == "tableoid":
			clash = true // the merged query groups on them
			return nil
		case len(f) == 1:
			switch o := owners(outer, f[0]); {
			case len(o) == 1 && outs[f[0]] == nil:
				r := columnRef(o[0].name, f[0])
				outerRefs = append(outerRefs, r)
				return r
			case len(o) == 0 && outs[f[0]] != nil:
				return outs[f[0]]
			case qerr == nil:
				qerr = &pgconn.PgError{Severity: "ERROR", Code: "42702", Message: fmt.Sprintf("column reference %q is ambiguous", f[0])}
			}
			return nil
		}
		if !slices.ContainsFunc(outer, func(o fromItem) bool { return o.name == f[len(f)-2] }) {
			clash = true // not a table of this level
		}
		outerRefs = append(outerRefs, &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: proto.Clone(cr).(*pg_query.ColumnRef)}})
		return nil
	}
	targets := cloneNodes(sel.TargetList)
	for _, t := range targets {
		rt := t.GetResTarget()
		if rt.Name == "" {
			rt.Name = outputName(rt) // the output keeps its name
		}
		substituteRefs(rt.Val.ProtoReflect(), repl)
	}
	sorts := cloneNodes(sel.SortClause)
	for _, n := range sorts {
		sb := n.GetSortBy()
		if cr := sb.Node.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && slices.ContainsFunc(targets, func(t *pg_query.Node) bool {
			return t.GetResTarget().Name == fieldName(cr.Fields[0])
		}) {
			continue // an output name, which ORDER BY prefers
		}
		substituteRefs(n.ProtoReflect(), repl)
	}
	var where, having []*pg_query.Node
	where = append(where, conjuncts(in.WhereClause)...)
	having = append(having, conjuncts(in.HavingClause)...)
	for _, c := range cloneNodes(whereConds) {
		refs := len(outerRefs)
		substituteRefs(c.ProtoReflect(), repl)
		if !containsAggregate(c) {
			outerRefs = outerRefs[:refs] // read per row: need not be grouped
			where = append(where, c)
			continue
		}
		having = append(having, c)
	}
	if qerr != nil {
		return nil, false, qerr
	}
	if clash {
		return nil, false, nil
	}
	// Groups: the derived table's, and each row of the other tables.
	for _, it := range outer {
		for _, c := range []string{"tableoid", "ctid"} {
			r := columnRef(it.name, c)
			group = append(group, r)
			rowIDs = append(rowIDs, r.GetColumnRef())
		}
	}
	seen := map[string]bool{}
	for _, r := range outerRefs {
		key := strings.Join(stringList(r.GetColumnRef().Fields), ".")
		if !seen[key] {
			seen[key] = true
			group = append(group, r)
		}
	}
	from := cloneNodes(others)
	from = append(from, cloneNodes(in.FromClause)...)
	sel.FromClause, sel.TargetList, sel.SortClause = from, targets, sorts
	sel.WhereClause, sel.HavingClause, sel.GroupClause = andNodes(where), andNodes(having), group
	return rowIDs, true, nil
}

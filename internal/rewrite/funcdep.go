package rewrite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/ir"
)

// Functional dependency on a primary key: PostgreSQL accepts, in the
// select list of a grouped query, a column of a table whose primary key
// columns are all grouped (SELECT b.id, b.name ... GROUP BY b.id), since
// the key determines it. Split execution accepts the same, for tables
// whose key the engine knows (catalog.Table.PrimaryKey).

// fromTables lists the tables of FROM (joins included, derived tables
// not; a table the catalog does not know has no entry).
func fromTables(from []*pg_query.Node, lookup TableLookup) []fromItem {
	var out []fromItem
	var walk func(n *pg_query.Node)
	walk = func(n *pg_query.Node) {
		switch {
		case n.GetRangeVar() != nil:
			rv := n.GetRangeVar()
			out = append(out, fromItem{name: rangeVarName(rv), table: lookup.table(rv), rv: rv})
		case n.GetJoinExpr() != nil:
			walk(n.GetJoinExpr().Larg)
			walk(n.GetJoinExpr().Rarg)
		}
	}
	for _, n := range from {
		walk(n)
	}
	return out
}

// resolveColumn is the FROM item and column a column reference names
// (-1 when it cannot tell: a derived table, a plain table, an ambiguous
// name).
func resolveColumn(cr *pg_query.ColumnRef, items []fromItem) (int, string) {
	switch len(cr.Fields) {
	case 1:
		name, found := fieldName(cr.Fields[0]), -1
		for i, it := range items {
			if it.table != nil && it.table.Column(name) != nil {
				if found >= 0 {
					return -1, ""
				}
				found = i
			}
		}
		return found, name
	case 2:
		qual, name := fieldName(cr.Fields[0]), fieldName(cr.Fields[1])
		for i, it := range items {
			if it.name == qual {
				return i, name
			}
		}
	}
	return -1, ""
}

// checkDependent accepts input i, read outside aggregates and not
// grouped, when it is a column of a FROM table whose primary key columns
// are all grouped; it fails as PostgreSQL does (42803) when the table's
// key is known and not grouped, and refuses it (0A000) when the proxy
// cannot tell.
func (b *aggBuilder) checkDependent(i int) error {
	refusal := Refusal("a column in the select list is neither grouped nor aggregated, and the proxy does not know whether it depends on a grouped primary key")
	if b.source != nil || b.sel == nil || i >= len(b.targets) {
		return refusal
	}
	if sl := b.targets[i].GetResTarget().GetVal().GetSubLink(); sl != nil {
		return b.sublinkDependent(sl)
	}
	cr := b.targets[i].GetResTarget().GetVal().GetColumnRef()
	if cr == nil {
		return refusal
	}
	items := fromTables(b.sel.FromClause, b.lookup)
	item, _ := resolveColumn(cr, items)
	if item < 0 || items[item].table == nil || items[item].table.PrimaryKey == nil {
		return refusal
	}
	if !b.groupsKey(items, item) {
		return &pgconn.PgError{Severity: "ERROR", Code: "42803",
			Message: fmt.Sprintf("column %q must appear in the GROUP BY clause or be used in an aggregate function", deparseColumnRef(cr))}
	}
	return nil
}

// groupsKey reports whether the query groups by every primary key
// column of FROM item item (a table without a key: never).
func (b *aggBuilder) groupsKey(items []fromItem, item int) bool {
	if len(items[item].table.PrimaryKey) == 0 {
		return false
	}
	var grouped []string
	for _, g := range b.plan.Group {
		if g.Kind != ir.ExprInput || g.Input >= len(b.targets) {
			continue
		}
		if gcr := b.targets[g.Input].GetResTarget().GetVal().GetColumnRef(); gcr != nil {
			if it, name := resolveColumn(gcr, items); it == item {
				grouped = append(grouped, name)
			}
		}
	}
	for _, k := range items[item].table.PrimaryKey {
		if !slices.Contains(grouped, k) {
			return false
		}
	}
	return true
}

// deparseColumnRef prints a column reference as PostgreSQL names it in
// errors (r.stars).
func deparseColumnRef(cr *pg_query.ColumnRef) string {
	parts := make([]string, len(cr.Fields))
	for i, f := range cr.Fields {
		parts[i] = fieldName(f)
	}
	return strings.Join(parts, ".")
}

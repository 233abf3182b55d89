package rewrite

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
)

// ResultColumn is one column of the result the client sees.
type ResultColumn struct {
	// Name is the column name the client sees; empty for a plain value
	// whose name the server's RowDescription gives.
	Name string
	// Server is the column of the server's result holding the value (for
	// an encrypted column: its Eq onion ciphertext).
	Server int
	// Val is the server column of the exact-value copy of an encrypted
	// column whose type keeps one (onion.Column.HasVal), -1 otherwise.
	Val int
	// Salt is the server column of the salt override of an encrypted
	// column (see SaltSuffix), -1 otherwise: when it is not NULL, it is
	// the salt of this column's cells instead of the row's.
	Salt int
	// Column is the encrypted column to decrypt, nil for a plain value.
	Column *catalog.Column
}

// SelectPlan is the rewritten form of a SELECT over a table with encrypted
// columns.
type SelectPlan struct {
	SQL     string
	Columns []ResultColumn
	// Salt is the server column holding each row's salt (-1 when no
	// encrypted column is projected). It is not shown to the client.
	Salt int
}

// PlanSelect rewrites a SELECT that reads one table with encrypted
// columns. Encrypted columns may be projected (by name, t.name, * or t.*,
// with or without an alias); they are decrypted by the proxy. Any other use
// of an encrypted column (WHERE, ORDER BY, GROUP BY, expressions, ...) is
// refused with 0A000 naming the clause and the column, for now.
func PlanSelect(st Statement, t *catalog.Table) (*SelectPlan, error) {
	sel := st.Tree.Stmt.GetSelectStmt()
	if sel == nil {
		return nil, Refusal("this statement on table %s with encrypted columns is not supported", t.Name)
	}
	if sel.Op != pg_query.SetOperation_SETOP_NONE {
		return nil, Refusal("UNION, INTERSECT and EXCEPT over table %s with encrypted columns are not supported yet", t.Name)
	}
	if sel.WithClause != nil || len(sel.FromClause) != 1 || sel.FromClause[0].GetRangeVar() == nil || sel.IntoClause != nil || len(sel.LockingClause) > 0 {
		return nil, Refusal("only SELECT ... FROM one table is supported over table %s with encrypted columns, for now", t.Name)
	}
	rv := sel.FromClause[0].GetRangeVar()
	qualifier := rv.Relname
	if rv.Alias != nil {
		qualifier = rv.Alias.Aliasname
	}
	isEncrypted := func(name string) *catalog.Column {
		if c := t.Column(name); c != nil && c.Policy != catalog.Plain {
			return c
		}
		return nil
	}
	// Clauses that may not touch encrypted columns (yet).
	clauses := []struct {
		name  string
		nodes []*pg_query.Node
	}{
		{"WHERE", []*pg_query.Node{sel.WhereClause}},
		{"GROUP BY", sel.GroupClause},
		{"HAVING", []*pg_query.Node{sel.HavingClause}},
		{"ORDER BY", sel.SortClause},
		{"DISTINCT", sel.DistinctClause},
		{"WINDOW", sel.WindowClause},
		{"LIMIT", []*pg_query.Node{sel.LimitCount, sel.LimitOffset}},
	}
	for _, cl := range clauses {
		for _, n := range cl.nodes {
			if n == nil {
				continue
			}
			var hit *catalog.Column
			walkColumnRefs(n.ProtoReflect(), func(name string) {
				if c := isEncrypted(name); c != nil && hit == nil {
					hit = c
				}
			})
			if hit != nil {
				return nil, Refusal("%s on encrypted column %s.%s is not supported yet", cl.name, t.Name, hit.Name)
			}
		}
	}

	p := &SelectPlan{Salt: -1}
	var targets []*pg_query.Node
	ref := func(name string) *pg_query.Node {
		return pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(qualifier), pg_query.MakeStrNode(name)}, -1)
	}
	add := func(val *pg_query.Node, alias string, out ResultColumn) {
		out.Server, out.Val, out.Salt = len(targets), -1, -1
		targets = append(targets, pg_query.MakeResTargetNodeWithNameAndVal(alias, val, -1))
		p.Columns = append(p.Columns, out)
	}
	addEncrypted := func(c *catalog.Column, alias string) error {
		_, layout, err := columnLayout(c)
		if err != nil {
			return err
		}
		add(ref(EqColumn(c.Name)), alias, ResultColumn{Name: alias, Column: c})
		for _, pc := range layout {
			switch pc.Suffix {
			case "_val":
				p.Columns[len(p.Columns)-1].Val = len(targets)
			case SaltSuffix:
				p.Columns[len(p.Columns)-1].Salt = len(targets)
			default:
				continue
			}
			targets = append(targets, pg_query.MakeResTargetNodeWithVal(ref(pc.Name), -1))
		}
		return nil
	}
	anyEncrypted := false
	for _, n := range sel.TargetList {
		rt := n.GetResTarget()
		if cr := rt.Val.GetColumnRef(); cr != nil {
			fields := cr.Fields
			last := fields[len(fields)-1]
			if last.GetAStar() != nil && (len(fields) == 1 || fieldName(fields[len(fields)-2]) == qualifier) {
				for i := range t.Columns {
					c := &t.Columns[i]
					if c.Policy == catalog.Plain {
						add(ref(c.Name), c.Name, ResultColumn{Name: c.Name})
					} else {
						if err := addEncrypted(c, c.Name); err != nil {
							return nil, err
						}
						anyEncrypted = true
					}
				}
				continue
			}
			if name := fieldName(last); name != "" && (len(fields) == 1 || fieldName(fields[len(fields)-2]) == qualifier) {
				if c := isEncrypted(name); c != nil {
					alias := rt.Name
					if alias == "" {
						alias = c.Name
					}
					if err := addEncrypted(c, alias); err != nil {
						return nil, err
					}
					anyEncrypted = true
					continue
				}
			}
		}
		var hit *catalog.Column
		walkColumnRefs(rt.Val.ProtoReflect(), func(name string) {
			if c := isEncrypted(name); c != nil && hit == nil {
				hit = c
			}
		})
		if hit != nil {
			return nil, Refusal("expression over encrypted column %s.%s in the select list is not supported yet", t.Name, hit.Name)
		}
		out := ResultColumn{Name: rt.Name, Val: -1, Salt: -1}
		out.Server = len(targets)
		targets = append(targets, n)
		p.Columns = append(p.Columns, out)
	}
	if anyEncrypted && (len(sel.GroupClause) > 0 || sel.HavingClause != nil) {
		return nil, Refusal("GROUP BY with encrypted columns of table %s in the select list is not supported yet", t.Name)
	}
	if anyEncrypted && plainDistinct(sel.DistinctClause) {
		return nil, Refusal("DISTINCT over encrypted columns of table %s is not supported yet", t.Name)
	}
	// ORDER BY and GROUP BY may name an output column by alias or position.
	for _, cl := range []struct {
		name  string
		nodes []*pg_query.Node
	}{{"ORDER BY", sel.SortClause}, {"GROUP BY", sel.GroupClause}} {
		for _, n := range cl.nodes {
			if sb := n.GetSortBy(); sb != nil {
				n = sb.Node
			}
			if c := outputColumn(n, p.Columns); c != nil {
				return nil, Refusal("%s on encrypted column %s.%s is not supported yet", cl.name, t.Name, c.Name)
			}
		}
	}
	if anyEncrypted {
		p.Salt = len(targets)
		targets = append(targets, pg_query.MakeResTargetNodeWithVal(ref(SaltColumn), -1))
	}
	sel.TargetList = targets
	sql, err := st.Deparse()
	if err != nil {
		return nil, err
	}
	p.SQL = sql
	return p, nil
}

func fieldName(n *pg_query.Node) string { return n.GetString_().GetSval() }

// plainDistinct reports whether a DISTINCT clause is DISTINCT (not
// DISTINCT ON): pg_query represents it as a list with one empty node.
func plainDistinct(distinct []*pg_query.Node) bool {
	return len(distinct) == 1 && (distinct[0] == nil || distinct[0].Node == nil)
}

// outputColumn returns the encrypted column an ORDER BY or GROUP BY item
// names through an output alias or a position, or nil.
func outputColumn(n *pg_query.Node, cols []ResultColumn) *catalog.Column {
	if c := n.GetAConst(); c != nil {
		if iv, ok := c.Val.(*pg_query.A_Const_Ival); ok {
			if k := int(iv.Ival.Ival); k >= 1 && k <= len(cols) {
				return cols[k-1].Column
			}
		}
		return nil
	}
	if cr := n.GetColumnRef(); cr != nil && len(cr.Fields) == 1 {
		name := fieldName(cr.Fields[0])
		for _, rc := range cols {
			if rc.Column != nil && rc.Name == name {
				return rc.Column
			}
		}
	}
	return nil
}

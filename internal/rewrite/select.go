package rewrite

import (
	"fmt"

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

// Projection maps the result rows of a rewritten statement (a SELECT list
// or a RETURNING list) to the columns the client sees.
type Projection struct {
	// Columns are the client's result columns, in the client's order.
	Columns []ResultColumn
	// Salt is the server column holding each row's salt (-1 when no
	// encrypted column is projected). It is not shown to the client.
	Salt int
}

// SelectPlan is the rewritten form of a SELECT over a table with encrypted
// columns.
type SelectPlan struct {
	SQL string
	Projection
}

// PlanSelect rewrites a SELECT that reads one table with encrypted
// columns. Encrypted columns may be projected (by name, t.name, * or t.*,
// with or without an alias); they are decrypted by the proxy. Any other use
// of an encrypted column (WHERE, ORDER BY, GROUP BY, expressions, whole-row
// references such as row_to_json(t), ...) is refused with 0A000 naming the
// clause and the column, for now. ORDER BY and DISTINCT ON positions (ORDER
// BY 2) are renumbered to the server's select list.
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
			if err := dmlFindRef(n, t, []string{qualifier}).clauseRefusal(t.Name, cl.name); err != nil {
				return nil, err
			}
		}
	}

	targets, proj, err := projectTargetList(sel.TargetList, t, qualifier, "the select list")
	if err != nil {
		return nil, err
	}
	p := &SelectPlan{Projection: proj}
	anyEncrypted := proj.Salt >= 0
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
	}{{"ORDER BY", sel.SortClause}, {"GROUP BY", sel.GroupClause}, {"DISTINCT ON", distinctOn(sel.DistinctClause)}} {
		for _, n := range cl.nodes {
			if sb := n.GetSortBy(); sb != nil {
				n = sb.Node
			}
			if c := outputColumn(n, p.Columns); c != nil {
				return nil, Refusal("%s on encrypted column %s.%s is not supported yet", cl.name, t.Name, c.Name)
			}
		}
	}
	// The server's select list has extra columns (salts, exact values), so
	// a position in ORDER BY, GROUP BY or DISTINCT ON must be renumbered;
	// they are only renumbered when encrypted columns moved them.
	if anyEncrypted {
		sortClause := make([]*pg_query.Node, len(sel.SortClause))
		for i, n := range sel.SortClause {
			sortClause[i] = n
			if sb := n.GetSortBy(); sb != nil {
				if pos := renumberPosition(sb.Node, p.Columns); pos != nil {
					sortClause[i] = &pg_query.Node{Node: &pg_query.Node_SortBy{SortBy: &pg_query.SortBy{
						Node: pos, SortbyDir: sb.SortbyDir, SortbyNulls: sb.SortbyNulls, UseOp: sb.UseOp, Location: sb.Location}}}
				}
			}
		}
		sel.SortClause = sortClause
		if on := distinctOn(sel.DistinctClause); on != nil {
			distinct := make([]*pg_query.Node, len(on))
			for i, n := range on {
				distinct[i] = n
				if pos := renumberPosition(n, p.Columns); pos != nil {
					distinct[i] = pos
				}
			}
			sel.DistinctClause = distinct
		}
	}
	sel.TargetList = targets
	sql, err := st.Deparse()
	if err != nil {
		return nil, fmt.Errorf("rewrite: deparsing SELECT over %s: %w", t.Name, err)
	}
	p.SQL = sql
	return p, nil
}

// projectTargetList rewrites a target list that reads table t (a SELECT
// list, or the RETURNING list of an INSERT, UPDATE or DELETE; qualifier is
// the name or alias by which the statement refers to t) into the server's
// target list and its Projection. An encrypted column, named alone or as
// qualifier.name, or expanded from * or qualifier.* in logical order,
// becomes its Eq onion (aliased to the client's name) followed by its
// exact-value copy (c__val) and salt override (c__salt) when its layout has
// them; the row salt is appended once, at the end, when any encrypted
// column is projected. Plain items stay as written. Any other expression
// over an encrypted column, or a whole-row reference to t, is refused,
// naming clause ("the select list", "RETURNING"). list is not modified.
func projectTargetList(list []*pg_query.Node, t *catalog.Table, qualifier, clause string) ([]*pg_query.Node, Projection, error) {
	p := Projection{Salt: -1}
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
	isEncrypted := func(name string) *catalog.Column {
		if c := t.Column(name); c != nil && c.Policy != catalog.Plain {
			return c
		}
		return nil
	}
	anyEncrypted := false
	for _, n := range list {
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
							return nil, Projection{}, err
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
						return nil, Projection{}, err
					}
					anyEncrypted = true
					continue
				}
			}
		}
		if err := dmlFindRef(rt.Val, t, []string{qualifier}).exprRefusal(t.Name, clause); err != nil {
			return nil, Projection{}, err
		}
		p.Columns = append(p.Columns, ResultColumn{Name: rt.Name, Server: len(targets), Val: -1, Salt: -1})
		targets = append(targets, n)
	}
	if anyEncrypted {
		p.Salt = len(targets)
		targets = append(targets, pg_query.MakeResTargetNodeWithVal(ref(SaltColumn), -1))
	}
	return targets, p, nil
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

// distinctOn returns the expressions of DISTINCT ON (...), or nil for no
// DISTINCT or a plain DISTINCT.
func distinctOn(distinct []*pg_query.Node) []*pg_query.Node {
	if len(distinct) == 0 || plainDistinct(distinct) {
		return nil
	}
	return distinct
}

// renumberPosition returns the server position of an ORDER BY or
// DISTINCT ON item that is an output position (an integer constant
// between 1 and len(cols)), or nil for any other item.
func renumberPosition(n *pg_query.Node, cols []ResultColumn) *pg_query.Node {
	c := n.GetAConst()
	if c == nil {
		return nil
	}
	iv, ok := c.Val.(*pg_query.A_Const_Ival)
	if !ok {
		return nil
	}
	k := int(iv.Ival.Ival)
	if k < 1 || k > len(cols) {
		return nil // the server reports the bad position
	}
	return pg_query.MakeAConstIntNode(int64(cols[k-1].Server+1), c.Location)
}

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
	// Table is Column's table (set by PlanQuery; nil elsewhere, where the
	// statement's one table is meant).
	Table *catalog.Table
	// RowSalt is the server column of the row salt of Column's table (set
	// by PlanQuery, -1 when not needed; Projection.Salt elsewhere).
	RowSalt int
	// Decode says how the value is computed (PlanQuery).
	Decode Decode
	// Count is the server column of the count that divides the sum of a
	// DecodeAvg column, -1 otherwise.
	Count int
	// Add is the server column of the Add onion of a DecodeValue column
	// that was incremented on the server (catalog.Column.Incremented), -1
	// otherwise (set by PlanQuery): where the Eq cell is NULL but this one
	// is not, the value is read from it.
	Add int
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
		if c.Incremented {
			return Refusal("%s of encrypted column %s.%s is not supported: UPDATE ... SET %s = %s + k ran on the server, and %s reads only the Eq onion", clause, t.Name, c.Name, c.Name, c.Name, clause)
		}
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

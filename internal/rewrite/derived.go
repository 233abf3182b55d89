package rewrite

import (
	"fmt"
	"slices"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// This file lets encrypted columns pass through the select lists of
// derived tables and CTEs. The server cannot compute on the values there
// either, so a derived table only forwards the physical columns of each
// encrypted output (under the output's name: x__eq, x__ord, ... and its
// source row's salt), and the enclosing query rewrites s.x as it would the
// source column: comparisons, grouping, ordering, aggregates and
// decryption all use the forwarded onions, and the layers it needs are
// peeled on the source table.
//
// Refused: encrypted outputs of grouped or DISTINCT subqueries (their
// values would be group representatives without salts), of set
// operations, and expressions over encrypted columns (as everywhere).

// derivedLevel rewrites the SELECT of a derived table or CTE and returns
// the encrypted columns it passes through (nil when its outputs are all
// plain). colnames is the column alias list (FROM (...) s(a, b), WITH
// s(a, b) AS ...): when the level passes encrypted columns through, the
// aliases are moved into its select list and the list is cleared.
func (q *planner) derivedLevel(sel *pg_query.SelectStmt, parent *scope, colnames *[]*pg_query.Node) (*derived, error) {
	if sel == nil {
		return nil, nil
	}
	if sel.Op != pg_query.SetOperation_SETOP_NONE || len(sel.ValuesLists) > 0 {
		_, err := q.selectLevel(sel, parent, modePlain)
		return nil, err
	}
	aliases := *colnames
	star := false
	for _, t := range sel.TargetList {
		if cr := t.GetResTarget().GetVal().GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			star = true
		}
	}
	var saved []string
	if len(aliases) > 0 && !star && len(aliases) <= len(sel.TargetList) {
		for i, a := range aliases {
			rt := sel.TargetList[i].GetResTarget()
			saved = append(saved, rt.Name)
			rt.Name = fieldName(a)
		}
	}
	if _, err := q.selectLevel(sel, parent, modeDerived); err != nil {
		return nil, err
	}
	d := q.derivedOf[sel]
	switch {
	case d == nil && saved != nil:
		// Nothing passed through: the statement stays as written.
		for i, name := range saved {
			sel.TargetList[i].GetResTarget().Name = name
		}
	case d != nil && len(aliases) > 0 && saved == nil:
		return nil, Refusal("column aliases on a subquery that passes encrypted column %s through are not supported together with * or more aliases than columns", firstEnc(d).name())
	case d != nil:
		*colnames = nil
	}
	return d, nil
}

// firstEnc returns an encrypted output of d, for messages.
func firstEnc(d *derived) *encCol {
	for _, n := range d.names {
		if c := d.enc[n]; c != nil {
			return c
		}
	}
	return nil
}

// passThrough is encrypted column c as output name of a derived table or
// CTE: the select list items forwarding its physical columns and its
// row's salt.
func (l *level) passThrough(c *encCol, name string) ([]*pg_query.Node, error) {
	if l.isGrouped() || plainDistinct(l.sel.DistinctClause) {
		return nil, Refusal("encrypted column %s in the select list of a grouped or DISTINCT subquery or CTE is not supported", c.name())
	}
	d := l.derivedOut()
	if d.enc[name] != nil || d.internal[name] || name != "" && slices.Contains(d.names, name) {
		return nil, Refusal("output name %s appears twice in a subquery or CTE that passes encrypted column %s through", name, c.name())
	}
	_, layout, err := columnLayout(c.col)
	if err != nil {
		return nil, err
	}
	var out []*pg_query.Node
	for _, pc := range layout {
		phys := physicalPrefix(name) + pc.Suffix
		out = append(out, pg_query.MakeResTargetNodeWithNameAndVal(phys, c.ref(pc.Suffix), -1))
		d.internal[phys] = true
	}
	key := c.qualifier + "." + c.saltName()
	salt, ok := l.saltNames[key]
	if !ok {
		salt = SaltColumn
		if len(l.saltNames) > 0 {
			salt = fmt.Sprintf("%s%d", SaltColumn, len(l.saltNames)+1)
		}
		if l.saltNames == nil {
			l.saltNames = map[string]string{}
		}
		l.saltNames[key] = salt
		out = append(out, pg_query.MakeResTargetNodeWithNameAndVal(salt, c.saltRef(), -1))
		d.internal[salt] = true
	}
	d.names = append(d.names, name)
	d.enc[name] = &encCol{table: c.table, col: c.col, alias: name, rowSalt: salt}
	l.outs = append(l.outs, output{kind: outValue, name: name, c: c})
	return out, nil
}

// derivedOut returns the level's pass-through outputs, created on first
// use and registered for derivedLevel.
func (l *level) derivedOut() *derived {
	d := l.q.derivedOf[l.sel]
	if d == nil {
		d = &derived{enc: map[string]*encCol{}, internal: map[string]bool{}, names: l.plainNames}
		if l.q.derivedOf == nil {
			l.q.derivedOf = map[*pg_query.SelectStmt]*derived{}
		}
		l.q.derivedOf[l.sel] = d
	}
	return d
}

// notePlainOutput records a plain output of a derived level by name (""
// when its name is not known), after its encrypted outputs exist.
func (l *level) notePlainOutput(rt *pg_query.ResTarget) {
	if l.mode != modeDerived {
		return
	}
	d := l.q.derivedOf[l.sel]
	name := outputName(rt)
	if d != nil {
		d.names = append(d.names, name)
		return
	}
	l.plainNames = append(l.plainNames, name)
}

// outputName is the column name PostgreSQL gives a select list item, ""
// when it would be "?column?".
func outputName(rt *pg_query.ResTarget) string {
	if rt.Name != "" {
		return rt.Name
	}
	name, _ := figureColname(rt.Val)
	return name
}

// figureColname names an expression as PostgreSQL's FigureColname does:
// the strength is 2 for a column's or function's name, 1 for a fallback
// (a type's name, "case"), 0 for none.
func figureColname(n *pg_query.Node) (string, int) {
	if n == nil {
		return "", 0
	}
	switch x := n.Node.(type) {
	case *pg_query.Node_ColumnRef:
		f := x.ColumnRef.Fields
		if f[len(f)-1].GetAStar() != nil {
			return "", 0
		}
		return fieldName(f[len(f)-1]), 2
	case *pg_query.Node_FuncCall:
		names := stringList(x.FuncCall.Funcname)
		return names[len(names)-1], 2
	case *pg_query.Node_TypeCast:
		name, strength := figureColname(x.TypeCast.Arg)
		if strength <= 1 && x.TypeCast.TypeName != nil {
			names := stringList(x.TypeCast.TypeName.Names)
			return names[len(names)-1], 1
		}
		return name, strength
	case *pg_query.Node_CaseExpr:
		name, strength := figureColname(x.CaseExpr.Defresult)
		if strength <= 1 {
			return "case", 1
		}
		return name, strength
	case *pg_query.Node_CoalesceExpr:
		return "coalesce", 2
	case *pg_query.Node_MinMaxExpr:
		if x.MinMaxExpr.Op == pg_query.MinMaxOp_IS_LEAST {
			return "least", 2
		}
		return "greatest", 2
	case *pg_query.Node_AExpr:
		if x.AExpr.Kind == pg_query.A_Expr_Kind_AEXPR_NULLIF {
			return "nullif", 2
		}
	case *pg_query.Node_SubLink:
		switch x.SubLink.SubLinkType {
		case pg_query.SubLinkType_EXISTS_SUBLINK:
			return "exists", 2
		case pg_query.SubLinkType_ARRAY_SUBLINK:
			return "array", 2
		case pg_query.SubLinkType_EXPR_SUBLINK:
			if sel := x.SubLink.Subselect.GetSelectStmt(); sel != nil && len(sel.TargetList) == 1 {
				if rt := sel.TargetList[0].GetResTarget(); rt.Name != "" {
					return rt.Name, 2
				} else {
					return figureColname(rt.Val)
				}
			}
		}
	}
	return "", 0
}

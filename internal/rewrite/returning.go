package rewrite

import (
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pgonion/pgonion/internal/catalog"
)

// This file holds what INSERT, UPDATE and DELETE share: their RETURNING
// lists and the checks that a clause does not touch encrypted columns.

// dmlRef is the first use of a table's encrypted data found in a parse
// tree (see dmlFindRef); the zero value means none.
type dmlRef struct {
	// column is the encrypted column referenced by name.
	column string
	// row is the name of a whole-row reference to the table (t, t.* or a
	// nested *), which would expose its physical columns.
	row string
}

// dmlFindRef returns the first reference in n (nil allowed) to an encrypted
// column of t, or to a whole row of t. Column references count by their
// last name, so a column of another table that has the name of an
// encrypted column of t counts too: the check errs on the side of refusing.
// rows lists the names by which the statement refers to t's whole row (its
// name or alias, "excluded" in ON CONFLICT DO UPDATE); n is taken to read t
// itself, so a bare * in it (below the top of a target list, which the
// caller expands) is a whole-row reference too. A subquery of n that reads
// t adds its names for t to rows; a bare * in it counts only then.
func dmlFindRef(n *pg_query.Node, t *catalog.Table, rows []string) dmlRef {
	if n == nil {
		return dmlRef{}
	}
	w := dmlRefWalker{t: t}
	w.walk(n.ProtoReflect(), rows, true)
	return w.found
}

type dmlRefWalker struct {
	t     *catalog.Table
	found dmlRef
	// exists are the * items of EXISTS (SELECT * ...) subqueries, whose
	// values nobody reads.
	exists []*pg_query.ColumnRef
}

// walk looks for references in m; rows are the names of t's whole row in
// scope, readsT whether the innermost query reads t.
func (w *dmlRefWalker) walk(m protoreflect.Message, rows []string, readsT bool) {
	if w.found != (dmlRef{}) {
		return
	}
	switch n := m.Interface().(type) {
	case *pg_query.ColumnRef:
		if !slices.Contains(w.exists, n) {
			w.columnRef(n, rows, readsT)
		}
		return
	case *pg_query.SubLink:
		if sel := n.Subselect.GetSelectStmt(); sel != nil && n.SubLinkType == pg_query.SubLinkType_EXISTS_SUBLINK {
			for _, item := range sel.TargetList {
				if cr := item.GetResTarget().GetVal().GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
					w.exists = append(w.exists, cr)
				}
			}
		}
	case *pg_query.SelectStmt:
		var names []string
		for _, f := range n.FromClause {
			names = append(names, dmlNamesOfTable(f, w.t)...)
		}
		readsT = len(names) > 0
		rows = append(slices.Clip(rows), names...)
	}
	children(m, func(c protoreflect.Message) { w.walk(c, rows, readsT) })
}

func (w *dmlRefWalker) columnRef(cr *pg_query.ColumnRef, rows []string, readsT bool) {
	fields := cr.Fields
	if len(fields) == 0 {
		return
	}
	last := fields[len(fields)-1]
	switch {
	case last.GetAStar() != nil:
		if len(fields) == 1 && readsT {
			w.found.row = "*"
		} else if len(fields) > 1 && slices.Contains(rows, fieldName(fields[len(fields)-2])) {
			w.found.row = fieldName(fields[len(fields)-2]) + ".*"
		}
	case len(fields) == 1 && slices.Contains(rows, fieldName(last)) && w.t.Column(fieldName(last)) == nil:
		w.found.row = fieldName(last)
	default:
		if c := w.t.Column(fieldName(last)); c != nil && c.Policy != catalog.Plain {
			w.found.column = c.Name
		}
	}
}

// dmlNamesOfTable returns the names (alias, or table name) under which a
// FROM item reads t directly, looking into joins but not subqueries.
func dmlNamesOfTable(from *pg_query.Node, t *catalog.Table) []string {
	switch n := from.GetNode().(type) {
	case *pg_query.Node_RangeVar:
		if slices.Contains(dmlTableNames(t), n.RangeVar.Relname) {
			if n.RangeVar.Alias != nil {
				return []string{n.RangeVar.Alias.Aliasname}
			}
			return []string{n.RangeVar.Relname}
		}
	case *pg_query.Node_JoinExpr:
		return append(dmlNamesOfTable(n.JoinExpr.Larg, t), dmlNamesOfTable(n.JoinExpr.Rarg, t)...)
	}
	return nil
}

// clauseRefusal is the refusal of a clause (WHERE, FROM, ...) holding r,
// or nil when r is the zero dmlRef.
func (r dmlRef) clauseRefusal(table, clause string) error {
	switch {
	case r.column != "":
		return Refusal("%s on encrypted column %s.%s is not supported yet", clause, table, r.column)
	case r.row != "":
		return Refusal("whole-row reference %s to table %s with encrypted columns in %s is not supported", r.row, table, clause)
	}
	return nil
}

// exprRefusal is the refusal of an expression holding r in a list (the
// select list, RETURNING, SET), or nil when r is the zero dmlRef.
func (r dmlRef) exprRefusal(table, list string) error {
	switch {
	case r.column != "":
		return Refusal("expression over encrypted column %s.%s in %s is not supported yet", table, r.column, list)
	case r.row != "":
		return Refusal("whole-row reference %s to table %s with encrypted columns in %s is not supported", r.row, table, list)
	}
	return nil
}

// dmlParams returns the numbers of the parameters ($n) a parse tree
// references.
func dmlParams(m protoreflect.Message, into map[int]bool) {
	inspect(m, func(m protoreflect.Message) bool {
		if pr, ok := m.Interface().(*pg_query.ParamRef); ok {
			into[int(pr.Number)] = true
			return false
		}
		return true
	})
}

// dmlCheckParams refuses a client parameter that feeds an encrypted column
// (a hole) and is also referenced by the rest of the statement (rest: the
// nodes sent to the server as written): its plaintext would reach the
// server there.
func dmlCheckParams(holes []Hole, table string, rest ...protoreflect.Message) error {
	used := map[int]bool{}
	for _, m := range rest {
		dmlParams(m, used)
	}
	for _, h := range holes {
		if h.Param > 0 && used[h.Param] {
			return Refusal("parameter $%d is the value of encrypted column %s.%s and is also used elsewhere in the statement, where the server would see it; use a separate parameter", h.Param, table, h.Column.Name)
		}
	}
	return nil
}

// dmlReturning plans the RETURNING list of an INSERT, UPDATE or DELETE on
// t (see projectTargetList): it returns the server's RETURNING list and
// the projection, or nil and nil without RETURNING. qualifier is the name
// or alias of the target table. A bare * is refused when the statement
// has other tables (FROM, USING), since it would also expand to theirs.
func dmlReturning(list []*pg_query.Node, t *catalog.Table, qualifier string, otherTables bool) ([]*pg_query.Node, *Projection, error) {
	if len(list) == 0 {
		return nil, nil, nil
	}
	if otherTables {
		for _, n := range list {
			if cr := n.GetResTarget().Val.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetAStar() != nil {
				return nil, nil, Refusal("RETURNING * with other tables on table %s with encrypted columns is not supported; use RETURNING %s.*", t.Name, qualifier)
			}
		}
	}
	targets, p, err := projectTargetList(list, t, qualifier, "RETURNING")
	if err != nil {
		return nil, nil, err
	}
	return targets, &p, nil
}

// dmlCheckWith refuses a WITH clause of an INSERT, UPDATE or DELETE on t
// that could touch t's encrypted data: a data-modifying statement (whose
// SET or VALUES could carry plaintext) or a reference to an encrypted
// column or a whole row of t.
func dmlCheckWith(w *pg_query.WithClause, t *catalog.Table, statement string) error {
	if w == nil {
		return nil
	}
	for _, n := range w.Ctes {
		cte := n.GetCommonTableExpr()
		if cte == nil {
			continue
		}
		switch cte.Ctequery.GetNode().(type) {
		case *pg_query.Node_InsertStmt, *pg_query.Node_UpdateStmt, *pg_query.Node_DeleteStmt, *pg_query.Node_MergeStmt:
			return Refusal("data-modifying WITH query %s in %s on table %s with encrypted columns is not supported", cte.Ctename, statement, t.Name)
		}
		if err := dmlFindRef(cte.Ctequery, t, dmlTableNames(t)).clauseRefusal(t.Name, "WITH"); err != nil {
			return err
		}
	}
	return nil
}

// dmlTableNames are the names by which a statement may name t's whole row
// when it reads t without an alias.
func dmlTableNames(t *catalog.Table) []string {
	if t.Physical != "" && t.Physical != t.Name {
		return []string{t.Name, t.Physical}
	}
	return []string{t.Name}
}

// dmlOtherTables checks the extra tables of UPDATE ... FROM or
// DELETE ... USING: they may not touch t's encrypted columns. It returns
// the aliases under which those tables name t itself (a self-join), which
// are further names of t's whole row.
func dmlOtherTables(items []*pg_query.Node, t *catalog.Table, clause string) ([]string, error) {
	var aliases []string
	for _, n := range items {
		aliases = append(aliases, dmlNamesOfTable(n, t)...)
	}
	for _, n := range items {
		// The FROM items themselves read other tables: a bare * in a
		// subquery of theirs is checked by the subquery's own scope.
		w := dmlRefWalker{t: t}
		w.walk(n.ProtoReflect(), aliases, false)
		if err := w.found.clauseRefusal(t.Name, clause); err != nil {
			return nil, err
		}
	}
	return aliases, nil
}

// dmlInternalColumn reports whether name is a physical column of t that
// only the proxy may write: the row salt, or an onion or salt override
// column of an encrypted column (owner__eq, owner__salt, ...).
func dmlInternalColumn(t *catalog.Table, name string) bool {
	if name == SaltColumn {
		return true
	}
	if t.Column(name) != nil {
		return false
	}
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.Policy != catalog.Plain && strings.HasPrefix(name, physicalPrefix(c.Name)+"_") {
			return true
		}
	}
	return false
}

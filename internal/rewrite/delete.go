package rewrite

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
)

// DeletePlan is the rewritten form of a DELETE from a table with encrypted
// columns.
type DeletePlan struct {
	// SQL is the statement to send to the server.
	SQL string
	// Returning maps the rows of RETURNING to the client's columns; nil
	// without RETURNING.
	Returning *Projection
	// Where are the comparison values of WHERE to encrypt, and Needs the
	// onion layers WHERE needs; with holes, SQL is empty: use Render.
	Where []CmpHole
	Needs []Need

	stmt    *pg_query.Node
	version int32
}

// Deparse returns the server SQL as the holes are now (see FillHoles).
func (p *DeletePlan) Deparse() (string, error) { return deparseNode(p.stmt, p.version) }

// Render returns the server SQL with the WHERE holes filled with vals.
func (p *DeletePlan) Render(vals []*pg_query.Node) (string, error) {
	if err := FillHoles(p.Where, vals); err != nil {
		return "", err
	}
	return deparseNode(p.stmt, p.version)
}

// PlanDelete rewrites DELETE FROM t [USING ...] [WHERE ...] [RETURNING
// ...] for a table with encrypted columns. st is not modified.
//
// WHERE (including WHERE CURRENT OF), USING and WITH may not touch
// encrypted columns, nor may WITH modify data; column references count by
// name, as in PlanUpdate, and other tables in USING are not looked up (the
// caller must refuse or plan those with encrypted columns of their own).
// RETURNING projects encrypted columns like SELECT (see projectTargetList);
// RETURNING * is refused with USING, where it would expand to the other
// tables' columns too. Anything else touching an encrypted column is
// refused with 0A000.
func PlanDelete(st Statement, t *catalog.Table) (*DeletePlan, error) {
	del := st.Tree.Stmt.GetDeleteStmt()
	if del == nil {
		return nil, fmt.Errorf("rewrite: not a DELETE statement")
	}
	qualifier := del.Relation.Relname
	if del.Relation.Alias != nil {
		qualifier = del.Relation.Alias.Aliasname
	}
	if err := dmlCheckWith(del.WithClause, t, "DELETE"); err != nil {
		return nil, err
	}
	selfAliases, err := dmlOtherTables(del.UsingClause, t, "USING")
	if err != nil {
		return nil, err
	}
	rows := append([]string{qualifier}, selfAliases...)
	var where []CmpHole
	var needs []Need
	if len(del.UsingClause) == 0 && del.WhereClause.GetCurrentOfExpr() == nil {
		if where, needs, err = planDMLWhere(del.WhereClause, t, qualifier); err != nil {
			return nil, err
		}
	} else if err := dmlFindRef(del.WhereClause, t, rows).clauseRefusal(t.Name, "WHERE"); err != nil {
		return nil, err
	}
	returning, proj, err := dmlReturning(del.ReturningList, t, qualifier, len(del.UsingClause) > 0)
	if err != nil {
		return nil, err
	}
	d := &pg_query.DeleteStmt{
		Relation:      del.Relation,
		UsingClause:   del.UsingClause,
		WhereClause:   del.WhereClause,
		ReturningList: returning,
		WithClause:    del.WithClause,
	}
	stmt := &pg_query.Node{Node: &pg_query.Node_DeleteStmt{DeleteStmt: d}}
	if len(where) > 0 {
		return &DeletePlan{Returning: proj, Where: where, Needs: needs, stmt: stmt, version: st.version}, nil
	}
	sql, err := deparseNode(stmt, st.version)
	if err != nil {
		return nil, fmt.Errorf("rewrite: deparsing DELETE from %s: %w", t.Name, err)
	}
	return &DeletePlan{SQL: sql, Returning: proj, Needs: needs, stmt: stmt, version: st.version}, nil
}

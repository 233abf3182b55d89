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
	if err := dmlFindRef(del.WhereClause, t, rows).clauseRefusal(t.Name, "WHERE"); err != nil {
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
	sql, err := deparseNode(&pg_query.Node{Node: &pg_query.Node_DeleteStmt{DeleteStmt: d}}, st.version)
	if err != nil {
		return nil, fmt.Errorf("rewrite: deparsing DELETE from %s: %w", t.Name, err)
	}
	return &DeletePlan{SQL: sql, Returning: proj}, nil
}

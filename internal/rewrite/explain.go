package rewrite

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// EXPLAIN of a statement over encrypted columns shows the plan of the
// statement the proxy sends the server in its place (its physical
// columns, c__eq and the like, say so): the engine plans the explained
// statement (Explained) as it would run it, and explains that
// (ExplainOf).

// Explained returns the statement EXPLAIN st explains, as a statement
// of its own; ok is false when st is not an EXPLAIN.
func Explained(st Statement) (inner Statement, ok bool, err error) {
	es := st.Tree.GetStmt().GetExplainStmt()
	if es == nil || es.Query == nil {
		return Statement{}, false, nil
	}
	sql, err := deparseNode(es.Query, st.version)
	if err != nil {
		return Statement{}, true, fmt.Errorf("rewrite: deparsing the statement EXPLAIN explains: %w", err)
	}
	sts, err := Parse(sql)
	if err != nil || len(sts) != 1 {
		return Statement{}, true, fmt.Errorf("rewrite: reparsing the statement EXPLAIN explains: %v", err)
	}
	return sts[0], true, nil
}

// ExplainOf returns EXPLAIN, with st's options, of the statement sql
// (one statement: the physical form of the one st explains).
func ExplainOf(st Statement, sql string) (string, error) {
	es := st.Tree.GetStmt().GetExplainStmt()
	sts, err := Parse(sql)
	if err != nil || len(sts) != 1 {
		return "", Refusal("EXPLAIN of a statement the proxy sends the server as several statements is not supported")
	}
	out := &pg_query.ExplainStmt{Query: sts[0].Tree.Stmt, Options: es.Options}
	return deparseNode(&pg_query.Node{Node: &pg_query.Node_ExplainStmt{ExplainStmt: out}}, st.version)
}

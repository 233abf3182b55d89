package engine

import (
	"github.com/pgonion/pgonion/internal/rewrite"
)

// planExplain plans EXPLAIN of a statement over encrypted columns: the
// statement is planned as it would run (its comparison values encrypted
// at Bind, subqueries evaluated first, ...) and the server explains the
// statement the proxy would send it. Its rows come back unchanged: a
// plan of the physical statement, over the onion columns. EXPLAIN
// ANALYZE runs that statement, as PostgreSQL runs the explained one.
func (s *session) planExplain(st rewrite.Statement, ext *extended) (*stmtPlan, error) {
	inner, _, err := rewrite.Explained(st)
	if err != nil {
		return nil, err
	}
	p, err := s.plan(inner, ext)
	if err != nil || p == nil {
		return nil, err // nil: nothing encrypted, the EXPLAIN passes through
	}
	if p.copyIn != nil || len(p.before) > 0 {
		return nil, rewrite.Refusal("EXPLAIN of %s over encrypted columns is not supported: the proxy runs it as several statements", statementName(inner))
	}
	sql, err := rewrite.ExplainOf(st, p.sql)
	if err != nil {
		return nil, err
	}
	if ext != nil {
		// The plan's rows are the server's: nothing to decrypt.
		ext.results, ext.resultFmts = nil, nil
	}
	return &stmtPlan{sql: sql}, nil
}

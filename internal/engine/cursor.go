package engine

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// Server-side cursors over encrypted columns (Django's
// QuerySet.iterator(), psycopg's named cursors): DECLARE c CURSOR FOR
// <query> declares the cursor over the query the server runs for it (its
// comparison values encrypted, as for the query itself), and each FETCH
// from c is decrypted with the query's projection. A query whose rows
// the proxy filters, sorts or computes (split execution, proxy-side
// LIMIT) is held by the proxy (heldcursor.go).

// planDeclare plans DECLARE ... CURSOR FOR <query>.
func (s *session) planDeclare(st rewrite.Statement, ext *extended) (*stmtPlan, error) {
	dc := st.Tree.Stmt.GetDeclareCursorStmt()
	if dc == nil || dc.Query == nil {
		return nil, fmt.Errorf("engine: not a DECLARE CURSOR")
	}
	sql, err := st.DeparseNode(dc.Query)
	if err != nil {
		return nil, err
	}
	sts, err := rewrite.Parse(sql)
	if err != nil || len(sts) != 1 {
		return nil, fmt.Errorf("engine: reparsing a cursor's query: %v", err)
	}
	p, err := s.plan(sts[0], ext)
	if err != nil || p == nil {
		if err == nil {
			s.forgetCursor(dc.Portalname) // the rows need no decryption
		}
		return nil, err
	}
	if len(p.before) > 0 {
		return nil, rewrite.Refusal("DECLARE CURSOR %s over a query with subqueries the proxy evaluates first is not supported; run the query itself", dc.Portalname)
	}
	s.forgetCursor(dc.Portalname)
	var held *heldCursor
	if p.proj == nil || p.proj.proxyRows() {
		if held, err = s.holdCursor(dc, p, ext); err != nil {
			return nil, err
		}
	}
	q, err := rewrite.Parse(p.sql)
	if err != nil || len(q) != 1 {
		return nil, fmt.Errorf("engine: reparsing a cursor's planned query: %v", err)
	}
	out := proto.Clone(dc).(*pg_query.DeclareCursorStmt)
	out.Query = q[0].Tree.Stmt
	sql, err = st.DeparseNode(&pg_query.Node{Node: &pg_query.Node_DeclareCursorStmt{DeclareCursorStmt: out}})
	if err != nil {
		return nil, err
	}
	if held == nil && p.proj == nil {
		if ext != nil {
			ext.results, ext.resultFmts = nil, nil
		}
		return &stmtPlan{sql: sql}, nil // rows as the server gives them
	}
	if held != nil {
		if s.held == nil {
			s.held = map[string]*heldCursor{}
		}
		s.held[dc.Portalname] = held
		return &stmtPlan{sql: sql}, nil
	}
	if ext != nil {
		// DECLARE returns no rows; its FETCHes do.
		ext.results, ext.resultFmts = nil, nil
	}
	if s.cursors == nil {
		s.cursors = map[string]*projection{}
	}
	s.cursors[dc.Portalname] = p.proj
	return &stmtPlan{sql: sql}, nil
}

// planFetch decrypts the rows a FETCH returns from a cursor declared
// over encrypted columns; MOVE and other cursors pass through.
func (s *session) planFetch(st rewrite.Statement, ext *extended) (*stmtPlan, error) {
	f := st.Tree.Stmt.GetFetchStmt()
	if c := s.held[f.GetPortalname()]; c != nil {
		return s.planHeldFetch(f, c, ext)
	}
	proj := s.cursors[f.GetPortalname()]
	if f == nil || f.Ismove || proj == nil {
		return nil, nil
	}
	sp := &stmtPlan{sql: st.SQL}
	s.returnRows(sp, proj, ext)
	return sp, nil
}

// planClose forgets a closed cursor (CLOSE ALL: every one).
func (s *session) planClose(st rewrite.Statement) {
	if c := st.Tree.Stmt.GetClosePortalStmt(); c != nil {
		if c.Portalname == "" {
			clear(s.cursors)
			clear(s.held)
		} else {
			s.forgetCursor(c.Portalname)
		}
	}
}

func (s *session) forgetCursor(name string) {
	delete(s.cursors, name)
	delete(s.held, name)
}

// DescribePortal implements wire.PortalDescriber: a Describe of a cursor
// declared over encrypted columns gets the cursor's columns as its
// FETCHes return them, not the onion columns of the query the server
// runs for it.
func (s *session) DescribePortal(name string) wire.ResultRewriter {
	if c := s.held[name]; c != nil {
		return &heldFetch{c: c, ext: true, params: &s.params}
	}
	proj := s.cursors[name]
	if proj == nil {
		return nil
	}
	return &decrypter{p: proj, params: &s.params}
}

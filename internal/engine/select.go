package engine

import (
	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// planSelect rewrites a SELECT over one table; the proxy decrypts the
// projected encrypted columns.
func (s *session) planSelect(st rewrite.Statement, t *catalog.Table, ext *extended) (*stmtPlan, error) {
	p, err := rewrite.PlanSelect(st, t)
	if err != nil {
		return nil, err
	}
	proj, err := s.e.newProjection(t, p.Columns, p.Salt)
	if err != nil {
		return nil, err
	}
	sp := &stmtPlan{sql: p.SQL}
	s.returnRows(sp, proj, ext)
	return sp, nil
}

// returnRows arranges for the rows of a statement to be decrypted: for the
// simple protocol (text results) or, in the extended protocol, per portal
// in the formats its Bind asks for.
func (s *session) returnRows(sp *stmtPlan, proj *projection, ext *extended) {
	if ext == nil {
		sp.results = &decrypter{p: proj, params: &s.params}
		return
	}
	ext.resultFmts = proj.serverFormats
	ext.results = func(formats []int16) wire.ResultRewriter {
		// formats == nil: Describe of the statement, rows never follow.
		return &decrypter{p: proj, params: &s.params, formats: formats, serverBinary: true}
	}
}

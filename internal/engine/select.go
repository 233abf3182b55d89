package engine

import (
	"github.com/pgonion/pgonion/internal/wire"
)

// returnRows arranges for the rows of a statement to be decrypted: for the
// simple protocol (text results) or, in the extended protocol, per portal
// in the formats its Bind asks for.
func (s *session) returnRows(sp *stmtPlan, proj *projection, ext *extended) {
	if ext == nil {
		sp.results = &decrypter{p: proj, params: &s.params}
		return
	}
	ext.resultFmts = func(client []int16) ([]int16, error) {
		if err := s.e.checkIncremented(nil, proj); err != nil {
			return nil, err
		}
		return proj.serverFormats(client)
	}
	ext.results = func(formats []int16) wire.ResultRewriter {
		// formats == nil: Describe of the statement, rows never follow.
		return &decrypter{p: proj, params: &s.params, formats: formats, serverBinary: true}
	}
}

package engine

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/shape"
	"github.com/pgonion/pgonion/internal/wire"
)

// A simple-protocol statement is planned by its shape (package shape):
// its literals become parameters, the shape is planned as a Parse of
// the extended protocol would be (and kept in the plan cache), and the
// literals are bound to it as a Bind would bind them. Statements that
// differ only in their literals (pgbench's, sysbench's, an ORM's with
// inlined values) are then planned once per session instead of at every
// execution, which cost most of the proxy's time under -M simple.
//
// The server gets the plan's statement with each literal the plan
// passes through put back as the client wrote it (so PostgreSQL types it
// as it would have), and the rest (ciphertexts) as parameters of the
// extended protocol. A shape whose plan cannot be made or used this way
// is planned with its literals, as before, at that catalog version.

// literalShapesSize bounds the shapes a session remembers as planned
// with their literals; beyond it the set starts again empty.
const literalShapesSize = 256

// queryByShape plans sql by its shape: ok is false where it is not
// planned that way (the caller plans it with its literals). A nil plan
// with ok forwards sql unchanged.
func (s *session) queryByShape(sql string) (plan *wire.QueryPlan, ok bool, err error) {
	sh, ok := shape.Of(sql)
	if !ok {
		return nil, false, nil
	}
	key := newPlanKey(sh.SQL, sh.OIDs)
	version := s.e.cat.snapshot().Version
	if v, literal := s.literalShapes[key]; literal && v == version {
		return nil, false, nil
	}
	st, err := s.Parse("", sh.SQL, sh.OIDs)
	if err != nil {
		// Refused or failed with parameters: with its literals it may
		// plan (and otherwise fails with the error PostgreSQL gives).
		s.keepLiteral(key, version)
		return nil, false, nil
	}
	if st == nil || st.Bind == nil && st.Results == nil && st.CopyIn == nil && st.SQL == sh.SQL {
		return nil, true, nil // passes through
	}
	refs, ok := s.refsOf(st.SQL)
	if !ok || st.CopyIn != nil {
		s.keepLiteral(key, version)
		return nil, false, nil
	}
	if st.OnBind != nil {
		st.OnBind()
	}
	b := &pgproto3.Bind{Parameters: sh.Values, ResultFormatCodes: []int16{}}
	var rw wire.ResultRewriter
	if st.Results != nil {
		rw = st.Results(b.ResultFormatCodes)
	}
	if st.Bind != nil {
		// Bound, the statement may have run what it reads first (a
		// read-modify-write's locked read): its errors are the
		// statement's.
		if err := st.Bind(b); err != nil {
			return nil, true, err
		}
	}
	return boundQuery(st, sh, refs, b, rw), true, nil
}

// refsOf is shape.Refs(sql), remembered for the session: a plan's
// statement is read again at each execution of its shape (a
// microsecond for pgbench's INSERT).
func (s *session) refsOf(sql string) ([]shape.Ref, bool) {
	if refs, ok := s.shapeRefs[sql]; ok {
		return refs, refs != nil
	}
	refs, ok := shape.Refs(sql)
	if !ok {
		refs = nil
	} else if refs == nil {
		refs = []shape.Ref{} // read, without references
	}
	if s.shapeRefs == nil || len(s.shapeRefs) >= literalShapesSize {
		s.shapeRefs = map[string][]shape.Ref{}
	}
	s.shapeRefs[sql] = refs
	return refs, ok
}

// keepLiteral remembers that the shape key is planned with its literals
// at catalog version version.
func (s *session) keepLiteral(key planKey, version int64) {
	if s.literalShapes == nil || len(s.literalShapes) >= literalShapesSize {
		s.literalShapes = map[planKey]int64{}
	}
	s.literalShapes[key] = version
}

// boundQuery is the Query that runs st, planned for sh and bound as b:
// each parameter that still holds the client's literal, with the type
// the literal has, is that literal again; the others stay parameters,
// numbered in order of use.
func boundQuery(st *wire.Statement, sh shape.Shape, refs []shape.Ref, b *pgproto3.Bind, rw wire.ResultRewriter) *wire.QueryPlan {
	var (
		out   strings.Builder
		bound wire.Bound
		at    int
		renum []int // 1-based number in bound, 0 for none yet
	)
	n := len(b.Parameters)
	for _, r := range refs {
		n = max(n, r.N)
	}
	renum = make([]int, n)
	out.Grow(len(st.SQL) + 16*len(refs))
	for _, r := range refs {
		out.WriteString(st.SQL[at:r.Start])
		at = r.End
		i := r.N - 1
		var value []byte // not bound: NULL
		if i < len(b.Parameters) {
			value = b.Parameters[i]
		}
		var oid uint32
		if i < len(st.ParamOIDs) {
			oid = st.ParamOIDs[i]
		}
		if i < len(sh.Values) && oid == sh.OIDs[i] && formatOf(b.ParameterFormatCodes, i) == 0 &&
			value != nil && bytes.Equal(value, sh.Values[i]) {
			if tok := sh.Tokens[i]; tok[0] == '-' {
				// (-5): after an operator, =-5 would read as =- 5.
				out.WriteString("(" + tok + ")")
			} else {
				out.WriteString(tok)
			}
			continue
		}
		if renum[i] == 0 {
			bound.ParamOIDs = append(bound.ParamOIDs, oid)
			bound.ParamFormats = append(bound.ParamFormats, formatOf(b.ParameterFormatCodes, i))
			bound.Params = append(bound.Params, value)
			renum[i] = len(bound.Params)
		}
		out.WriteByte('$')
		out.WriteString(strconv.Itoa(renum[i]))
	}
	out.WriteString(st.SQL[at:])
	plan := &wire.QueryPlan{SQL: out.String(), Results: []wire.ResultRewriter{rw}}
	textResults := true
	for _, f := range b.ResultFormatCodes {
		textResults = textResults && f == 0
	}
	if len(bound.Params) > 0 || !textResults {
		bound.ResultFormats = b.ResultFormatCodes
		plan.Bound = &bound
	}
	return plan
}

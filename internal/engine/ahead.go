package engine

import (
	"slices"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// aheadQuery is a query the proxy runs ahead of a client's statement in
// the extended protocol, at each Bind, with the client's parameters: the
// read of an UPDATE it computes, a subquery it evaluates first. It runs
// held in the statement's transaction (wire.SideQuery.Hold), planned
// like a client's query (its comparison values encrypted by its plan,
// its rows decrypted).
type aheadQuery struct {
	ext    *extended // its plan's, nil when it passes through
	sql    string
	oids   []uint32 // its parameters' server types
	n      int      // the client's parameters it is given (1..n)
	unused []int    // those (0-based) it does not read: sent NULL
	// described are the types it gives the client's parameters, for a
	// Describe of the client's statement.
	described []uint32
	// resultOID is the type of its first column as the client would see
	// it, when asked for (0 when unknown).
	resultOID uint32
	// clock: sql returns the transaction's start after the columns
	// (withTxClock), taken off by run.
	clock bool
}

// describedFields keeps the columns of a Describe, as inner (the plan's
// rewriter, if any) rewrites them.
type describedFields struct {
	inner  wire.ResultRewriter
	fields []pgproto3.FieldDescription
}

func (d *describedFields) RowDescription(rd *pgproto3.RowDescription) error {
	if d.inner != nil {
		if err := d.inner.RowDescription(rd); err != nil {
			return err
		}
	}
	d.fields = slices.Clone(rd.Fields)
	return nil
}

func (d *describedFields) DataRow(*pgproto3.DataRow) error { return nil }

// prepareAhead plans st to run ahead of a statement whose client
// parameters have the declared types clientOIDs; typed asks for the type
// of its first column (resultOID).
func (s *session) prepareAhead(st rewrite.Statement, clientOIDs []uint32, typed bool) (*aheadQuery, error) {
	refs := rewrite.ParamRefs(st)
	q := &aheadQuery{n: len(clientOIDs)}
	for _, n := range refs {
		q.n = max(q.n, n)
	}
	qExt := &extended{oids: clientOIDs}
	p, err := s.plan(st.Clone(), qExt) // planning rewrites the tree
	if err != nil {
		return nil, err
	}
	q.sql, q.oids = st.SQL, clientOIDs
	if p != nil {
		q.sql, q.ext = p.sql, qExt
		if qExt.serverOIDs != nil {
			q.oids = qExt.serverOIDs
		}
	}
	// The parameters its server statement does not reference need a
	// type; those it does not read are sent NULL.
	q.oids = slices.Clone(q.oids)
	for len(q.oids) < q.n {
		q.oids = append(q.oids, 0)
	}
	if sts, err := rewrite.Parse(q.sql); err == nil && len(sts) == 1 {
		referenced := map[int]bool{}
		for _, n := range rewrite.ParamRefs(sts[0]) {
			referenced[n] = true
		}
		for i := range q.oids {
			if !referenced[i+1] && q.oids[i] == 0 {
				q.oids[i] = oidText
			}
		}
	}
	for i := range q.n {
		if !slices.Contains(refs, i+1) {
			q.unused = append(q.unused, i)
		}
	}
	q.described = q.oids
	if (slices.Contains(q.oids, 0) || typed) && s.describeQuery != nil && s.aheadOK {
		var rw wire.ResultRewriter
		var fields *describedFields
		if typed {
			fields = &describedFields{}
			if q.ext != nil && q.ext.results != nil {
				fields.inner = q.ext.results(nil) // the client's columns
			}
			rw = fields
		}
		if oids, err := s.describeQuery(q.sql, q.oids, rw); err == nil && len(oids) == len(q.oids) {
			q.described = oids
			if fields != nil && len(fields.fields) > 0 {
				q.resultOID = fields.fields[0].DataTypeOID
			}
		}
	}
	if q.ext != nil && q.ext.describe != nil {
		q.described = q.ext.describe(q.described)
	}
	return q, nil
}

// run runs the query with the client's parameters of b (Bind time) and
// returns its rows in text format, decrypted. wire.ErrExecUnavailable
// means it cannot run here (after other statements of the request
// cycle, outside a transaction block).
func (q *aheadQuery) run(s *session, b *pgproto3.Bind) (*subqueryRows, error) {
	rb := &pgproto3.Bind{Parameters: slices.Clone(b.Parameters[:min(q.n, len(b.Parameters))]), ParameterFormatCodes: slices.Clone(b.ParameterFormatCodes)}
	if len(rb.ParameterFormatCodes) > 1 {
		rb.ParameterFormatCodes = rb.ParameterFormatCodes[:min(q.n, len(rb.ParameterFormatCodes))]
	}
	for _, i := range q.unused {
		if i < len(rb.Parameters) {
			rb.Parameters[i] = nil
		}
	}
	var resultFmts []int16
	rows := &subqueryRows{}
	if q.ext != nil {
		// In the wire's order: the results' rewriter, then the Bind.
		var err error
		if q.ext.resultFmts != nil {
			if resultFmts, err = q.ext.resultFmts(nil); err != nil {
				return nil, err
			}
		}
		if q.ext.results != nil {
			rows.inner = q.ext.results(nil)
		}
		if q.ext.bind != nil {
			if err := q.ext.bind(rb); err != nil {
				return nil, err
			}
		}
	}
	var rw wire.ResultRewriter = rows
	if q.clock {
		rw = &clockTail{next: rows, s: s, epoch: s.epochBefore()}
		if len(resultFmts) > 1 {
			resultFmts = append(resultFmts[:len(resultFmts):len(resultFmts)], 0)
		}
	}
	// Held: its row locks last until the client's Execute, in one
	// transaction.
	side := wire.SideQuery{SQL: q.sql, ParamOIDs: q.oids, ParamFormats: rb.ParameterFormatCodes, Params: rb.Parameters, ResultFormats: resultFmts, Hold: true}
	if err := s.execQuery(side, rw); err != nil {
		return nil, err
	}
	return rows, rows.err
}

package engine

import (
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// Cursors whose rows the proxy computes (split execution, or a filter,
// sort or LIMIT the proxy applies). The server holds a cursor over the
// query's server part, so that DECLARE's errors, CLOSE and the end of the
// transaction behave as they do on the server; the first FETCH reads all
// of it (FETCH ALL), the proxy computes the result and holds its rows,
// and that FETCH and the next ones are answered from them (each still
// sends FETCH ALL, which returns nothing more but fails as the server
// would once the cursor is gone). Only forward fetches are answered:
// the proxy's rows are computed once, so MOVE, BACKWARD, ABSOLUTE and
// RELATIVE are refused. The held rows stay in the proxy's memory until
// the cursor is closed or declared again.

// heldCursor is one such cursor.
type heldCursor struct {
	name string
	// inner computes the result from the server's rows: the rewriter the
	// query itself would have (an aggregator, or a decrypter that
	// filters or sorts), made at DECLARE (simple protocol) or at its
	// Bind (extended: it carries the Bind's parameters).
	inner wire.ResultRewriter
	// serverFormats gives the formats a FETCH portal in the extended
	// protocol asks of the server: the query's own for text results
	// (onions in binary) when it was declared in the extended protocol;
	// nil (all text) otherwise.
	serverFormats func(client []int16) ([]int16, error)

	computed bool
	fields   []pgproto3.FieldDescription
	rows     []*pgproto3.DataRow
	pos      int // rows fetched
}

// heldFetch answers one FETCH from a held cursor (or a Describe of its
// portal).
type heldFetch struct {
	c    *heldCursor
	n    int64
	ext  bool // the FETCH came in the extended protocol
	sent int
	// formats are the client's result formats: the held rows are text,
	// converted for the binary ones.
	formats []int16
	params  *sessionParams
	// prepared is set once the cursor was set up for this FETCH.
	prepared bool
}

// holdCursor makes the held cursor of DECLARE dc over p, the plan of its
// query; ext's rewriters for the query's rows become the cursor's. It
// returns nil when the rows need no rewriting.
func (s *session) holdCursor(dc *pg_query.DeclareCursorStmt, p *stmtPlan, ext *extended) (*heldCursor, error) {
	c := &heldCursor{name: dc.Portalname}
	if dc.Options&cursorOptBinary != 0 {
		return nil, rewrite.Refusal("DECLARE BINARY CURSOR %s over a query whose rows the proxy computes is not supported; declare it without BINARY", dc.Portalname)
	}
	if ext == nil {
		if p.results == nil {
			return nil, nil // plain rows: the server's cursor as it is
		}
		c.inner = p.results
		c.serverFormats = func([]int16) ([]int16, error) { return nil, nil }
		return c, nil
	}
	mk, fmts := ext.results, ext.resultFmts
	if mk == nil {
		return nil, nil
	}
	c.serverFormats = func([]int16) ([]int16, error) {
		if fmts == nil {
			return nil, nil
		}
		return fmts(nil)
	}
	// DECLARE returns no rows; the rewriter made at its Bind (formats
	// not nil) carries the parameters its FETCHes compute with.
	ext.resultFmts = nil
	ext.results = func(formats []int16) wire.ResultRewriter {
		if formats != nil || c.inner == nil {
			c.inner = mk([]int16{})
		}
		return nil
	}
	return c, nil
}

// cursorOptBinary is PostgreSQL's CURSOR_OPT_BINARY.
const cursorOptBinary = 0x0001

// planHeldFetch plans FETCH from a held cursor: forward only.
func (s *session) planHeldFetch(f *pg_query.FetchStmt, c *heldCursor, ext *extended) (*stmtPlan, error) {
	if f.Ismove || f.Direction != pg_query.FetchDirection_FETCH_FORWARD || f.HowMany <= 0 {
		return nil, rewrite.Refusal("%s other than forward on cursor %s, whose rows the proxy computes, is not supported", fetchVerb(f), f.Portalname)
	}
	n := f.HowMany // FETCH ALL is math.MaxInt64
	sp := &stmtPlan{sql: "FETCH ALL FROM " + quoteIdent(f.Portalname)}
	if ext == nil {
		sp.results = &heldFetch{c: c, n: n}
		return sp, nil
	}
	ext.resultFmts = c.serverFormats
	ext.results = func(formats []int16) wire.ResultRewriter {
		return &heldFetch{c: c, n: n, ext: true, formats: formats, params: &s.params}
	}
	return sp, nil
}

func fetchVerb(f *pg_query.FetchStmt) string {
	if f.Ismove {
		return "MOVE"
	}
	return "FETCH"
}

// RowDescription gives the result's columns: computed from the server's
// until the first FETCH has computed the rows.
func (h *heldFetch) RowDescription(rd *pgproto3.RowDescription) error {
	c := h.c
	if c.computed {
		if c.fields == nil {
			return rewrite.Refusal("cursor %s was first fetched without a description of its rows; Describe the first FETCH's portal", c.name)
		}
		rd.Fields = h.withFormats(c.fields)
		return nil
	}
	h.prepare()
	if err := c.inner.RowDescription(rd); err != nil {
		return err
	}
	c.fields = slices.Clone(rd.Fields)
	rd.Fields = h.withFormats(c.fields)
	return nil
}

// withFormats is a copy of fields with this FETCH's result formats.
func (h *heldFetch) withFormats(fields []pgproto3.FieldDescription) []pgproto3.FieldDescription {
	out := slices.Clone(fields)
	for i := range out {
		out[i].Format = formatOf(h.formats, i)
	}
	return out
}

// encode converts the held text rows to this FETCH's result formats.
func (h *heldFetch) encode(rows []*pgproto3.DataRow) ([]*pgproto3.DataRow, error) {
	if !slices.Contains(h.formats, 1) {
		return rows, nil
	}
	env, err := h.params.get()
	if err != nil {
		return nil, err
	}
	types := make([]onion.Type, len(h.c.fields))
	for i, f := range h.c.fields {
		if formatOf(h.formats, i) != 1 {
			continue
		}
		t, ok := exec.TypeOfOID(f.DataTypeOID)
		if !ok {
			return nil, rewrite.Refusal("binary results of type OID %d from cursor %s, whose rows the proxy computes, are not supported; ask for text", f.DataTypeOID, h.c.name)
		}
		types[i] = t
	}
	out := make([]*pgproto3.DataRow, len(rows))
	for r, row := range rows {
		vals := slices.Clone(row.Values)
		for i, v := range vals {
			if v == nil || i >= len(types) || formatOf(h.formats, i) != 1 {
				continue
			}
			ov, err := types[i].ParseText(v, env)
			if err != nil {
				return nil, err
			}
			vals[i] = types[i].AppendBinary(nil, ov)
		}
		out[r] = &pgproto3.DataRow{Values: vals}
	}
	return out, nil
}

// prepare sets the inner rewriter up for this FETCH: text results, and
// onions from the server in binary where the FETCH asked for them.
func (h *heldFetch) prepare() {
	if h.prepared {
		return
	}
	h.prepared = true
	binary := false
	if h.ext {
		f, err := h.c.serverFormats(nil)
		binary = err == nil && slices.Contains(f, 1)
	}
	switch r := h.c.inner.(type) {
	case *aggregator:
		r.formats = nil
		for a := r; a != nil; a = a.src {
			if a.d != nil {
				a.d.serverBinary = binary
			}
		}
	case *decrypter:
		r.formats = nil
		r.serverBinary = binary
	}
}

// DataRow computes from the server's rows at the first FETCH; the rows
// the inner rewriter passes on are held.
func (h *heldFetch) DataRow(row *pgproto3.DataRow) error {
	c := h.c
	if c.computed {
		return wire.ErrSkipRow // the server's cursor was read to its end
	}
	h.prepare()
	if err := c.inner.DataRow(row); err != nil {
		return err
	}
	held := &pgproto3.DataRow{Values: make([][]byte, len(row.Values))}
	for i, v := range row.Values {
		if v != nil {
			held.Values[i] = slices.Clone(v)
		}
	}
	c.rows = append(c.rows, held)
	return wire.ErrSkipRow
}

// Release sends the FETCH's rows at the end.
func (h *heldFetch) Release(atEnd bool) ([]*pgproto3.DataRow, error) {
	if !atEnd {
		return nil, nil
	}
	c := h.c
	if !c.computed {
		h.prepare()
		if rel, ok := c.inner.(wire.RowReleaser); ok {
			rows, err := rel.Release(true)
			if err != nil {
				return nil, err
			}
			c.rows = append(c.rows, rows...)
		}
		c.computed = true
	}
	end := len(c.rows)
	if h.n < int64(end-c.pos) {
		end = c.pos + int(h.n)
	}
	out, err := h.encode(c.rows[c.pos:end])
	if err != nil {
		return nil, err
	}
	c.pos = end
	h.sent = len(out)
	return out, nil
}

// CommandTag reports the rows fetched.
func (h *heldFetch) CommandTag([]byte) []byte {
	return strconv.AppendInt([]byte("FETCH "), int64(h.sent), 10)
}

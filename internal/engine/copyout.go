package engine

import (
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/pgcopy"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// planCopyOut plans a COPY ... TO STDOUT over encrypted columns: the
// server runs its query as a client's SELECT would run (decrypted by the
// proxy, split execution included) and the client gets the rows as COPY
// data in its format (wire.CopyOut). The command tag counts the rows,
// as COPY's does.
func (s *session) planCopyOut(cp *rewrite.CopyOutPlan, ext *extended) (*stmtPlan, error) {
	if ext != nil {
		return nil, rewrite.Refusal("COPY ... TO STDOUT over encrypted columns is supported in the simple query protocol only")
	}
	p, err := s.plan(cp.Query, nil)
	if err != nil || p == nil {
		return nil, err // nil: no encrypted value is read, the COPY runs as it is
	}
	if cp.Refusal != nil {
		return nil, cp.Refusal
	}
	if len(p.before) > 0 || p.copyIn != nil {
		return nil, rewrite.Refusal("COPY (query) TO STDOUT over encrypted columns: this query is not supported in a COPY; run it as a query")
	}
	// copyOut formats the rows the session hands it, released ones
	// included, so its query's decrypter may hold rows (streamed).
	co := &copyOut{inner: streamed(p.results), opts: cp.Options, table: cp.Table.Name}
	if cp.Table.Name != "" {
		t, err := s.lookup(cp.Table)
		if err != nil {
			return nil, err
		}
		if t != nil {
			for _, c := range t.Columns {
				co.tableColumns = append(co.tableColumns, c.Name)
			}
		}
	}
	return &stmtPlan{sql: p.sql, results: co}, nil
}

// copyOut turns the answer of a COPY's query into COPY data (wire.CopyOut).
type copyOut struct {
	inner wire.ResultRewriter // the query's, or nil
	opts  pgcopy.Options
	// table and tableColumns: COPY table TO's (for FORCE_QUOTE's errors).
	table        string
	tableColumns []string
	f            *pgcopy.Formatter
	rows         int64
}

func (c *copyOut) RowDescription(rd *pgproto3.RowDescription) error {
	if c.inner != nil {
		return c.inner.RowDescription(rd)
	}
	return nil
}

func (c *copyOut) DataRow(row *pgproto3.DataRow) error {
	if c.inner != nil {
		return c.inner.DataRow(row)
	}
	return nil
}

// Release passes on the rows the query's rewriter held (a sort in the
// proxy, split execution).
func (c *copyOut) Release(atEnd bool) ([]*pgproto3.DataRow, error) {
	if rel, ok := c.inner.(wire.RowReleaser); ok {
		return rel.Release(atEnd)
	}
	return nil, nil
}

func (c *copyOut) CopyOutStart(rd *pgproto3.RowDescription) (*pgproto3.CopyOutResponse, []byte, error) {
	names := make([]string, len(rd.Fields))
	for i, f := range rd.Fields {
		names[i] = string(f.Name)
	}
	f, err := pgcopy.NewFormatter(c.opts, names, c.table, c.tableColumns)
	if err != nil {
		return nil, nil, err
	}
	c.f = f
	resp := &pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, len(names))}
	if !c.opts.Header {
		return resp, nil, nil
	}
	return resp, f.Header(nil, names), nil
}

func (c *copyOut) CopyOutRow(dst []byte, row *pgproto3.DataRow) ([]byte, error) {
	c.rows++
	return c.f.Row(dst, row.Values), nil
}

// CommandTag is COPY's: the rows sent.
func (c *copyOut) CommandTag([]byte) []byte {
	return strconv.AppendInt([]byte("COPY "), c.rows, 10)
}

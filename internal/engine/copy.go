package engine

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgcopy"
	"github.com/pgonion/pgonion/internal/procs"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/schemes/rnd"
	"github.com/pgonion/pgonion/internal/wire"
)

// planCopy rewrites COPY t FROM STDIN: the proxy reads the client's rows
// (text or csv), encrypts the encrypted columns' values and sends the
// server rows in the default text format, or in binary format when all
// are cells (rewrite.CopyPlan.Binary).
func (s *session) planCopy(st rewrite.Statement, t *catalog.Table, ext *extended) (*stmtPlan, error) {
	p, err := rewrite.PlanCopy(st, t)
	if err != nil || p == nil {
		return nil, err
	}
	checks, err := s.e.checksOf(t)
	if err != nil {
		return nil, err
	}
	cc := &copyColumns{table: t.Name, opts: p.Options, names: p.Columns(), checks: checks, binary: p.Binary}
	for _, f := range p.Fields {
		cf := copyField{suffixes: f.Suffixes}
		if f.Column != nil {
			if cf.x, err = s.e.encrypted(t.Name, f.Column); err != nil {
				return nil, err
			}
		}
		cc.fields = append(cc.fields, cf)
	}
	newRewriter := func() wire.CopyInRewriter {
		// Taken before the COPY reaches the server: once it runs, it holds
		// a table lock a peel waits for, and its rows are encrypted as
		// they stream.
		if err := s.holdWrites(t); err != nil {
			return refusedCopy{err}
		}
		return &copyEncrypter{cc: cc, params: &s.params}
	}
	sp := &stmtPlan{sql: p.SQL}
	if ext == nil {
		sp.copyIn = newRewriter()
	} else {
		ext.copyIn = newRewriter
	}
	return sp, nil
}

// copyColumns describes the client's fields of one COPY.
type copyColumns struct {
	table  string
	names  []string // the client's columns, for messages and HEADER MATCH
	fields []copyField
	opts   pgcopy.Options
	checks *rowChecks // the table's proxy-enforced CHECKs
	binary bool       // the server reads FORMAT binary (rewrite.CopyPlan.Binary)
}

type copyField struct {
	x        *encrypted // nil for a plain column
	suffixes []string   // the cells the server expects, in order
}

// copyLayers are an encrypted field's layers for the whole COPY
// (encrypted.layers, read once at its first data).
type copyLayers struct{ eq, ord onion.Layer }

// uuid reports whether the field's cell with suffix sfx is a uuid.
func (f *copyField) uuid(sfx string) bool {
	switch sfx {
	case "_eq":
		return f.x.oc.CellSQLType(onion.KindEq) == "uuid"
	case "_ord":
		return f.x.oc.CellSQLType(onion.KindOrd) == "uuid"
	}
	return false
}

// copyEncrypter is the CopyInRewriter of one COPY execution. Rows are
// encrypted in batches (the complete rows of the CopyData messages that
// arrived together), spread over the cores.
type copyEncrypter struct {
	cc     *copyColumns
	params *sessionParams
	r      *pgcopy.Reader
	env    onion.Env

	batch   []copyRow
	spans   []span // the batch's fields, len(cc.fields) per row
	arena   []byte
	outs    [][]byte // the workers' output buffers, reused
	workers int
	started bool         // the binary stream's header is sent
	layers  []copyLayers // by field
}

// copyRow is one client row of a batch: its input line; its fields are
// the next len(cc.fields) spans of the batch, offsets into the batch
// arena (from < 0 for NULL).
type copyRow struct {
	line int64
}

// span is a value's place in a buffer: buf[from:to]; from is -1 when the
// value is elsewhere or NULL.
type span struct{ from, to int }

// CopyInResponse shows the client one text column per field it sends. It
// runs on the server-reading goroutine and touches no other state: a
// client may send its data before the server's response arrives.
func (c *copyEncrypter) CopyInResponse(cr *pgproto3.CopyInResponse) error {
	cr.OverallFormat = 0
	cr.ColumnFormatCodes = make([]uint16, len(c.cc.fields))
	return nil
}

// start readies the reader at the first data.
func (c *copyEncrypter) start() error {
	if c.r != nil {
		return nil
	}
	env, err := c.params.get()
	if err != nil {
		return err
	}
	c.env = env
	if c.r, err = pgcopy.NewReader(c.cc.opts, c.cc.table, c.cc.names); err != nil {
		return err
	}
	c.workers = max(1, procs.Full())
	// Read once: the COPY holds the table's writes (planCopy), so no
	// peel of its columns ends before it does.
	c.layers = make([]copyLayers, len(c.cc.fields))
	for i, f := range c.cc.fields {
		if f.x != nil {
			c.layers[i].eq, c.layers[i].ord = f.x.layers()
		}
	}
	return nil
}

func (c *copyEncrypter) Data(dst, src []byte) ([]byte, error) {
	if err := c.start(); err != nil {
		return dst, err
	}
	c.r.Feed(src)
	return c.drain(dst)
}

func (c *copyEncrypter) Done(dst []byte) ([]byte, error) {
	if err := c.start(); err != nil {
		return dst, err
	}
	c.r.Close()
	dst, err := c.drain(dst)
	if err != nil || !c.cc.binary {
		return dst, err
	}
	return pgcopy.BinaryTrailer(c.header(dst)), nil
}

// header appends the binary stream's header before its first data.
func (c *copyEncrypter) header(dst []byte) []byte {
	if !c.cc.binary || c.started {
		return dst
	}
	c.started = true
	return pgcopy.BinaryHeader(dst)
}

// drain encrypts every complete row the reader holds.
func (c *copyEncrypter) drain(dst []byte) ([]byte, error) {
	c.batch, c.spans, c.arena = c.batch[:0], c.spans[:0], c.arena[:0]
	for {
		row, err := c.r.Next()
		if err == io.EOF || (err == nil && row == nil) {
			break
		}
		if err != nil {
			return dst, err
		}
		for _, f := range row {
			if f == nil {
				c.spans = append(c.spans, span{-1, -1})
				continue
			}
			from := len(c.arena)
			c.arena = append(c.arena, f...)
			c.spans = append(c.spans, span{from, len(c.arena)})
		}
		c.batch = append(c.batch, copyRow{line: c.r.Line()})
	}
	if len(c.batch) == 0 {
		return dst, nil
	}
	dst = c.header(dst)
	parts := min(c.workers, (len(c.batch)+7)/8)
	if parts <= 1 {
		return c.encryptRows(dst, 0, len(c.batch))
	}
	// The first part is written into dst by this goroutine, the others
	// into buffers kept for the next batch, then appended.
	if len(c.outs) < parts {
		c.outs = make([][]byte, parts)
	}
	errs := make([]error, parts)
	defer procs.Claim()()
	var wg sync.WaitGroup
	per := (len(c.batch) + parts - 1) / parts
	for i := 1; i < parts; i++ {
		lo, hi := i*per, min(len(c.batch), (i+1)*per)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A panic here would end the process: the session's guard
			// only covers its own goroutine.
			defer func() {
				if v := recover(); v != nil {
					errs[i] = fmt.Errorf("engine: panic encrypting COPY rows: %v", v)
				}
			}()
			c.outs[i], errs[i] = c.encryptRows(c.outs[i][:0], lo, hi)
		}()
	}
	dst, errs[0] = c.encryptRows(dst, 0, min(len(c.batch), per))
	wg.Wait()
	for i := range parts {
		if errs[i] != nil {
			return dst, errs[i]
		}
		if i > 0 {
			dst = append(dst, c.outs[i]...)
		}
	}
	return dst, nil
}

// encryptRows appends the server's rows for rows lo to hi of the batch to
// dst, in text or binary format. It only reads shared state, so parts of
// a batch may run concurrently.
func (c *copyEncrypter) encryptRows(dst []byte, lo, hi int) ([]byte, error) {
	var text pgcopy.Writer
	var bin pgcopy.BinaryWriter
	var w pgcopy.CellWriter = &text
	if c.cc.binary {
		bin.Reset(dst)
		w = &bin
	} else {
		text.Reset(dst)
	}
	var vals map[catalog.ID]onion.Value // of the row, for the checks
	if c.cc.checks != nil {
		vals = map[catalog.ID]onion.Value{}
	}
	value := func(col *catalog.Column) (onion.Value, bool) { v, ok := vals[col.ID]; return v, ok }
	nf := len(c.cc.fields)
	salts := rnd.NewSalts(hi - lo) // one read of the system's generator
	for r := lo; r < hi; r++ {
		row := c.batch[r]
		salt := salts[(r-lo)*rnd.SaltSize : (r-lo+1)*rnd.SaltSize : (r-lo+1)*rnd.SaltSize]
		w.Bytea(salt)
		for i, f := range c.cc.fields {
			sp := c.spans[r*nf+i]
			var raw []byte
			if sp.from >= 0 {
				raw = c.arena[sp.from:sp.to]
			}
			if f.x == nil {
				if c.cc.binary {
					return nil, fmt.Errorf("engine: plain column %s in a binary COPY of %s", c.cc.names[i], c.cc.table)
				}
				text.Field(raw)
				continue
			}
			v := onion.Null()
			if raw != nil {
				var err error
				if v, err = f.x.typ.ParseText(raw, c.env); err != nil {
					return nil, withCopyContext(err, c.cc.table, row.line, c.cc.names[i])
				}
			}
			if vals != nil {
				vals[f.x.cat.ID] = v
			}
			cells, err := f.x.encryptAt(v, salt, c.layers[i].eq, c.layers[i].ord)
			if err != nil {
				return nil, fmt.Errorf("failed to encrypt a value of %s.%s (COPY line %d): %w", c.cc.table, c.cc.names[i], row.line, err)
			}
			for _, sfx := range f.suffixes {
				if sfx == "_srch" {
					w.Int8Array(cells.Search)
					continue
				}
				switch b := cellValue(cells, sfx); {
				case b == nil:
					w.Null()
				case f.uuid(sfx):
					w.UUID(b)
				default:
					w.Bytea(b)
				}
			}
		}
		if vals != nil {
			// Columns the COPY leaves out are NULL (it refuses those with
			// a default).
			if err := c.cc.checks.verify(value, false, c.env); err != nil {
				var pe *pgconn.PgError
				if errors.As(err, &pe) {
					pe.Where = fmt.Sprintf("COPY %s, line %d", c.cc.table, row.line)
				}
				return nil, err
			}
			clear(vals)
		}
		w.EndRow()
		if r == lo && hi-lo > 1 {
			// Room for the other rows, at the first one's size.
			w.Grow((hi - lo - 1) * (len(w.Bytes()) - len(dst)))
		}
	}
	return w.Bytes(), nil
}

// withCopyContext adds PostgreSQL's COPY error context to a value error.
func withCopyContext(err error, table string, line int64, column string) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		cp := *pe
		cp.Where = fmt.Sprintf("COPY %s, line %d, column %s", table, line, column)
		return &cp
	}
	return err
}

// refusedCopy fails a COPY FROM before any row reaches the server.
type refusedCopy struct{ err error }

func (r refusedCopy) CopyInResponse(*pgproto3.CopyInResponse) error { return r.err }
func (r refusedCopy) Data([]byte, []byte) ([]byte, error)           { return nil, r.err }
func (r refusedCopy) Done([]byte) ([]byte, error)                   { return nil, r.err }

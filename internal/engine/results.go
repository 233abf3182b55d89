package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// projection is the planned result of a statement that returns rows from
// tables with encrypted columns: which server columns make each column the
// client sees.
type projection struct {
	cols    []projColumn
	salt    int // server column of the row salt, -1 when none (single-table plans)
	nServer int // columns of the server's result
	// visible is how many of cols the client sees (0: all); the others
	// are read by residual checks.
	visible   int
	residuals []residual
	// sort completes an ORDER BY on an encrypted text column (nil when
	// the server's order is the client's).
	sort *rewrite.ProxySort
	// origins names the tables and columns the fields come from.
	origins *originCache
	// descMemo is the last RowDescription rewritten (RowDescriptionBytes).
	descMemo atomic.Pointer[rowDescMemo]
}

// rowDescMemo is a RowDescription as the server sent it (whole) and as
// the proxy rewrote it, for the client's result formats and the origins
// at that generation.
type rowDescMemo struct {
	in      string
	formats []int16
	origins int64
	out     []byte
}

// proxyRows reports whether the proxy filters or reorders the rows (and so
// applies LIMIT and OFFSET itself).
func (p *projection) proxyRows() bool { return len(p.residuals) > 0 || p.sort != nil }

type projColumn struct {
	name    string
	server  int // server column of the plain value, the Eq cell, or the aggregate
	val     int // server column of the exact-value cell, -1 when none
	salt    int // server column of the salt override, -1 when none
	rowSalt int // server column of the row salt, -1 for the projection's
	count   int // DecodeAvg: server column of the count
	add     int // server column of the Add cell of an incremented column, -1 when none
	decode  rewrite.Decode
	x       *encrypted
}

// typ is the type the client sees for an encrypted column.
func (c *projColumn) typ() onion.Type {
	switch c.decode {
	case rewrite.DecodeSum:
		return c.x.oc.SumType()
	case rewrite.DecodeAvg:
		return numericType
	}
	return c.x.typ
}

func (e *Engine) newProjection(t *catalog.Table, cols []rewrite.ResultColumn, salt int) (*projection, error) {
	p := &projection{salt: salt, origins: &e.origins}
	for _, rc := range cols {
		pc := projColumn{name: rc.Name, server: rc.Server, val: rc.Val, salt: rc.Salt, rowSalt: -1, count: -1, add: -1}
		if rc.Column != nil {
			x, err := e.encrypted(t.Name, rc.Column)
			if err != nil {
				return nil, err
			}
			pc.x = x
		}
		p.nServer = max(p.nServer, pc.server+1, pc.val+1, pc.salt+1)
		p.cols = append(p.cols, pc)
	}
	p.nServer = max(p.nServer, salt+1)
	return p, nil
}

// shown is the number of columns the client sees.
func (p *projection) shown() int {
	if p.visible > 0 || p.proxyRows() {
		return p.visible
	}
	return len(p.cols)
}

// serverFormats returns the result format codes to ask the server for, given
// the client's: the client's for plain columns, binary for ciphertexts.
func (p *projection) serverFormats(client []int16) ([]int16, error) {
	if len(client) > 1 && len(client) != p.shown() {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "08P01",
			Message: fmt.Sprintf("bind message has %d result formats but query has %d columns", len(client), p.shown())}
	}
	out := make([]int16, p.nServer)
	for i := range out {
		out[i] = 1
	}
	for i, c := range p.cols[:p.shown()] {
		if c.x == nil {
			out[c.server] = formatOf(client, i)
		}
	}
	return out, nil
}

func formatOf(formats []int16, i int) int16 {
	switch len(formats) {
	case 0:
		return 0
	case 1:
		return formats[0]
	}
	if i < len(formats) {
		return formats[i]
	}
	return 0
}

// decrypter is the ResultRewriter of one execution (a simple-protocol
// statement or a portal): it shows the client the plaintext types and
// values of encrypted columns in the format it asked for, drops the rows
// that fail residual checks, and applies the proxy-side LIMIT and OFFSET.
type decrypter struct {
	p            *projection
	params       *sessionParams
	formats      []int16 // the client's result formats
	serverBinary bool    // the server sends ciphertext columns in binary
	vals         [][]byte
	buf          []byte
	envOK        bool
	env          onion.Env
	tag          string // when set, replaces the command tag
	// decodeOnly is set when the proxy computes on the values (split
	// execution): DataRow fills decoded and does not encode the row.
	decodeOnly bool

	ex      atomic.Pointer[execState] // set at Bind when the proxy filters or sorts rows
	matched int64                     // rows that passed the residual checks
	sent    int64                     // rows sent to the client
	decoded []onion.Value             // the values of the row's encrypted visible columns
	sorter  *runSorter                // set when the proxy sorts runs of rows
	// scratch holds the decoded ciphertexts of the current row (see
	// rowCell); reset at each DataRow.
	scratch []byte
	spans   []span // DataRow's, reused: where each value is in buf
	// skip, when set, marks the columns DataRow leaves NULL instead of
	// decrypting (decodeOnly: the folder knows the row's group).
	skip []bool
	// mayParallel: the session relays this decrypter's rows itself (see
	// streamed), so a long result may be decrypted in parallel (par).
	mayParallel bool
	serialRows  int // of the current result, decrypted as they came
	par         *parallelRows
	kept        *heldBudget // the rows the session keeps for a limited Execute (KeepRow)
}

// rowCell is cellBytes for a cell needed only while the current row is
// decrypted: hex is decoded into d.scratch instead of a new slice. The
// result is valid until the next DataRow.
func (d *decrypter) rowCell(raw []byte) ([]byte, error) {
	if raw != nil && !d.serverBinary && len(raw) == uuidTextLen && raw[0] != '\\' {
		start := len(d.scratch)
		d.scratch = slices.Grow(d.scratch, 16)[:start+16]
		out := d.scratch[start : start+16 : start+16]
		if onion.DecodeUUIDText(out, raw) {
			return out, nil
		}
		d.scratch = d.scratch[:start]
	}
	if raw == nil || d.serverBinary || len(raw) < 2 || raw[0] != '\\' || raw[1] != 'x' {
		return cellBytes(raw, d.serverBinary)
	}
	n := hex.DecodedLen(len(raw) - 2)
	start := len(d.scratch)
	d.scratch = slices.Grow(d.scratch, n)[:start+n]
	out := d.scratch[start : start+n : start+n]
	if _, err := hex.Decode(out, raw[2:]); err != nil {
		return nil, fmt.Errorf("engine: malformed bytea from the server: %w", err)
	}
	return out, nil
}

func (d *decrypter) RowDescription(rd *pgproto3.RowDescription) error {
	if len(rd.Fields) != d.p.nServer {
		return fmt.Errorf("engine: the server returned %d columns, the plan expects %d", len(rd.Fields), d.p.nServer)
	}
	fields := make([]pgproto3.FieldDescription, d.p.shown())
	for i, c := range d.p.cols[:len(fields)] {
		if c.x == nil {
			fields[i] = rd.Fields[c.server]
			if c.name != "" {
				fields[i].Name = []byte(c.name)
			}
			if d.p.origins != nil {
				d.p.origins.describe(&fields[i])
			}
			continue
		}
		t := c.typ()
		fields[i] = pgproto3.FieldDescription{
			Name:         []byte(c.name),
			DataTypeOID:  t.OID(),
			DataTypeSize: t.Size(),
			TypeModifier: t.Typmod(),
			Format:       formatOf(d.formats, i),
		}
		if c.decode == rewrite.DecodeOrd {
			// MIN and MAX, like every aggregate, drop the type modifier.
			fields[i].TypeModifier = -1
		}
		if c.decode == rewrite.DecodeValue && d.p.origins != nil {
			// The column's value, read from a cell of its table.
			fields[i].TableOID, fields[i].TableAttributeNumber = rd.Fields[c.server].TableOID, rd.Fields[c.server].TableAttributeNumber
			d.p.origins.describe(&fields[i])
		}
	}
	rd.Fields = fields
	return nil
}

// RowDescriptionBytes implements wire.RowDescriptionBytes. The server
// describes a statement executed again as it did before, and rewriting
// the description (decoding, rewriting, encoding) cost about 2 us of
// the proxy's 35 a point select.
func (d *decrypter) RowDescriptionBytes(msg []byte) []byte {
	gen := d.p.origins.generation()
	if m := d.p.descMemo.Load(); m != nil && m.origins == gen && m.in == string(msg) && slices.Equal(m.formats, d.formats) {
		return m.out
	}
	var rd pgproto3.RowDescription
	if len(msg) < 5 || rd.Decode(msg[5:]) != nil || d.RowDescription(&rd) != nil {
		return nil // the usual path reports it
	}
	out, err := rd.Encode(nil)
	if err != nil {
		return nil
	}
	d.p.descMemo.Store(&rowDescMemo{in: string(msg), formats: slices.Clone(d.formats), origins: gen, out: out})
	return out
}

// cellValue computes the plaintext of encrypted column c from a row.
func (d *decrypter) cellValue(c *projColumn, row *pgproto3.DataRow, rowSalt []byte) (onion.Value, error) {
	raw := row.Values[c.server]
	switch c.decode {
	case rewrite.DecodeOrd:
		cell, err := cellBytes(raw, d.serverBinary)
		if err != nil {
			return onion.Value{}, err
		}
		v, err := c.x.oc.DecryptOrd(cell, nil, onion.LayerOPE)
		if err != nil {
			return v, fmt.Errorf("failed to decrypt MIN or MAX of column %s.%s: %w", c.x.table, c.x.cat.Name, err)
		}
		return v, nil
	case rewrite.DecodeSum, rewrite.DecodeAvg:
		cells, err := cellBytes(raw, d.serverBinary)
		if err != nil {
			return onion.Value{}, err
		}
		sum, err := c.x.sum(cells)
		if err != nil || c.decode == rewrite.DecodeSum {
			return sum, err
		}
		count, err := countValue(row.Values[c.count], d.serverBinary)
		if err != nil {
			return onion.Value{}, err
		}
		return avgValue(c.x.oc.SumType(), sum, count)
	}
	var cells onion.Cells
	var err error
	if raw == nil && c.add >= 0 && row.Values[c.add] != nil {
		// Incremented on the server: only the Add onion is current.
		cell, err := cellBytes(row.Values[c.add], d.serverBinary)
		if err != nil {
			return onion.Value{}, err
		}
		v, err := c.x.oc.DecryptAdd(cell)
		var pe *pgconn.PgError
		if err != nil && !errors.As(err, &pe) {
			return v, fmt.Errorf("failed to decrypt the Add onion of column %s.%s: %w", c.x.table, c.x.cat.Name, err)
		}
		return v, err
	}
	if cells.Eq, err = d.rowCell(raw); err != nil {
		return onion.Value{}, err
	}
	if c.val >= 0 {
		if cells.Val, err = d.rowCell(row.Values[c.val]); err != nil {
			return onion.Value{}, err
		}
	}
	salt := rowSalt
	if c.rowSalt >= 0 {
		if salt, err = d.rowCell(row.Values[c.rowSalt]); err != nil {
			return onion.Value{}, err
		}
	}
	if c.salt >= 0 && row.Values[c.salt] != nil {
		if salt, err = d.rowCell(row.Values[c.salt]); err != nil {
			return onion.Value{}, err
		}
	}
	return c.x.decrypt(cells, salt)
}

func (d *decrypter) DataRow(row *pgproto3.DataRow) error {
	if len(row.Values) != d.p.nServer {
		return fmt.Errorf("engine: the server returned a row of %d columns, the plan expects %d", len(row.Values), d.p.nServer)
	}
	if !d.envOK {
		env, err := d.params.get()
		if err != nil {
			return err
		}
		d.env, d.envOK = env, true
	}
	if d.par != nil {
		return d.par.add(row)
	}
	if d.mayParallel {
		if d.serialRows++; d.serialRows > parallelAfter {
			if !d.parallelOK() {
				d.mayParallel = false // for good: it depends on the plan alone
			} else {
				d.par = newParallelRows(d)
				return d.par.add(row)
			}
		}
	}
	ex := d.ex.Load()
	if d.p.sort != nil && d.sorter == nil {
		d.sorter = newRunSorter(d, ex)
	}
	if d.sorter != nil && d.sorter.finished {
		return wire.ErrSkipRow // the limit is reached: the rest is dropped
	}
	if d.p.sort == nil && len(d.p.residuals) > 0 && ex != nil && ex.limit >= 0 && d.sent >= ex.limit {
		return wire.ErrSkipRow
	}
	d.vals = d.vals[:0]
	if d.buf == nil {
		d.buf = make([]byte, 0, 512) // non-nil: an empty value is not NULL
	}
	d.buf = d.buf[:0]
	d.scratch = d.scratch[:0]
	var rowSalt []byte
	if d.p.salt >= 0 {
		var err error
		if rowSalt, err = d.rowCell(row.Values[d.p.salt]); err != nil {
			return err
		}
	}
	shown := d.p.shown()
	// Residual checks first: a row that fails them is not decrypted
	// further.
	for i, r := range d.p.residuals {
		ok, err := d.check(i, r, ex, row, rowSalt)
		if err != nil {
			return err
		}
		if !ok {
			return wire.ErrSkipRow
		}
	}
	if len(d.p.residuals) > 0 && d.p.sort == nil {
		d.matched++
		if ex != nil && d.matched <= ex.offset {
			return wire.ErrSkipRow
		}
	}
	// Offsets into buf, resolved to slices once buf stops growing.
	d.spans = slices.Grow(d.spans[:0], shown)[:shown]
	spans := d.spans
	d.decoded = d.decoded[:0]
	for i := range shown {
		c := &d.p.cols[i]
		d.decoded = append(d.decoded, onion.Value{})
		if c.x == nil {
			d.vals = append(d.vals, row.Values[c.server])
			spans[i] = span{-1, -1}
			continue
		}
		if d.skip != nil && d.skip[i] {
			// Not needed (see rawGroups): left NULL.
			d.vals = append(d.vals, nil)
			spans[i] = span{-1, -1}
			continue
		}
		v, err := d.cellValue(c, row, rowSalt)
		if err != nil {
			return err
		}
		d.decoded[i] = v
		d.vals = append(d.vals, nil)
		if v.IsNull() || d.decodeOnly {
			spans[i] = span{-1, -1}
			continue
		}
		from := len(d.buf)
		t := c.typ()
		if formatOf(d.formats, i) == 1 {
			d.buf = t.AppendBinary(d.buf, v)
		} else {
			d.buf = t.AppendText(d.buf, v, d.env)
		}
		spans[i] = span{from, len(d.buf)}
	}
	for i, s := range spans {
		if s.from >= 0 {
			d.vals[i] = d.buf[s.from:s.to:s.to]
		}
	}
	if d.sorter != nil {
		return d.sorter.hold(row, rowSalt)
	}
	row.Values = d.vals
	d.sent++
	return nil
}

// check evaluates residual i on a row: false drops the row.
func (d *decrypter) check(i int, r residual, ex *execState, row *pgproto3.DataRow, rowSalt []byte) (bool, error) {
	c := &d.p.cols[r.col]
	v, err := d.cellValue(c, row, rowSalt)
	if err != nil || v.IsNull() {
		return false, err
	}
	if r.cmp != nil {
		// Without an execState (Describe only) no row is expected.
		if ex == nil || ex.bounds[i].IsNull() {
			return false, nil
		}
		return exec.Compares(c.x.typ.Compare(v, ex.bounds[i]), r.cmp.Op), nil
	}
	pat := r.pattern
	if ex != nil {
		pat = ex.patterns[i]
	}
	if pat == nil {
		return false, nil
	}
	ok, err := pat.Eval(string(c.x.typ.AppendText(nil, v, d.env)))
	return ok != r.like.Negate, err
}

// Release sends on the rows a sort has put in order, or the workers have
// decrypted.
func (d *decrypter) Release(atEnd bool) ([]*pgproto3.DataRow, error) {
	if atEnd {
		d.serialRows = 0
	}
	if d.par != nil {
		rows, err := d.par.release(atEnd)
		if atEnd || err != nil {
			d.par = nil
		}
		return rows, err
	}
	if d.sorter == nil {
		return nil, nil
	}
	return d.sorter.release(atEnd), nil
}

// ReleasesAtSuspend: rows held for the workers are all released when an
// Execute's row limit is reached. A sort, a filter or a LIMIT in the proxy
// changes the rows: their portal is run to completion by the session.
func (d *decrypter) ReleasesAtSuspend() bool { return !d.p.proxyRows() }

// KeepRow implements wire.RowKeeper: the rows the session keeps for an
// Execute with a row limit count against the statement's held memory,
// as a sort's do.
func (d *decrypter) KeepRow(row *pgproto3.DataRow) error {
	if d.params == nil {
		return nil
	}
	if d.kept == nil {
		if d.kept = newHeldBudget(d.params.maxHeld); d.kept == nil {
			return nil // no limit
		}
	}
	n := heldRowOverhead
	for _, v := range row.Values {
		n += len(v) + heldValueOverhead
	}
	return d.kept.charge(n)
}

// streamed marks rr, when it is a decrypter, as the rewriter the session
// relays rows through: no other rewriter reads its rows as DataRow
// returns, so it may hold them back to decrypt them in parallel.
func streamed(rr wire.ResultRewriter) wire.ResultRewriter {
	if d, ok := rr.(*decrypter); ok {
		d.mayParallel = true
	}
	return rr
}

// CommandTag reports the rows the client got when the proxy dropped some.
func (d *decrypter) CommandTag(tag []byte) []byte {
	if d.tag != "" {
		return []byte(d.tag)
	}
	if d.p.proxyRows() && bytes.HasPrefix(tag, []byte("SELECT ")) {
		return strconv.AppendInt([]byte("SELECT "), d.sent, 10)
	}
	return tag
}

// countValue reads a bigint count (text or binary).
func countValue(raw []byte, binaryFormat bool) (int64, error) {
	if raw == nil {
		return 0, nil
	}
	if binaryFormat {
		if len(raw) != 8 {
			return 0, errors.New("engine: malformed count from the server")
		}
		return int64(binary.BigEndian.Uint64(raw)), nil
	}
	return strconv.ParseInt(string(raw), 10, 64)
}

package engine

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// projection is the planned result of a statement that returns rows from
// a table with encrypted columns: which server columns make each column the
// client sees.
type projection struct {
	cols    []projColumn
	salt    int // server column of the row salt, -1 when none
	nServer int // columns of the server's result
}

type projColumn struct {
	name   string
	server int // server column of the plain value or of the Eq cell
	val    int // server column of the exact-value cell, -1 when none
	salt   int // server column of the salt override, -1 when none
	x      *encrypted
}

func (e *Engine) newProjection(t *catalog.Table, cols []rewrite.ResultColumn, salt int) (*projection, error) {
	p := &projection{salt: salt}
	for _, rc := range cols {
		pc := projColumn{name: rc.Name, server: rc.Server, val: rc.Val, salt: rc.Salt}
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

// serverFormats returns the result format codes to ask the server for, given
// the client's: the client's for plain columns, binary for ciphertexts.
func (p *projection) serverFormats(client []int16) ([]int16, error) {
	if len(client) > 1 && len(client) != len(p.cols) {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "08P01",
			Message: fmt.Sprintf("bind message has %d result formats but query has %d columns", len(client), len(p.cols))}
	}
	out := make([]int16, p.nServer)
	for i := range out {
		out[i] = 1
	}
	for i, c := range p.cols {
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
// values of encrypted columns in the format it asked for.
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
}

func (d *decrypter) RowDescription(rd *pgproto3.RowDescription) error {
	if len(rd.Fields) != d.p.nServer {
		return fmt.Errorf("engine: the server returned %d columns, the plan expects %d", len(rd.Fields), d.p.nServer)
	}
	fields := make([]pgproto3.FieldDescription, len(d.p.cols))
	for i, c := range d.p.cols {
		if c.x == nil {
			fields[i] = rd.Fields[c.server]
			if c.name != "" {
				fields[i].Name = []byte(c.name)
			}
			continue
		}
		t := c.x.typ
		fields[i] = pgproto3.FieldDescription{
			Name:         []byte(c.name),
			DataTypeOID:  t.OID(),
			DataTypeSize: t.Size(),
			TypeModifier: t.Typmod(),
			Format:       formatOf(d.formats, i),
		}
	}
	rd.Fields = fields
	return nil
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
	d.vals = d.vals[:0]
	if d.buf == nil {
		d.buf = make([]byte, 0, 512) // non-nil: an empty value is not NULL
	}
	d.buf = d.buf[:0]
	var rowSalt []byte
	if d.p.salt >= 0 {
		var err error
		if rowSalt, err = cellBytes(row.Values[d.p.salt], d.serverBinary); err != nil {
			return err
		}
	}
	// Offsets into buf, resolved to slices once buf stops growing.
	type span struct{ from, to int }
	spans := make([]span, len(d.p.cols))
	for i, c := range d.p.cols {
		if c.x == nil {
			d.vals = append(d.vals, row.Values[c.server])
			spans[i] = span{-1, -1}
			continue
		}
		var cells onion.Cells
		var err error
		if cells.Eq, err = cellBytes(row.Values[c.server], d.serverBinary); err != nil {
			return err
		}
		if c.val >= 0 {
			if cells.Val, err = cellBytes(row.Values[c.val], d.serverBinary); err != nil {
				return err
			}
		}
		salt := rowSalt
		if c.salt >= 0 && row.Values[c.salt] != nil {
			if salt, err = cellBytes(row.Values[c.salt], d.serverBinary); err != nil {
				return err
			}
		}
		v, err := c.x.decrypt(cells, salt)
		if err != nil {
			return err
		}
		d.vals = append(d.vals, nil)
		if v.IsNull() {
			spans[i] = span{-1, -1}
			continue
		}
		from := len(d.buf)
		if formatOf(d.formats, i) == 1 {
			d.buf = c.x.typ.AppendBinary(d.buf, v)
		} else {
			d.buf = c.x.typ.AppendText(d.buf, v, d.env)
		}
		spans[i] = span{from, len(d.buf)}
	}
	for i, s := range spans {
		if s.from >= 0 {
			d.vals[i] = d.buf[s.from:s.to:s.to]
		}
	}
	row.Values = d.vals
	return nil
}

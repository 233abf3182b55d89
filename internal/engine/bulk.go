package engine

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgarray"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/schemes/rnd"
)

// Array type OIDs of the cells a bulk INSERT passes (bulk.go), and of
// the plaintext types a client's arrays may be declared as.
const (
	oidByteaArr = 1001
	oidUUIDArr  = 2951
	oidTextArr  = 1009
)

// arrayOIDs maps a type OID to its array type's (pg_type.typarray).
var arrayOIDs = map[uint32]uint32{
	16: 1000, 17: 1001, 20: 1016, 21: 1005, 23: 1007, 25: 1009, 700: 1021, 701: 1022,
	869: 1041, 1042: 1014, 1043: 1015, 1082: 1182, 1083: 1183, 1114: 1115, 1184: 1185,
	1186: 1187, 1700: 1231, 2950: 2951, 3802: 3807,
}

// bulkArray is one encrypted column of a bulk INSERT: its column, the
// client parameter holding its values (0 for a default applied to every
// row) and the parameters added for its cells' arrays (by cell suffix,
// in the order of rewrite.UnnestCells).
type bulkArray struct {
	x      *encrypted
	param  int
	cells  []onion.PhysicalColumn
	params []int // 0-based index into holeParams.slots
}

// planUnnestParams plans a bulk INSERT whose rows come in array
// parameters (rewrite.UnnestPlan): at each Bind it decodes the arrays of
// encrypted columns, encrypts every element with its row's fresh salt,
// and binds the arrays of cells and salts in their place.
func (s *session) planUnnestParams(p *rewrite.UnnestPlan, t *catalog.Table, clientRefs []int, ext *extended) (*stmtPlan, error) {
	checks, err := s.e.checksOf(t)
	if err != nil {
		return nil, err
	}
	env, err := s.params.get()
	if err != nil {
		return nil, err
	}
	gens, err := s.e.generationsOf(t, env)
	if err != nil {
		return nil, err
	}
	hp := newHoleParams(ext.oids, clientRefs)
	salts := hp.add(paramSlot{hole: -1}, oidByteaArr)
	var arrays []*bulkArray
	holeOf := map[int]*encrypted{}
	cells := map[*catalog.Column]rewrite.Cells{}
	addColumn := func(c *catalog.Column, param int) error {
		x, err := s.e.encrypted(t.Name, c)
		if err != nil {
			return err
		}
		layout, err := rewrite.UnnestCells(c)
		if err != nil {
			return err
		}
		a := &bulkArray{x: x, param: param, cells: layout}
		cells[c] = rewrite.Cells{}
		for _, pc := range layout {
			array, _ := cellArrayTypes(pc)
			a.params = append(a.params, len(hp.slots))
			cells[c][pc.Suffix] = hp.add(paramSlot{hole: len(arrays), suffix: pc.Suffix}, array)
		}
		arrays = append(arrays, a)
		if param > 0 {
			holeOf[param] = x
			if hp.clients[param-1] == 0 {
				// Described to the client as the array it sends.
				hp.clients[param-1] = arrayOIDs[x.typ.OID()]
			}
		}
		return nil
	}
	for _, a := range p.Arrays {
		if a.Column != nil {
			if err := addColumn(a.Column, a.Param); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range p.Defaults {
		if err := addColumn(c, 0); err != nil {
			return nil, err
		}
	}
	sql, err := p.Render(salts, cells)
	if err != nil {
		return nil, err
	}
	if ext.serverOIDs, err = hp.finish(sql, holeOf); err != nil {
		return nil, err
	}
	ext.describe = hp.describe
	ext.bind = func(b *pgproto3.Bind) error {
		bs, err := hp.startBind(b, b.PreparedStatement, &s.params)
		if err != nil {
			return err
		}
		if err := s.holdWrites(t); err != nil {
			return err
		}
		// The rows: as many as the longest array (UNNEST pads the
		// others with NULLs).
		rows := 0
		for _, a := range p.Arrays {
			n, err := arrayLen(b.Parameters[a.Param-1], bs.formats[a.Param-1])
			if err != nil {
				return err
			}
			rows = max(rows, n)
		}
		vals := make([][]onion.Value, len(arrays))
		clock := s.sessionClock(true) // read only if a default needs it
		for i, a := range arrays {
			if vals[i], err = a.values(bs, rows, t, clock); err != nil {
				return err
			}
		}
		for i, a := range arrays {
			g := gens.index(a.x.cat)
			if g < 0 {
				continue
			}
			for r := range rows {
				value := func(c *catalog.Column) onion.Value {
					for k, b := range arrays {
						if b.x.cat.ID == c.ID && b.x.cat.Generation == nil && r < len(vals[k]) {
							return vals[k][r]
						}
					}
					return onion.Null()
				}
				if vals[i][r], err = gens.compute(g, value, bs.env); err != nil {
					return err
				}
			}
		}
		rowSalts := make([][]byte, rows)
		for r := range rowSalts {
			rowSalts[r] = rnd.NewSalt()
		}
		if checks != nil {
			for r := range rows {
				value := func(c *catalog.Column) (onion.Value, bool) {
					for i, a := range arrays {
						if a.x.cat.ID == c.ID && r < len(vals[i]) {
							return vals[i][r], true
						}
					}
					return onion.Null(), false
				}
				if err := checks.verify(value, false, bs.env); err != nil {
					return err
				}
			}
		}
		out := make([][]byte, len(hp.slots))
		out[0] = pgarray.AppendBinary(nil, oidBytea, rowSalts)
		for i, a := range arrays {
			cols := make([][][]byte, len(a.cells))
			for r, v := range vals[i] {
				c, err := a.x.encrypt(v, rowSalts[r])
				if err != nil {
					return fmt.Errorf("failed to encrypt a value of %s.%s: %w", a.x.table, a.x.cat.Name, err)
				}
				for k, pc := range a.cells {
					cols[k] = append(cols[k], cellValue(c, pc.Suffix))
				}
			}
			for k, pc := range a.cells {
				_, elem := cellArrayTypes(pc)
				out[a.params[k]] = pgarray.AppendBinary(nil, elem, cols[k])
			}
		}
		bs.finish(out)
		return nil
	}
	sp := &stmtPlan{sql: sql}
	if p.Returning != nil {
		proj, err := s.e.newProjection(t, p.Returning.Columns, p.Returning.Salt)
		if err != nil {
			return nil, err
		}
		s.returnRows(sp, proj, ext)
	}
	return sp, nil
}

// values returns the column's value in each row: the elements of the
// client's array (NULL past its end, as UNNEST pads), or its default
// (an expression computed for each row, with the server's times from
// clock).
func (a *bulkArray) values(bs *bindState, rows int, t *catalog.Table, clock *exec.ServerClock) ([]onion.Value, error) {
	out := make([]onion.Value, rows)
	if a.param == 0 && a.x.cat.Generation != nil {
		return out, nil // computed by the caller
	}
	if a.param == 0 && a.x.cat.DefaultExpr != nil {
		e, err := rewrite.DefaultExprOf(a.x.cat)
		if err != nil {
			return nil, err
		}
		h := rewrite.Hole{Column: a.x.cat, Expr: e}
		for r := range out {
			if out[r], err = exprHole(t, &h, bs.env, clock); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if a.param == 0 {
		v, err := a.x.typ.ParseText([]byte(*a.x.cat.Default), bs.env)
		if err != nil {
			return nil, err
		}
		for r := range out {
			out[r] = v
		}
		return out, nil
	}
	raw, format := bs.b.Parameters[a.param-1], bs.formats[a.param-1]
	for r := range out {
		out[r] = onion.Null()
	}
	if raw == nil {
		return out, nil
	}
	var elems [][]byte
	var elemOID uint32
	elemFormat := format
	switch format {
	case 0:
		texts, err := pgarray.ParseText(string(raw))
		if err != nil {
			return nil, err
		}
		for _, t := range texts {
			if t == nil {
				elems = append(elems, nil)
			} else {
				elems = append(elems, []byte(*t))
			}
		}
	case 1:
		var dims []int
		var err error
		if elemOID, elems, dims, err = pgarray.DecodeBinary(raw); err != nil {
			return nil, err
		}
		if len(dims) > 1 {
			return nil, rewrite.Refusal("a multi-dimensional array for encrypted column %s.%s is not supported", a.x.table, a.x.cat.Name)
		}
	default:
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "22023", Message: fmt.Sprintf("unsupported format code: %d", format)}
	}
	for r, e := range elems {
		if e == nil {
			continue
		}
		v, err := decodeParam(a.x, elemOID, elemFormat, e, bs.env)
		if err != nil {
			return nil, err
		}
		out[r] = v
	}
	return out, nil
}

// arrayLen is the number of elements UNNEST reads from an array
// parameter (0 for NULL).
func arrayLen(raw []byte, format int16) (int, error) {
	if raw == nil {
		return 0, nil
	}
	if format == 1 {
		_, elems, _, err := pgarray.DecodeBinary(raw)
		return len(elems), err
	}
	elems, err := pgarray.ParseText(string(raw))
	return len(elems), err
}

// cellArrayTypes are the array type and element type of the parameter
// carrying a cell's values for many rows: bytea[] or uuid[], and for
// search tokens text[] of array literals (UNNEST would flatten an
// int8[][]).
func cellArrayTypes(pc onion.PhysicalColumn) (array, elem uint32) {
	switch {
	case pc.Suffix == "_srch":
		return oidTextArr, oidText
	case cellOID(pc.SQLType) == oidUUID:
		return oidUUIDArr, oidUUID
	}
	return oidByteaArr, oidBytea
}

package recrypt

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/schemes/rnd"
)

// env is how values are read and written: the rewriter's session has
// DateStyle ISO and TimeZone UTC (setSession).
var env = func() onion.Env {
	e, err := onion.NewEnv("ISO, MDY", "UTC")
	if err != nil {
		panic(err)
	}
	return e
}()

// convert converts the rows of ru that match cond and still need it, with
// their rows locked in tx (so that no write of the old form can slip in
// between the read and the write), and returns how many it wrote. limit
// 0 means all; skipLocked skips rows other transactions hold.
func (r *Rewriter) convert(ctx context.Context, tx pgx.Tx, ru *run, cond string, limit int, skipLocked bool) (int64, error) {
	if err := r.currentLayers(ctx, tx, ru); err != nil {
		return 0, err
	}
	sel := []string{"ctid", quoteIdent(rewrite.SaltColumn)}
	var pending []string
	for _, j := range ru.jobs {
		pending = append(pending, j.pending())
		for _, c := range j.sources() {
			sel = append(sel, quoteIdent(c))
		}
	}
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s AND (%s) FOR NO KEY UPDATE", strings.Join(sel, ", "), ru.rel, cond, strings.Join(pending, " OR "))
	if skipLocked {
		sql += " SKIP LOCKED"
	}
	if limit > 0 {
		sql += fmt.Sprintf(" LIMIT %d", limit)
	}
	rr := tx.Conn().PgConn().ExecParams(ctx, sql, nil, nil, nil, []int16{1})
	var rows [][][]byte
	for rr.NextRow() {
		vals := rr.Values()
		row := make([][]byte, len(vals))
		for i, v := range vals {
			if v != nil {
				row[i] = append([]byte{}, v...)
			}
		}
		rows = append(rows, row)
	}
	if _, err := rr.Close(); err != nil {
		return 0, fmt.Errorf("reading %s: %w", ru.rel, err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	w := newWrite(ru)
	for _, row := range rows {
		if err := w.add(ru, row); err != nil {
			return 0, err
		}
	}
	for from := 0; from < len(w.tids); from += writeChunk {
		sql, args := w.statement(ru, from, min(from+writeChunk, len(w.tids)))
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			return 0, fmt.Errorf("writing %s: %w", ru.rel, err)
		}
	}
	return int64(len(rows)), nil
}

// writeChunk is the most rows one UPDATE writes.
const writeChunk = 2000

// write holds the new forms of a batch's rows, column by column, for one
// set-based UPDATE: each row is found by its ctid (a TID scan per row).
type write struct {
	tids  []pgtype.TID
	salts [][]byte // a new row salt, or nil to keep the row's
	// cols are the new form's physical columns, in order: for each job
	// its cells (or its plaintext column), and vals[i] their values,
	// row by row.
	cols []writeCol
	vals [][]any
}

type writeCol struct {
	name   string
	expr   string // of the parameter's element u.cN: the cast to the column's type
	sqlArr string // the parameter's array type
}

func newWrite(ru *run) *write {
	w := &write{}
	for _, j := range ru.jobs {
		if j.new == nil {
			w.cols = append(w.cols, writeCol{name: j.plain, expr: "CAST(%s AS " + j.old.col.Type + ")", sqlArr: "text[]"})
			continue
		}
		for _, pc := range j.new.cells {
			c := writeCol{name: pc.Name, expr: "%s", sqlArr: "bytea[]"}
			switch {
			case pc.SQLType == "uuid":
				c.expr = "CAST(encode(%s, 'hex') AS uuid)"
			case pc.Suffix == "_srch":
				c.expr, c.sqlArr = "CAST(%s AS bigint[])", "text[]"
			}
			w.cols = append(w.cols, c)
		}
	}
	w.vals = make([][]any, len(w.cols))
	return w
}

// add converts one row (ctid, salt, then each job's old form).
func (w *write) add(ru *run, row [][]byte) error {
	if len(row[0]) != 6 {
		return fmt.Errorf("recrypt: unexpected tid of %d bytes", len(row[0]))
	}
	w.tids = append(w.tids, pgtype.TID{BlockNumber: binary.BigEndian.Uint32(row[0]), OffsetNumber: binary.BigEndian.Uint16(row[0][4:]), Valid: true})
	salt := row[1]
	var newSalt []byte
	col, i := 0, 2
	put := func(v any) {
		w.vals[col] = append(w.vals[col], v)
		col++
	}
	for _, j := range ru.jobs {
		// The value, from the old form.
		var v onion.Value
		var err error
		if j.old == nil {
			raw := row[i]
			i++
			if raw != nil {
				if v, err = j.typ.ParseBinary(raw); err != nil {
					return fmt.Errorf("reading a value of %s: %w", j.name, err)
				}
			}
		} else {
			var cells onion.Cells
			var override []byte
			for _, pc := range j.old.cells {
				raw := row[i]
				i++
				switch pc.Suffix {
				case "_eq":
					cells.Eq = raw
				case "_ord":
					cells.Ord = raw
				case "_add":
					cells.Add = raw
				case "_val":
					cells.Val = raw
				case rewrite.SaltSuffix:
					override = raw
				}
			}
			if v, err = decrypt(j, cells, salt, override); err != nil {
				return err
			}
		}
		// The new form; NULL stays NULL.
		if j.new == nil {
			if v.IsNull() {
				put(nil)
			} else {
				put(string(j.typ.AppendText(nil, v, env)))
			}
			continue
		}
		var cells onion.Cells
		if !v.IsNull() {
			if salt == nil {
				salt = rnd.NewSalt()
				newSalt = salt
			}
			if cells, err = j.new.encrypt(v, salt); err != nil {
				return fmt.Errorf("encrypting a value of %s: %w", j.name, err)
			}
		}
		for _, pc := range j.new.cells {
			switch pc.Suffix {
			case "_eq":
				put(cells.Eq)
			case "_ord":
				put(cells.Ord)
			case "_add":
				put(cells.Add)
			case "_val":
				put(cells.Val)
			case "_srch":
				put(tokensText(cells.Search))
			default: // the salt override: the cells use the row's salt
				put(nil)
			}
		}
	}
	w.salts = append(w.salts, newSalt)
	return nil
}

// statement is the UPDATE of rows [from, to) and its arguments.
func (w *write) statement(ru *run, from, to int) (string, []any) {
	args := []any{w.tids[from:to], w.salts[from:to]}
	names := []string{"tid", "salt"}
	sets := []string{fmt.Sprintf("%s = coalesce(t.%s, u.salt)", quoteIdent(rewrite.SaltColumn), quoteIdent(rewrite.SaltColumn))}
	arrays := []string{"$1::tid[]", "$2::bytea[]"}
	for k, c := range w.cols {
		args = append(args, sliceOf(w.vals[k][from:to], c.sqlArr))
		arrays = append(arrays, fmt.Sprintf("$%d::%s", len(args), c.sqlArr))
		names = append(names, fmt.Sprintf("c%d", k))
		sets = append(sets, fmt.Sprintf("%s = %s", quoteIdent(c.name), fmt.Sprintf(c.expr, fmt.Sprintf("u.c%d", k))))
	}
	return fmt.Sprintf("UPDATE %s AS t SET %s FROM unnest(%s) AS u(%s) WHERE t.ctid = u.tid",
		ru.rel, strings.Join(sets, ", "), strings.Join(arrays, ", "), strings.Join(names, ", ")), args
}

// sliceOf is vals as the Go slice pgx encodes as an array of sqlArr.
func sliceOf(vals []any, sqlArr string) any {
	if sqlArr == "text[]" {
		out := make([]*string, len(vals))
		for i, v := range vals {
			if s, ok := v.(string); ok {
				out[i] = &s
			}
		}
		return out
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			out[i] = b
		}
	}
	return out
}

// tokensText is search tokens as a bigint[] literal (nil for none).
func tokensText(tokens []int64) any {
	if tokens == nil {
		return nil
	}
	b := []byte{'{'}
	for i, t := range tokens {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, t, 10)
	}
	return string(append(b, '}'))
}

// currentLayers brings the old forms of ru's jobs up to date for tx: a
// proxy may have peeled an onion (or recorded an increment) since the run
// began. The shared onion lock keeps such changes out until tx ends.
func (r *Rewriter) currentLayers(ctx context.Context, tx pgx.Tx, ru *run) error {
	var olds []*job
	for _, j := range ru.jobs {
		if j.old != nil {
			olds = append(olds, j)
		}
	}
	if len(olds) == 0 {
		return nil
	}
	class, key := ru.tableID.OnionLock()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock_shared($1, $2)", class, key); err != nil {
		return err
	}
	snap, err := catalog.Load(ctx, tx, r.Keys.MACKey)
	if err != nil {
		return err
	}
	for _, j := range olds {
		c := snap.ColumnByID(j.old.col.ID)
		if c == nil {
			return fmt.Errorf("column %s left the catalog during the rewrite", j.name)
		}
		j.old.col.Onions, j.old.col.Incremented = c.Onions, c.Incremented
	}
	return nil
}

// decrypt reads the value of an encrypted column's cells as the proxy
// does: from the Eq onion at its current layer, or from the Add onion of
// a row an increment left there.
func decrypt(j *job, cells onion.Cells, rowSalt, override []byte) (onion.Value, error) {
	salt := rowSalt
	if override != nil {
		salt = override
	}
	if cells.Eq == nil && cells.Add != nil {
		v, err := j.old.oc.DecryptAdd(cells.Add)
		if err != nil {
			return onion.Value{}, fmt.Errorf("decrypting a value of %s: %w", j.name, err)
		}
		return v, nil
	}
	v, err := j.old.oc.DecryptAt(cells, salt, onion.Layer(j.old.col.Onions["eq"]))
	if err != nil {
		return onion.Value{}, fmt.Errorf("decrypting a value of %s: %w", j.name, err)
	}
	return v, nil
}

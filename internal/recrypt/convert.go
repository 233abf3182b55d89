package recrypt

import (
	"context"
	"encoding/binary"
	"fmt"
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
	b := &pgx.Batch{}
	for _, row := range rows {
		if err := r.queueRow(b, ru, row); err != nil {
			return 0, err
		}
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return 0, fmt.Errorf("writing %s: %w", ru.rel, err)
	}
	return int64(len(rows)), nil
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

// queueRow converts one row (ctid, salt, then each job's old form) and
// queues its UPDATE.
func (r *Rewriter) queueRow(b *pgx.Batch, ru *run, row [][]byte) error {
	if len(row[0]) != 6 {
		return fmt.Errorf("recrypt: unexpected tid of %d bytes", len(row[0]))
	}
	tid := pgtype.TID{BlockNumber: binary.BigEndian.Uint32(row[0]), OffsetNumber: binary.BigEndian.Uint16(row[0][4:]), Valid: true}
	salt := row[1]
	var sets []string
	args := []any{tid}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	i := 2
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
		if v.IsNull() {
			continue // NULL in either form
		}
		// The new form.
		if j.new == nil {
			sets = append(sets, fmt.Sprintf("%s = CAST(%s::text AS %s)", quoteIdent(j.plain), arg(string(j.typ.AppendText(nil, v, env))), j.old.col.Type))
			continue
		}
		if salt == nil {
			salt = rnd.NewSalt()
			sets = append(sets, quoteIdent(rewrite.SaltColumn)+" = "+arg(salt))
		}
		cells, err := j.new.oc.Encrypt(v, salt)
		if err != nil {
			return fmt.Errorf("encrypting a value of %s: %w", j.name, err)
		}
		for _, pc := range j.new.cells {
			var x any
			switch pc.Suffix {
			case "_eq":
				x = cellArg(cells.Eq, pc.SQLType)
			case "_ord":
				x = cellArg(cells.Ord, pc.SQLType)
			case "_add":
				x = cells.Add
			case "_val":
				x = cells.Val
			case "_srch":
				x = cells.Search
			case rewrite.SaltSuffix:
				x = nil // the cells use the row's salt
			}
			sets = append(sets, fmt.Sprintf("%s = %s::%s", quoteIdent(pc.Name), arg(x), pc.SQLType))
		}
	}
	if len(sets) == 0 {
		return nil
	}
	b.Queue(fmt.Sprintf("UPDATE %s SET %s WHERE ctid = $1", ru.rel, strings.Join(sets, ", ")), args...)
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

// cellArg is the parameter of a cell of SQL type sqlType.
func cellArg(b []byte, sqlType string) any {
	if b == nil {
		return nil
	}
	if sqlType == "uuid" {
		var u pgtype.UUID
		copy(u.Bytes[:], b)
		u.Valid = true
		return u
	}
	return b
}

package recrypt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// scrubColumn is the pgonion.rewrites column name of a table's scrub.
const scrubColumn = ""

// Scrub is the final step of adoption: it drops the plaintext the cutover
// set aside (c__plaintext) for every encrypted column of schema.table,
// then rewrites every row, so that no live row version holds it any more,
// and vacuums the table: dumps and the WAL written from then on hold no
// plaintext of those columns (older WAL, backups and replicas still do).
// It reports the columns whose plaintext it dropped; running it again
// resumes an interrupted scrub.
func (r *Rewriter) Scrub(ctx context.Context, schema, table string) ([]string, error) {
	unlock, err := r.lockTable(ctx, schema, table)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rel := qualified(schema, table)
	var dropped []string
	var id catalog.ID
	var from int64
	err = pgx.BeginFunc(ctx, r.Conn, func(tx pgx.Tx) error {
		snap, err := catalog.Load(ctx, tx, r.Keys.MACKey)
		if err != nil {
			return err
		}
		t := snap.Table(schema, table)
		if t == nil {
			return fmt.Errorf("table %s has no encrypted column (the catalog does not list it)", rel)
		}
		id = t.ID
		attrs, err := r.attributes(ctx, tx, rel)
		if err != nil {
			return err
		}
		for _, a := range attrs {
			name, ok := strings.CutSuffix(a.name, PlaintextSuffix)
			if c := t.Column(name); ok && c != nil && c.Policy != catalog.Plain {
				dropped = append(dropped, name)
			}
		}
		err = tx.QueryRow(ctx, "SELECT next_block FROM pgonion.rewrites WHERE table_id = $1 AND column_name = $2 AND kind = 'scrub'", id, scrubColumn).Scan(&from)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && len(dropped) == 0:
			from = -1 // nothing to do
			return nil
		case errors.Is(err, pgx.ErrNoRows):
			from = 0
		case err != nil:
			return err
		}
		if r.DryRun {
			return nil
		}
		for _, name := range dropped {
			if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", rel, quoteIdent(name+PlaintextSuffix))); err != nil {
				return err
			}
		}
		target := []byte("{}")
		_, err = tx.Exec(ctx, `INSERT INTO pgonion.rewrites (table_id, column_name, kind, target, mac) VALUES ($1, $2, 'scrub', $3, $4)
			ON CONFLICT (table_id, column_name) DO NOTHING`, id, scrubColumn, string(target), targetMAC(r.Keys.MACKey, id, "scrub", target))
		return err
	})
	if err != nil || from < 0 || r.DryRun {
		return dropped, err
	}
	total, _, err := tableSize(ctx, r.Conn, rel)
	if err != nil {
		return dropped, err
	}
	began := time.Now()
	k := r.batchBlocks() * 4
	for b := from; b < total; b += k {
		end := min(b+k, 1<<32-1)
		err := pgx.BeginFunc(ctx, r.Conn, func(tx pgx.Tx) error {
			// A new version of each row: dropped columns are stored as
			// NULL in it.
			if _, err := tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET %s = %s WHERE ctid >= '(%d,0)'::tid AND ctid < '(%d,0)'::tid",
				rel, quoteIdent(rewrite.SaltColumn), quoteIdent(rewrite.SaltColumn), b, end)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "UPDATE pgonion.rewrites SET next_block = $3, updated = now() WHERE table_id = $1 AND column_name = $2", id, scrubColumn, end)
			return err
		})
		if err != nil {
			return dropped, err
		}
		p := Progress{Table: table, Phase: "scrub", Blocks: end, Total: total, Since: time.Since(began)}
		r.report(p)
		if r.AfterBatch != nil {
			if err := r.AfterBatch(p); err != nil {
				return dropped, err
			}
		}
	}
	// The old row versions go; their space is reused.
	if _, err := r.Conn.Exec(ctx, "VACUUM "+rel); err != nil {
		return dropped, fmt.Errorf("vacuuming %s: %w", rel, err)
	}
	_, err = r.Conn.Exec(ctx, "DELETE FROM pgonion.rewrites WHERE table_id = $1 AND column_name = $2", id, scrubColumn)
	return dropped, err
}

// Abort undoes an unfinished rewrite of columns of schema.table (every
// one under way when none is named): their shadows and triggers are
// dropped and the old form stays as it was. A table that entered the
// catalog for it and has no encrypted column leaves it again.
func (r *Rewriter) Abort(ctx context.Context, schema, table string, columns []string) ([]string, error) {
	unlock, err := r.lockTable(ctx, schema, table)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rel := qualified(schema, table)
	var aborted []string
	err = pgx.BeginFunc(ctx, r.Conn, func(tx pgx.Tx) error {
		snap, err := catalog.Load(ctx, tx, r.Keys.MACKey)
		if err != nil {
			return err
		}
		t := snap.Table(schema, table)
		if t == nil {
			return nil
		}
		recs, err := r.recordedRewrites(ctx, tx, t.ID)
		if err != nil {
			return err
		}
		attrs, err := r.attributes(ctx, tx, rel)
		if err != nil {
			return err
		}
		for name, rec := range recs {
			if rec.kind == "scrub" || len(columns) > 0 && !slices.Contains(columns, name) {
				continue
			}
			from := t.Column(name)
			if from == nil {
				return fmt.Errorf("column %s.%s left the catalog", table, name)
			}
			j, err := r.newJob(rec.kind, *from, rec.target)
			if err != nil {
				return err
			}
			for _, a := range attrs {
				if j.old == nil && a.name == j.plain || j.old != nil && a.name == j.old.cell("_eq") {
					j.attnum = a.num
				}
			}
			if _, err := tx.Exec(ctx, fmt.Sprintf("DROP TRIGGER IF EXISTS %s ON %s", quoteIdent(j.triggerName()), rel)); err != nil {
				return err
			}
			var drops []string
			for _, s := range j.shadows() {
				drops = append(drops, "DROP COLUMN IF EXISTS "+quoteIdent(s))
			}
			if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s %s", rel, strings.Join(drops, ", "))); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "DELETE FROM pgonion.rewrites WHERE table_id = $1 AND column_name = $2", t.ID, name); err != nil {
				return err
			}
			aborted = append(aborted, name)
		}
		var left int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM pgonion.rewrites WHERE table_id = $1", t.ID).Scan(&left); err != nil {
			return err
		}
		encrypted := false
		for _, c := range t.Columns {
			encrypted = encrypted || c.Policy != catalog.Plain
		}
		if left == 0 && !encrypted {
			if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s DROP COLUMN IF EXISTS %s", rel, quoteIdent(rewrite.SaltColumn))); err != nil {
				return err
			}
			if err := dropTwin(ctx, tx, t.Schema, t.Name); err != nil {
				return err
			}
			return catalog.DropTable(ctx, tx, r.Keys.MACKey, t.ID)
		}
		return nil
	})
	return aborted, err
}

package recrypt

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Querier is what the status functions read with.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Underway is a rewrite in progress (or interrupted), as its checkpoint
// says.
type Underway struct {
	Schema, Table, Column string // Column is "" for a scrub
	Kind                  string // "encrypt", "decrypt" or "scrub"
	Block, Blocks         int64  // next heap block of the backfill, of the table's blocks
	Rows                  int64  // rows converted so far
	Started, Updated      time.Time
}

// Rate is the rows converted per second so far (0 when unknown).
func (u Underway) Rate() float64 {
	if d := u.Updated.Sub(u.Started).Seconds(); d > 0 {
		return float64(u.Rows) / d
	}
	return 0
}

// Left estimates the time the backfill still needs from the blocks done
// so far (0 when unknown).
func (u Underway) Left() time.Duration {
	if u.Block <= 0 || u.Block >= u.Blocks {
		return 0
	}
	d := u.Updated.Sub(u.Started)
	return time.Duration(float64(d) * float64(u.Blocks-u.Block) / float64(u.Block))
}

// Rewrites lists the rewrites under way in the database.
func Rewrites(ctx context.Context, q Querier) ([]Underway, error) {
	rows, err := q.Query(ctx, `SELECT t.schema_name, t.table_name, r.column_name, r.kind, r.next_block,
		coalesce(pg_relation_size(to_regclass(quote_ident(t.schema_name) || '.' || quote_ident(t.physical_name))) / current_setting('block_size')::bigint, 0),
		r.rows_done, r.started, r.updated
		FROM pgonion.rewrites r JOIN pgonion.tables t USING (table_id) ORDER BY 1, 2, 3`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Underway, error) {
		var u Underway
		err := r.Scan(&u.Schema, &u.Table, &u.Column, &u.Kind, &u.Block, &u.Blocks, &u.Rows, &u.Started, &u.Updated)
		return u, err
	})
}

// PlaintextAside lists, as schema.table.column, the adopted columns whose
// plaintext still waits in c__plaintext for the final step (Scrub).
func PlaintextAside(ctx context.Context, q Querier) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT t.schema_name || '.' || t.table_name || '.' || c.column_name
		FROM pgonion.tables t JOIN pgonion.columns c USING (table_id)
		JOIN pg_attribute a ON a.attrelid = to_regclass(quote_ident(t.schema_name) || '.' || quote_ident(t.physical_name))
			AND a.attname = c.column_name || '`+PlaintextSuffix+`' AND NOT a.attisdropped
		WHERE c.policy <> 'plain' ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

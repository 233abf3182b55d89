package recrypt

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
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

// UnderwayTargets returns, by column, the forms the rewrites under way on
// schema.table turn columns into (as recorded; not authenticated: for
// deciding whether to wait for them, never for reading data).
func UnderwayTargets(ctx context.Context, q Querier, schema, table string) (map[string]catalog.Column, error) {
	rows, err := q.Query(ctx, `SELECT r.column_name, r.target FROM pgonion.rewrites r JOIN pgonion.tables t USING (table_id)
		WHERE t.schema_name = $1 AND t.table_name = $2`, schema, table)
	if err != nil {
		return nil, err
	}
	out := map[string]catalog.Column{}
	for rows.Next() {
		var name, target string
		if err := rows.Scan(&name, &target); err != nil {
			return nil, err
		}
		var c catalog.Column
		_ = json.Unmarshal([]byte(target), &c) // a scrub's row has no form
		out[name] = c
	}
	return out, rows.Err()
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

package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestEnumColumns: encrypted enum columns compare, sort, group and take
// MIN/MAX by the type's order (its labels' sort order, through the Ord
// onion), reject labels the type lacks as PostgreSQL does, and keep
// working after ALTER TYPE ... ADD VALUE puts a label between others.
func TestEnumColumns(t *testing.T) {
	ctx := context.Background()
	d := newTypeDiff(t, `CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')`)
	d.both(`CREATE DOMAIN good_mood AS mood NOT NULL`)
	d.both(`CREATE TABLE en (id int PRIMARY KEY, m mood, m2 mood NOT NULL DEFAULT 'ok', g good_mood)`)
	for i, row := range []string{"'sad', 'happy', 'ok'", "'happy', DEFAULT, 'sad'", "NULL, 'sad', 'happy'", "'ok', 'ok', 'ok'"} {
		d.both(fmt.Sprintf("INSERT INTO en VALUES (%d, %s)", i, row), pgx.QueryExecModeSimpleProtocol)
	}
	d.both("INSERT INTO en (id, m, g) VALUES ($1, $2, $3)", 10, "happy", "ok")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		_, gerr := d.c.Exec(ctx, "INSERT INTO en (id, m, g) VALUES (20, 'meh', 'ok')", mode)
		_, werr := d.plain.Exec(ctx, "INSERT INTO en (id, m, g) VALUES (20, 'meh', 'ok')", mode)
		if pgCode(gerr) != "22P02" || pgCode(werr) != "22P02" || !strings.Contains(gerr.Error(), `invalid input value for enum mood: "meh"`) {
			t.Errorf("%v: an unknown label: through the proxy %v, plaintext %v", mode, gerr, werr)
		}
		if _, gerr := d.c.Exec(ctx, "INSERT INTO en (id, m) VALUES (21, 'sad')", mode); pgCode(gerr) != "23502" {
			t.Errorf("%v: a NULL domain over an enum: %v, want 23502", mode, gerr)
		}
	}
	queries := []string{
		"SELECT id, m, m2, g FROM en ORDER BY id",
		"SELECT id FROM en WHERE m < m2 ORDER BY id",
		"SELECT id FROM en WHERE m = 'happy' ORDER BY id",
		"SELECT id FROM en WHERE m > 'sad' ORDER BY id",
		"SELECT id FROM en WHERE m BETWEEN 'sad' AND 'ok' ORDER BY id",
		"SELECT id, m FROM en ORDER BY m, id",
		"SELECT id, m FROM en ORDER BY m DESC NULLS LAST, id",
		"SELECT min(m), max(m), min(m2), max(m2) FROM en",
		"SELECT m, count(*) FROM en GROUP BY m ORDER BY m",
		"SELECT id FROM en WHERE m = $1 ORDER BY id",
		"SELECT id FROM en WHERE m = 'meh'",
	}
	d.compare(queries, nil, "ok")
	// A label between two others: a fractional sort order.
	d.both(`ALTER TYPE mood ADD VALUE 'meh' BEFORE 'ok'`, pgx.QueryExecModeSimpleProtocol)
	d.both(`ALTER TYPE mood ADD VALUE 'ecstatic'`, pgx.QueryExecModeSimpleProtocol)
	d.both("INSERT INTO en (id, m, m2, g) VALUES (30, 'meh', 'ecstatic', 'meh')", pgx.QueryExecModeSimpleProtocol)
	d.both("INSERT INTO en (id, m, m2, g) VALUES ($1, $2, $3, $4)", 31, "ecstatic", "meh", "sad")
	d.compare(queries, nil, "meh")
	// What would change stored labels is refused; the session goes on.
	for _, sql := range []string{`ALTER TYPE mood RENAME VALUE 'ok' TO 'fine'`, `DROP TYPE mood CASCADE`, `DROP DOMAIN good_mood CASCADE`} {
		if _, err := d.c.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); pgCode(err) != "0A000" || !strings.Contains(err.Error(), "en.") {
			t.Errorf("%s: %v, want a refusal naming the column", sql, err)
		}
	}
	// A column of an enum added later.
	d.both(`ALTER TABLE en ADD COLUMN m3 mood`, pgx.QueryExecModeSimpleProtocol)
	d.both(`UPDATE en SET m3 = 'ecstatic' WHERE id < 3`, pgx.QueryExecModeSimpleProtocol)
	d.compare([]string{"SELECT id, m3 FROM en ORDER BY m3, id", "SELECT id FROM en WHERE m3 = 'ecstatic' ORDER BY id"}, nil)
}

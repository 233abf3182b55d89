package engine_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestFloat8Columns: encrypted double precision columns (Eq and Ord
// onions) written with literals and text and binary parameters answer
// as on plaintext PostgreSQL, with -0 equal to 0 and NaN equal to NaN
// and above every number; what the proxy cannot compute exactly (sums of
// floats depend on the order of addition) is refused, never answered
// differently.
func TestFloat8Columns(t *testing.T) {
	ctx := context.Background()
	d := newTypeDiff(t, `CREATE TABLE fl (id int PRIMARY KEY, f double precision, g float8 NOT NULL DEFAULT 0, CHECK (g >= 0 OR g = 'NaN'))`)
	for i, lit := range []string{"0", "-0", "1.5", "'NaN'", "'Infinity'", "'-Infinity'", "1e-320", "0.1", "3", "-2.5e10", "NULL", "1e15", "123456.789"} {
		d.both(fmt.Sprintf("INSERT INTO fl VALUES (%d, %s, %d)", i, lit, i), pgx.QueryExecModeSimpleProtocol)
	}
	for i, v := range []any{0.3, math.Copysign(0, -1), math.NaN(), math.Inf(1), 5e-324, nil, "7.25", "-0"} {
		d.both("INSERT INTO fl (id, f) VALUES ($1, $2)", 100+i, v)
	}
	if _, err := d.c.Exec(ctx, "INSERT INTO fl VALUES (200, 1, -1)"); pgCode(err) != "23514" {
		t.Errorf("a negative g: %v, want 23514", err)
	}
	if _, err := d.c.Exec(ctx, "INSERT INTO fl VALUES (201, '1e400', 1)"); pgCode(err) != "22003" {
		t.Errorf("1e400: %v, want 22003", err)
	}
	queries := []string{
		"SELECT id, f, g FROM fl ORDER BY id",
		"SELECT id FROM fl WHERE f = 0 ORDER BY id",
		"SELECT id FROM fl WHERE f = 'NaN' ORDER BY id",
		"SELECT id FROM fl WHERE f > 1 ORDER BY id",
		"SELECT id FROM fl WHERE f <= 0.1 ORDER BY id",
		"SELECT id FROM fl WHERE f BETWEEN -1 AND 1 ORDER BY id",
		"SELECT id FROM fl WHERE f IN (1.5, 3, 'Infinity') ORDER BY id",
		"SELECT id FROM fl WHERE f <> 0 ORDER BY id",
		"SELECT id, f FROM fl ORDER BY f, id",
		"SELECT id, f FROM fl ORDER BY f DESC NULLS LAST, id",
		"SELECT count(DISTINCT f), count(f), count(*) FROM fl",
		"SELECT id FROM fl WHERE f > $1 ORDER BY id",
	}
	maybe := []string{
		"SELECT f, count(*) FROM fl GROUP BY f ORDER BY f",
		"SELECT min(f), max(f) FROM fl WHERE f < 'Infinity'",
		"SELECT sum(f) FROM fl WHERE f < 'Infinity'",
		"SELECT f * 2 FROM fl ORDER BY id",
	}
	d.compare(queries, maybe, 0.2)
	d.both("UPDATE fl SET f = 2.75 WHERE f = 0")
	d.compare([]string{"SELECT id, f FROM fl ORDER BY id"}, nil)
}

// TestFloat4Columns: encrypted real columns answer as on plaintext
// PostgreSQL, including its comparisons of a real with a numeric
// constant as double precision (f = 0.1 finds no real 0.1; f = '0.1' and
// an untyped parameter do).
func TestFloat4Columns(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE fr (id int PRIMARY KEY, f real, g float(10) NOT NULL DEFAULT 0, h double precision)`)
	for i, lit := range []string{"0", "-0", "1.5", "'NaN'", "'Infinity'", "'-Infinity'", "1e-45", "0.1", "'0.1'", "16777217", "NULL", "3.4028235e38", "123456.789", "1e-5"} {
		d.both(fmt.Sprintf("INSERT INTO fr VALUES (%d, %s, %d, %s)", i, lit, i, lit), pgx.QueryExecModeSimpleProtocol)
	}
	for i, v := range []any{float32(0.3), float32(math.Copysign(0, -1)), float32(math.NaN()), 0.1, nil, "7.25", "-0", "1e-40"} {
		d.both("INSERT INTO fr (id, f) VALUES ($1, $2)", 100+i, v)
	}
	if _, err := d.c.Exec(context.Background(), "INSERT INTO fr VALUES (201, '1e39', 1)"); pgCode(err) != "22003" {
		t.Errorf("1e39: %v, want 22003", err)
	}
	queries := []string{
		"SELECT id, f, g, h FROM fr ORDER BY id",
		"SELECT id FROM fr WHERE f = 0 ORDER BY id",
		"SELECT id FROM fr WHERE f = 0.1 ORDER BY id",
		"SELECT id FROM fr WHERE f = '0.1' ORDER BY id",
		"SELECT id FROM fr WHERE f = 0.1::real ORDER BY id",
		"SELECT id FROM fr WHERE f = 16777217 ORDER BY id",
		"SELECT id FROM fr WHERE f = '16777217' ORDER BY id",
		"SELECT id FROM fr WHERE f = 'NaN' ORDER BY id",
		"SELECT id FROM fr WHERE f > 1 ORDER BY id",
		"SELECT id FROM fr WHERE f <= 0.1 ORDER BY id",
		"SELECT id FROM fr WHERE f < '0.1' ORDER BY id",
		"SELECT id FROM fr WHERE f BETWEEN -1 AND 1 ORDER BY id",
		"SELECT id FROM fr WHERE f IN (1.5, 3, 'Infinity') ORDER BY id",
		"SELECT id, f FROM fr ORDER BY f, id",
		"SELECT id, f FROM fr ORDER BY f DESC NULLS LAST, id",
		"SELECT count(DISTINCT f), count(f), count(*) FROM fr",
		"SELECT id FROM fr WHERE f = $1 ORDER BY id",
		"SELECT id FROM fr WHERE f >= $1 ORDER BY id",
	}
	maybe := []string{
		"SELECT min(f), max(f) FROM fr WHERE f < 'Infinity'",
		"SELECT f * 2 FROM fr ORDER BY id",
		"SELECT id FROM fr WHERE f = h ORDER BY id",
	}
	for _, arg := range []any{"0.1", float32(0.1), "16777217"} {
		d.compare(queries, maybe, arg)
	}
	d.both("UPDATE fr SET f = 2.75 WHERE f = 0")
	d.both("UPDATE fr SET f = $1 WHERE id = $2", float32(9.5), 1)
	d.compare([]string{"SELECT id, f FROM fr ORDER BY id"}, nil)
}

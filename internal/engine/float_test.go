package engine_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestFloat8Columns: encrypted double precision columns (Eq and Ord
// onions) written with literals and text and binary parameters answer
// as on plaintext PostgreSQL, with -0 equal to 0 and NaN equal to NaN
// and above every number; what the proxy cannot compute exactly (sums of
// floats depend on the order of addition) is refused, never answered
// differently.
func TestFloat8Columns(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	plain, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	const ddl = `CREATE TABLE fl (id int PRIMARY KEY, f double precision, g float8 NOT NULL DEFAULT 0, CHECK (g >= 0 OR g = 'NaN'))`
	c := p.connect(t, pgx.QueryExecModeCacheStatement)
	mustExec(t, c, ddl)
	mustExec(t, plain, ddl)
	lits := []string{"0", "-0", "1.5", "'NaN'", "'Infinity'", "'-Infinity'", "1e-320", "0.1", "3", "-2.5e10", "NULL", "1e15", "123456.789"}
	for i, lit := range lits {
		for _, conn := range []*pgx.Conn{c, plain} {
			mustExec(t, conn, fmt.Sprintf("INSERT INTO fl VALUES (%d, %s, %d)", i, lit, i), pgx.QueryExecModeSimpleProtocol)
		}
	}
	for i, v := range []any{0.3, math.Copysign(0, -1), math.NaN(), math.Inf(1), 5e-324, nil, "7.25", "-0"} {
		for _, conn := range []*pgx.Conn{c, plain} {
			mustExec(t, conn, "INSERT INTO fl (id, f) VALUES ($1, $2)", 100+i, v)
		}
	}
	if _, err := c.Exec(ctx, "INSERT INTO fl VALUES (200, 1, -1)"); pgCode(err) != "23514" {
		t.Errorf("a negative g: %v, want 23514", err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO fl VALUES (201, '1e400', 1)"); pgCode(err) != "22003" {
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
		"UPDATE fl SET f = 2.75 WHERE f = 0 RETURNING id, f",
		"SELECT id, f FROM fl ORDER BY id",
	}
	maybe := []string{
		"SELECT f, count(*) FROM fl GROUP BY f ORDER BY f",
		"SELECT min(f), max(f) FROM fl WHERE f < 'Infinity'",
		"SELECT sum(f) FROM fl WHERE f < 'Infinity'",
		"SELECT f * 2 FROM fl ORDER BY id",
	}
	run := func(conn *pgx.Conn, q string) (string, error) {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, 0.2)
		}
		rows, err := conn.Query(ctx, q, args...)
		if err != nil {
			return "", err
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			v, err := r.Values()
			return fmt.Sprint(v), err
		})
		return strings.Join(out, "\n"), err
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		c := p.connect(t, mode)
		for i, q := range append(queries, maybe...) {
			if strings.HasPrefix(q, "UPDATE") && mode == pgx.QueryExecModeSimpleProtocol {
				continue
			}
			got, gerr := run(c, q)
			want, werr := run(plain, q)
			switch {
			case werr != nil:
				if pgCode(gerr) != pgCode(werr) {
					t.Errorf("%v: %s: through the proxy %v, plaintext %v", mode, q, gerr, werr)
				}
			case gerr != nil && i >= len(queries) && pgCode(gerr) == "0A000":
				t.Logf("refused: %s: %v", q, gerr)
			case gerr != nil:
				t.Errorf("%v: %s: %v", mode, q, gerr)
			case got != want:
				t.Errorf("%v: %s: through the proxy\n%s\nplaintext\n%s", mode, q, got, want)
			}
		}
	}
}

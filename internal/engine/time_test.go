package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestTimeColumns: encrypted time columns (Eq and Ord onions), written
// with literals and text and binary parameters, answer as on plaintext
// PostgreSQL: equality, ranges, ORDER BY, MIN and MAX, 24:00:00, the
// proxy's own sort and comparisons.
func TestTimeColumns(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	plain, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	const ddl = `CREATE TABLE alarm (id int PRIMARY KEY, "desc" varchar(100), "time" time NOT NULL, CHECK ("time" >= '01:00' OR "time" = '00:00'))`
	c := p.connect(t, pgx.QueryExecModeCacheStatement)
	mustExec(t, c, ddl)
	mustExec(t, plain, ddl)
	for i, lit := range []string{"'00:00'", "'04:05:06.789'", "'23:59:59.999999'", "'24:00:00'", "'12:00 AM'", "'1:30 pm'", "'allballs'", "'10:00'"} {
		for _, conn := range []*pgx.Conn{c, plain} {
			mustExec(t, conn, fmt.Sprintf("INSERT INTO alarm VALUES (%d, 'a%d', %s)", i, i, lit), pgx.QueryExecModeSimpleProtocol)
		}
	}
	for i, v := range []any{"05:00", "17:45:30.5"} {
		for _, conn := range []*pgx.Conn{c, plain} {
			mustExec(t, conn, `INSERT INTO alarm VALUES ($1, 'p', $2)`, 100+i, v)
		}
	}
	// pgx sends a pgtype.Time in binary.
	for _, conn := range []*pgx.Conn{c, plain} {
		mustExec(t, conn, `INSERT INTO alarm VALUES ($1, 'b', $2::time)`, 200, time.Date(2000, 1, 1, 8, 30, 0, 0, time.UTC).Format("15:04:05"))
	}
	if _, err := c.Exec(ctx, `INSERT INTO alarm VALUES (300, 'x', '00:30')`); pgCode(err) != "23514" {
		t.Errorf("a time the CHECK refuses: %v, want 23514", err)
	}
	if _, err := c.Exec(ctx, `INSERT INTO alarm VALUES (301, 'x', '25:00')`); pgCode(err) != "22008" {
		t.Errorf("25:00: %v, want 22008", err)
	}
	queries := []string{
		`SELECT id, "time" FROM alarm ORDER BY id`,
		`SELECT id FROM alarm WHERE "time" = '04:05:06.789' ORDER BY id`,
		`SELECT id FROM alarm WHERE "time" > '12:00' ORDER BY id`,
		`SELECT id FROM alarm WHERE "time" BETWEEN '01:00' AND '17:45:30.5' ORDER BY id`,
		`SELECT id, "time" FROM alarm ORDER BY "time" DESC, id`,
		`SELECT min("time"), max("time") FROM alarm`,
		`SELECT count(DISTINCT "time") FROM alarm`,
		`SELECT "time", count(*) FROM alarm GROUP BY "time" ORDER BY 1`,
		`SELECT id FROM alarm WHERE "time" < $1 ORDER BY id`,
	}
	run := func(conn *pgx.Conn, q string) (string, error) {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, "05:00:00")
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
		for _, q := range queries {
			got, gerr := run(c, q)
			want, werr := run(plain, q)
			if gerr != nil || werr != nil || got != want {
				t.Errorf("%v: %s: through the proxy %v\n%s\nplaintext %v\n%s", mode, q, gerr, got, werr, want)
			}
		}
	}
}

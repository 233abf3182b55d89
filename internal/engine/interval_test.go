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

// TestIntervalColumns: encrypted interval columns (Eq onion, exact copy)
// written with literals, psycopg's text form and binary parameters answer
// as on plaintext PostgreSQL: equality by span ('1 day' = '24:00:00'),
// the proxy's sort, output exactly as written.
func TestIntervalColumns(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	plain, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	const ddl = `CREATE TABLE durations (id int PRIMARY KEY, d interval NOT NULL)`
	c := p.connect(t, pgx.QueryExecModeCacheStatement)
	mustExec(t, c, ddl)
	mustExec(t, plain, ddl)
	lits := []string{"1 day", "24:00:00", "1 day 0:00:03.000005", "-1 day 0:00:01", "1 mon", "30 days", "1.5 weeks", "00:00:00", "2 years 3 mons 4 days 05:06:07"}
	for i, lit := range lits {
		for _, conn := range []*pgx.Conn{c, plain} {
			mustExec(t, conn, fmt.Sprintf("INSERT INTO durations VALUES (%d, '%s')", i, lit), pgx.QueryExecModeSimpleProtocol)
		}
	}
	for i, d := range []time.Duration{90 * time.Minute, -time.Second, 36 * time.Hour} {
		for _, conn := range []*pgx.Conn{c, plain} {
			// pgx sends a time.Duration as a binary interval.
			mustExec(t, conn, "INSERT INTO durations VALUES ($1, $2)", 100+i, d)
		}
	}
	queries := []string{
		"SELECT id, d FROM durations ORDER BY id",
		"SELECT id FROM durations WHERE d = '1 day' ORDER BY id",
		"SELECT id FROM durations WHERE d = '720:00:00' ORDER BY id",
		"SELECT id FROM durations WHERE d IN ('36 hours', '00:00:00') ORDER BY id",
		"SELECT id, d FROM durations ORDER BY d, id",
		"SELECT count(DISTINCT d) FROM durations",
	}
	run := func(conn *pgx.Conn, q string) (string, error) {
		rows, err := conn.Query(ctx, q)
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
			if pgCode(gerr) == "0A000" && strings.Contains(q, "DISTINCT") {
				continue // equal spans print differently: refused
			}
			if gerr != nil || werr != nil || got != want {
				t.Errorf("%v: %s: through the proxy %v\n%s\nplaintext %v\n%s", mode, q, gerr, got, werr, want)
			}
		}
	}
}

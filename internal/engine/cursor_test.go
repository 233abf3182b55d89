package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestCursors: a server-side cursor over encrypted columns (Django's
// QuerySet.iterator() declares one WITH HOLD and fetches 2000 rows at a
// time) returns, FETCH after FETCH, the rows plaintext PostgreSQL
// returns, in both protocols, with parameters in its query, MOVE and
// CLOSE.
func TestCursors(t *testing.T) {
	ctx := context.Background()
	d := newTypeDiff(t, `CREATE TABLE cu (id int PRIMARY KEY, name text, n numeric(8,2), day date)`)
	for i := 1; i <= 25; i++ {
		d.both(fmt.Sprintf("INSERT INTO cu VALUES (%d, 'name %d', %d.25, '2024-01-%02d')", i, i, i*3, i))
	}
	d.both("INSERT INTO cu VALUES (26, NULL, NULL, NULL)")
	simple := d.p.connect(t, pgx.QueryExecModeSimpleProtocol)
	plainSimple := d.plain
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		enc := d.c
		if mode == pgx.QueryExecModeSimpleProtocol {
			enc = simple
		}
		run := func(c *pgx.Conn, sql string, args ...any) [][]any {
			t.Helper()
			rows, err := c.Query(ctx, sql, append([]any{mode}, args...)...)
			if err != nil {
				t.Fatalf("%v %s: %v", mode, sql, err)
			}
			out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
			if err != nil {
				t.Fatalf("%v %s: %v", mode, sql, err)
			}
			return out
		}
		for _, c := range []*pgx.Conn{enc, plainSimple} {
			mustExec(t, c, `DECLARE cur NO SCROLL CURSOR WITH HOLD FOR SELECT id, name, n, day FROM cu WHERE n > $1 OR name IS NULL ORDER BY id`, 10)
			mustExec(t, c, "BEGIN")
			mustExec(t, c, `DECLARE inner_c CURSOR FOR SELECT name FROM cu WHERE day >= '2024-01-20' ORDER BY id`)
		}
		for _, step := range []string{"FETCH FORWARD 7 FROM cur", "MOVE FORWARD 2 FROM cur", "FETCH 5 FROM cur", "FETCH ALL FROM cur", "FETCH FORWARD 7 FROM cur",
			"FETCH 2 FROM inner_c", "FETCH ALL FROM inner_c"} {
			got, want := run(enc, step), run(plainSimple, step)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%v %s: through the proxy %v, plaintext %v", mode, step, got, want)
			}
		}
		for _, c := range []*pgx.Conn{enc, plainSimple} {
			mustExec(t, c, "COMMIT")
			mustExec(t, c, "CLOSE cur")
		}
	}
}

// TestHeldCursors: a cursor over rows the proxy computes (a function of
// an encrypted column, text ordered by the proxy, a grouped expression,
// LIMIT $n) is held by the proxy and returns, FETCH after FETCH, the rows
// plaintext PostgreSQL returns, in both protocols; what it cannot answer
// (MOVE, BACKWARD) is refused and the session goes on; a cursor not
// WITH HOLD ends with its transaction as on the server.
func TestHeldCursors(t *testing.T) {
	ctx := context.Background()
	d := newTypeDiff(t, `CREATE TABLE hc (id int PRIMARY KEY, name text, n numeric(8,2), day date)`)
	for i := 1; i <= 30; i++ {
		d.both(fmt.Sprintf("INSERT INTO hc VALUES (%d, 'name %d', %d.25, '2024-0%d-%02d')", i, (i*7)%11, i*3, 1+i%3, i))
	}
	d.both("INSERT INTO hc VALUES (31, NULL, NULL, NULL)")
	simple := d.p.connect(t, pgx.QueryExecModeSimpleProtocol)
	queries := []string{
		"SELECT id, upper(name) AS u FROM hc WHERE n > $1 OR name IS NULL ORDER BY name DESC NULLS LAST, id",
		"SELECT extract(month FROM day) AS m, count(*), sum(n) FROM hc WHERE id > $1 GROUP BY 1 ORDER BY 1",
		"SELECT id, name FROM hc WHERE length(name) = 6 AND id > $1 ORDER BY id LIMIT 5",
		// Plain rows of a table with encrypted columns: the server's cursor.
		"SELECT count(id) AS c1, count(id) AS c2 FROM hc WHERE id > $1 GROUP BY id ORDER BY id",
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		enc := d.c
		if mode == pgx.QueryExecModeSimpleProtocol {
			enc = simple
		}
		run := func(c *pgx.Conn, sql string) ([][]any, error) {
			t.Helper()
			rows, err := c.Query(ctx, sql, mode)
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
		}
		for qi, q := range queries {
			name := fmt.Sprintf("held%d", qi)
			for _, c := range []*pgx.Conn{enc, d.plain} {
				mustExec(t, c, "BEGIN")
				if _, err := c.Exec(ctx, "DECLARE "+name+" NO SCROLL CURSOR FOR "+q, mode, 4); err != nil {
					t.Fatalf("%v DECLARE over %s: %v", mode, q, err)
				}
			}
			for _, step := range []string{"FETCH 3 FROM %s", "FETCH NEXT FROM %s", "FETCH FORWARD 4 FROM %s", "FETCH ALL FROM %s", "FETCH 2 FROM %s"} {
				step = fmt.Sprintf(step, name)
				got, err := run(enc, step)
				if err != nil {
					t.Fatalf("%v %s over %s: %v", mode, step, q, err)
				}
				want, err := run(d.plain, step)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%v %s over %s: through the proxy %v, plaintext %v", mode, step, q, got, want)
				}
			}
			for _, c := range []*pgx.Conn{enc, d.plain} {
				mustExec(t, c, "COMMIT")
			}
			// Gone with its transaction, on the server as through the proxy.
			if _, err := run(enc, "FETCH 1 FROM "+name); pgCode(err) != "34000" {
				t.Errorf("%v FETCH after COMMIT: %v, want 34000", mode, err)
			}
		}
		mustExec(t, enc, "BEGIN")
		mustExec(t, enc, "DECLARE m CURSOR FOR "+strings.Replace(queries[0], "$1", "0", 1))
		for _, step := range []string{"MOVE 2 FROM m", "FETCH BACKWARD 1 FROM m"} {
			if _, err := run(enc, step); pgCode(err) != "0A000" {
				t.Errorf("%v %s: %v, want 0A000", mode, step, err)
			}
		}
		mustExec(t, enc, "ROLLBACK")
		mustExec(t, enc, "BEGIN")
		mustExec(t, enc, "DECLARE m CURSOR FOR "+strings.Replace(queries[0], "$1", "0", 1))
		if got, err := run(enc, "FETCH ALL FROM m"); err != nil || len(got) != 31 {
			t.Errorf("%v FETCH ALL after a refusal: %d rows, %v", mode, len(got), err)
		}
		mustExec(t, enc, "CLOSE m")
		mustExec(t, enc, "COMMIT")
	}
}

package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestCursors: a server-side cursor over encrypted columns (Django's
// QuerySet.iterator() declares one WITH HOLD and fetches 2000 rows at a
// time) returns, FETCH after FETCH, the rows plaintext PostgreSQL
// returns, in both protocols, with parameters in its query, MOVE and
// CLOSE; a cursor over rows the proxy would filter or sort itself is
// refused.
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
	// Rows the proxy would sort itself (a text column has no Ord onion):
	// a cursor would need the proxy to hold them.
	if _, err := simple.Exec(ctx, "DECLARE bad CURSOR WITH HOLD FOR SELECT id FROM cu ORDER BY name"); pgCode(err) != "0A000" {
		t.Errorf("a cursor over rows the proxy sorts: %v, want 0A000", err)
	}
}

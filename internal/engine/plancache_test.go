package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestPlanCache: a statement Parsed again in a session (pgx's exec mode
// sends Parse at every execution) reuses its plan while the catalog is
// unchanged, and is planned again after DDL changes the table.
func TestPlanCache(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, newEncDB(t), nil)
	c := p.connect(t, pgx.QueryExecModeExec)
	mustExec(t, c, "CREATE TABLE pc (id int PRIMARY KEY, name text, n int)")
	mustExec(t, c, "INSERT INTO pc VALUES (1, 'a', 10), (2, 'b', 20), (3, 'a', 30)")
	q := "SELECT id, n FROM pc WHERE name = $1 ORDER BY id"
	read := func(arg string) string {
		t.Helper()
		rows, err := c.Query(ctx, q, arg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			v, err := r.Values()
			return fmt.Sprint(v), err
		})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(got)
	}
	if got := read("a"); got != "[[1 10] [3 30]]" {
		t.Fatalf("first run: %s", got)
	}
	before := p.eng.PlansReused()
	for _, arg := range []string{"a", "b", "c", "a"} {
		want := map[string]string{"a": "[[1 10] [3 30]]", "b": "[[2 20]]", "c": "[]"}[arg]
		if got := read(arg); got != want {
			t.Fatalf("name = %q: %s, want %s", arg, got, want)
		}
	}
	if reused := p.eng.PlansReused() - before; reused < 4 {
		t.Fatalf("%d of 4 Parses reused the plan", reused)
	}
	// DDL changes the catalog: the plan is made again, over the new
	// table.
	mustExec(t, c, "DROP TABLE pc")
	mustExec(t, c, "CREATE TABLE pc (id int PRIMARY KEY, n int, name text)")
	mustExec(t, c, "INSERT INTO pc VALUES (7, 70, 'a')")
	if got := read("a"); got != "[[7 70]]" {
		t.Fatalf("after DDL: %s", got)
	}
}

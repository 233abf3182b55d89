package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestExplain: EXPLAIN of statements over encrypted columns explains the
// statement the proxy sends the server (its plan reads the onion
// columns), in both protocols and every format, with parameters; EXPLAIN
// ANALYZE of a write runs it, as PostgreSQL does.
func TestExplain(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, newEncDB(t), nil)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		c := p.connect(t, mode)
		mustExec(t, c, "DROP TABLE IF EXISTS ex")
		mustExec(t, c, "CREATE TABLE ex (id int PRIMARY KEY, name text, n int)")
		mustExec(t, c, "INSERT INTO ex VALUES (1, 'a', 10), (2, 'b', 20)")
		for _, q := range []string{
			"EXPLAIN SELECT name FROM ex WHERE id = 1",
			"EXPLAIN (FORMAT JSON) SELECT name FROM ex WHERE n > 5 ORDER BY n",
			"EXPLAIN (COSTS OFF, VERBOSE, FORMAT YAML) SELECT upper(name), count(*) FROM ex GROUP BY 1",
			"EXPLAIN (FORMAT XML) DELETE FROM ex WHERE id = 99",
		} {
			rows, err := c.Query(ctx, q)
			if err != nil {
				t.Fatalf("%v: %s: %v", mode, q, err)
			}
			var plan strings.Builder
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatalf("%v: %s: %v", mode, q, err)
				}
				plan.WriteString(line + "\n")
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%v: %s: %v", mode, q, err)
			}
			if !strings.Contains(plan.String(), "ex") || !strings.Contains(plan.String(), "__") {
				t.Errorf("%v: %s: the plan does not read the onion columns:\n%s", mode, q, plan.String())
			}
		}
		var line string
		if err := c.QueryRow(ctx, "EXPLAIN SELECT name FROM ex WHERE id = $1", 1).Scan(&line); err != nil {
			t.Errorf("%v: EXPLAIN with a parameter: %v", mode, err)
		}
		mustExec(t, c, "EXPLAIN ANALYZE UPDATE ex SET name = 'c' WHERE id = 2")
		var name string
		if err := c.QueryRow(ctx, "SELECT name FROM ex WHERE id = 2").Scan(&name); err != nil || name != "c" {
			t.Errorf("%v: after EXPLAIN ANALYZE UPDATE: %q, %v; want c", mode, name, err)
		}
	}
}

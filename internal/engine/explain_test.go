package engine_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"slices"
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
		// Split execution: the proxy's nodes, then the server part's plan.
		for _, tc := range []struct{ q, want string }{
			{"EXPLAIN SELECT upper(name), count(*) FROM ex WHERE id > $1 GROUP BY 1 ORDER BY 2 DESC LIMIT 3", "Proxy Aggregate  (pgonion computes this over decrypted rows)\n  Output: upper(in1), count(*)\n  Group Key: upper(in1)\n  Sort Key: count(*) DESC\n  Limit: 3\n->  Server Part"},
			{"EXPLAIN (ANALYZE, COSTS OFF) SELECT id, lag(n) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM ex WHERE id > $1", "Note: EXPLAIN ANALYZE runs and times the server part only\nProxy WindowAgg  (pgonion computes this over decrypted rows)\n  Output: in1, lag(in2) OVER (ORDER BY in1 ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)\n->  Server Part"},
			{"EXPLAIN (FORMAT JSON) SELECT length(name) FROM ex WHERE id > $1", `"pgonion Split Execution": ["Proxy Result  (pgonion computes this over decrypted rows)","  Output: length(in1)"`},
			{"EXPLAIN (FORMAT YAML) SELECT length(name) FROM ex WHERE id > $1", "- pgonion Split Execution: \n    - \"Proxy Result  (pgonion computes this over decrypted rows)\"\n    - \"  Output: length(in1)\"\n"},
			{"EXPLAIN (FORMAT XML) SELECT length(name) FROM ex WHERE id > $1", "<Query>\n    <pgonion-Split-Execution>\n      <Line>Proxy Result  (pgonion computes this over decrypted rows)</Line>"},
		} {
			rows, err := c.Query(ctx, tc.q, 0)
			if err != nil {
				t.Fatalf("%v: %s: %v", mode, tc.q, err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatalf("%v: %s: %v", mode, tc.q, err)
			}
			plan := strings.Join(lines, "\n")
			if !strings.Contains(plan, tc.want) || !strings.Contains(plan, "__") {
				t.Errorf("%v: %s: want the proxy's part\n%s\nand the server part over onion columns, got\n%s", mode, tc.q, tc.want, plan)
			}
			switch {
			case strings.Contains(tc.q, "JSON") && !json.Valid([]byte(plan)):
				t.Errorf("%v: %s: not JSON:\n%s", mode, tc.q, plan)
			case strings.Contains(tc.q, "XML") && xml.Unmarshal([]byte(plan), new(struct{})) != nil:
				t.Errorf("%v: %s: not XML:\n%s", mode, tc.q, plan)
			case !strings.Contains(tc.q, "FORMAT"):
				// The server's lines are indented under "Server Part".
				at := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "->  Server Part") })
				if at < 0 || at+1 >= len(lines) || !strings.HasPrefix(lines[at+1], "      ") {
					t.Errorf("%v: %s: the server part's plan is not under its label:\n%s", mode, tc.q, plan)
				}
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

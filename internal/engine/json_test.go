package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestJSONColumns: encrypted json columns keep the text as written
// (white space, key order, duplicate keys), and what PostgreSQL cannot
// compare (json has no = and no order) fails through the proxy too.
func TestJSONColumns(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE js (id int PRIMARY KEY, j json, k json NOT NULL DEFAULT '{}')`)
	for i, lit := range []string{`'{"b": 1, "a": [1.50, true]}'`, `'  {"a":1,"a":2}  '`, `'"text"'`, `'null'`, `NULL`, `'[]'`} {
		d.both(fmt.Sprintf("INSERT INTO js (id, j) VALUES (%d, %s)", i, lit), pgx.QueryExecModeSimpleProtocol)
	}
	d.both("INSERT INTO js VALUES ($1, $2, $3)", 10, `{"x": "y"}`, `[1, 2]`)
	if _, err := d.c.Exec(context.Background(), `INSERT INTO js (id, j) VALUES (20, '{"a":')`); pgCode(err) != "22P02" {
		t.Errorf("malformed json: %v, want 22P02", err)
	}
	d.compare([]string{
		"SELECT id, j, k FROM js ORDER BY id",
		"SELECT id FROM js WHERE j IS NULL ORDER BY id",
		"SELECT id FROM js WHERE j = '{}'",
		"SELECT DISTINCT j FROM js",
		"SELECT id FROM js ORDER BY j",
	}, []string{
		"SELECT id, j::text FROM js ORDER BY id",
	})
}

package engine_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestInsertExpressionParams: INSERT values computed from the client's
// parameters (Django's Lower(Value(...)) with server-side binding:
// VALUES (LOWER($1))) are computed by the proxy at each Bind (the server
// gets NULL for such parameters), as PostgreSQL computes them.
func TestInsertExpressionParams(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE ie (id int PRIMARY KEY, name text, n int, label varchar(8), total numeric(8,2))`)
	for i, args := range [][]any{
		{1, "UPPER Case", 41, "x", "2.505"},
		{2, "ÄÖ", -7, "yy", "0.25"},
		{3, nil, nil, nil, nil},
	} {
		d.both("INSERT INTO ie VALUES ($1, LOWER($2), $3 + 1, concat($4::text, '-', $1::int), $5::numeric * 2)", args...)
		d.both("INSERT INTO ie (id, name) VALUES ($1 + 100, upper($2) || '!')", 10+i, args[1])
	}
	ctx := context.Background()
	if _, err := d.c.Exec(ctx, "INSERT INTO ie (id, label) VALUES ($1, lpad($2, 9, '*'))", 50, "abc"); pgCode(err) != "22001" {
		t.Errorf("a computed value too long for varchar(8): %v, want 22001", err)
	}
	d.both("INSERT INTO ie (id, name) VALUES (70, lower($1))", pgx.QueryExecModeExec, "SecretParam")
	d.compare([]string{"SELECT * FROM ie ORDER BY id"}, nil)
}

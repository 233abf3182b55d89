package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestJSONBColumns: encrypted jsonb columns (Eq onion over a form in
// which 1.0 = 1, exact copy) written with literals and text and binary
// parameters read back as jsonb_out prints them, and equality answers as
// on plaintext PostgreSQL; what the proxy cannot compute is refused.
func TestJSONBColumns(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	plain, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	const ddl = `CREATE TABLE docs (id int PRIMARY KEY, data jsonb)`
	c := p.connect(t, pgx.QueryExecModeCacheStatement)
	mustExec(t, c, ddl)
	mustExec(t, plain, ddl)
	lits := []string{`{"b":1,"a":[1.50, null]}`, `{"a":[1.5,null],"b":1.0}`, `[]`, `"é"`, `{"a":{"a":1,"a":2}}`, `null`, `1e2`}
	for i, lit := range lits {
		for _, conn := range []*pgx.Conn{c, plain} {
			mustExec(t, conn, fmt.Sprintf("INSERT INTO docs VALUES (%d, '%s')", i, lit), pgx.QueryExecModeSimpleProtocol)
			// pgx sends a map as binary jsonb.
			mustExec(t, conn, "INSERT INTO docs VALUES ($1, $2)", 100+i, map[string]any{"k": i, "s": lit})
		}
	}
	queries := []string{
		"SELECT id, data FROM docs ORDER BY id",
		`SELECT id FROM docs WHERE data = '{"a":[1.5,null],"b":1}' ORDER BY id`,
		`SELECT id FROM docs WHERE data IN ('[]', '100') ORDER BY id`,
		`SELECT id FROM docs WHERE data IS NULL OR data = 'null' ORDER BY id`,
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
			if gerr != nil || werr != nil || got != want {
				t.Errorf("%v: %s: through the proxy %v\n%s\nplaintext %v\n%s", mode, q, gerr, got, werr, want)
			}
		}
	}
	if _, err := c.Exec(ctx, `SELECT id FROM docs WHERE data @> '{"b":1}'`); pgCode(err) != "0A000" {
		t.Errorf("containment over an encrypted jsonb: %v, want 0A000", err)
	}
}

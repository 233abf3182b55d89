package engine_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestJSONBColumns: encrypted jsonb columns (Eq onion over a form in
// which 1.0 = 1, exact copy) written with literals and binary parameters
// read back as jsonb_out prints them, and equality answers as on
// plaintext PostgreSQL; containment over them is refused.
func TestJSONBColumns(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE docs (id int PRIMARY KEY, data jsonb)`)
	for i, lit := range []string{`{"b":1,"a":[1.50, null]}`, `{"a":[1.5,null],"b":1.0}`, `[]`, `"é"`, `{"a":{"a":1,"a":2}}`, `null`, `1e2`} {
		d.both(fmt.Sprintf("INSERT INTO docs VALUES (%d, '%s')", i, lit), pgx.QueryExecModeSimpleProtocol)
		d.both("INSERT INTO docs VALUES ($1, $2)", 100+i, map[string]any{"k": i, "s": lit}) // binary jsonb
	}
	d.compare([]string{
		"SELECT id, data FROM docs ORDER BY id",
		`SELECT id FROM docs WHERE data = '{"a":[1.5,null],"b":1}' ORDER BY id`,
		`SELECT id FROM docs WHERE data IN ('[]', '100') ORDER BY id`,
		`SELECT id FROM docs WHERE data IS NULL OR data = 'null' ORDER BY id`,
		`SELECT id FROM docs WHERE data @> '{"b":1}' ORDER BY id`, // computed by the proxy (jsonops_test.go)
	}, nil)
}

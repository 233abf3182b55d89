package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestRowDescriptionOrigins: the table and column a RowDescription names
// for each result column (what pgjdbc's isNullable and getTableName read)
// are, through the proxy, the client's table and column as plaintext
// PostgreSQL names them: looked up by OID and number through the same
// connection, they give the same table name, column name and NOT NULL.
func TestRowDescriptionOrigins(t *testing.T) {
	ctx := context.Background()
	d := newTypeDiff(t, `CREATE TABLE ro (id serial PRIMARY KEY, name text NOT NULL, note text, n int, added int)`)
	d.both("ALTER TABLE ro DROP COLUMN added")
	d.both("ALTER TABLE ro ADD COLUMN late date")
	d.both("INSERT INTO ro (name, note, n, late) VALUES ('a', 'x', 1, '2024-01-01'), ('b', NULL, 2, NULL)")
	describe := func(c *pgx.Conn, q string) []string {
		t.Helper()
		res := c.PgConn().ExecParams(ctx, q, nil, nil, nil, nil).Read()
		if res.Err != nil {
			t.Fatalf("%s: %v", q, res.Err)
		}
		var out []string
		for _, f := range res.FieldDescriptions {
			if f.TableOID == 0 {
				out = append(out, fmt.Sprintf("%s: no table (%d)", f.Name, f.TableAttributeNumber))
				continue
			}
			var rel, att string
			var notNull bool
			if err := c.QueryRow(ctx, "SELECT c.relname, a.attname, a.attnotnull FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE a.attrelid = $1 AND a.attnum = $2",
				f.TableOID, int16(f.TableAttributeNumber)).Scan(&rel, &att, &notNull); err != nil {
				t.Fatalf("%s: looking up %s (%d, %d): %v", q, f.Name, f.TableOID, f.TableAttributeNumber, err)
			}
			out = append(out, fmt.Sprintf("%s: %s.%s (%d) not null %t", f.Name, rel, att, f.TableAttributeNumber, notNull))
		}
		return out
	}
	for _, q := range []string{
		"SELECT * FROM ro",
		"SELECT n, name AS label, id, note FROM ro WHERE id = 1",
		"SELECT r.late, r.name FROM ro r ORDER BY r.id",
		"SELECT count(*), min(n) FROM ro",
	} {
		got, want := describe(d.c, q), describe(d.plain, q)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nthrough the proxy %q\nplaintext         %q", q, got, want)
		}
	}
}

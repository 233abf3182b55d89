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

// TestRowDescriptionRepeated: a prepared statement executed again, with
// other result formats each time (Bind, Describe of the portal,
// Execute: libpq's way), is described each time as plaintext PostgreSQL
// describes it, and its rows read the same. The proxy reuses its
// rewrite of a description it has seen (RowDescriptionBytes).
func TestRowDescriptionRepeated(t *testing.T) {
	ctx := context.Background()
	d := newTypeDiff(t, `CREATE TABLE rr (id int PRIMARY KEY, name text, amount numeric(10,2), day date)`)
	d.both("INSERT INTO rr VALUES (1, 'one', 1.50, '2024-01-01'), (2, NULL, -2.25, NULL)")
	const q = "SELECT name, id, amount AS total, day FROM rr WHERE id = $1"
	for _, c := range []*pgx.Conn{d.c, d.plain} {
		if _, err := c.PgConn().Prepare(ctx, "rr_stmt", q, nil); err != nil {
			t.Fatal(err)
		}
	}
	run := func(c *pgx.Conn, id string, formats []int16) string {
		t.Helper()
		res := c.PgConn().ExecPrepared(ctx, "rr_stmt", [][]byte{[]byte(id)}, nil, formats).Read()
		if res.Err != nil {
			t.Fatalf("id %s, formats %v: %v", id, formats, res.Err)
		}
		var out string
		for _, f := range res.FieldDescriptions {
			out += fmt.Sprintf("%s oid %d size %d mod %d format %d; ", f.Name, f.DataTypeOID, f.DataTypeSize, f.TypeModifier, f.Format)
		}
		for _, row := range res.Rows {
			out += fmt.Sprintf("%q ", row)
		}
		return out
	}
	for i, formats := range [][]int16{nil, nil, {1}, {0, 1, 0, 1}, {0}, nil, {1}} {
		id := fmt.Sprint(i%2 + 1)
		if got, want := run(d.c, id, formats), run(d.plain, id, formats); got != want {
			t.Errorf("execution %d (id %s, formats %v):\nthrough the proxy %s\nplaintext         %s", i, id, formats, got, want)
		}
	}
}

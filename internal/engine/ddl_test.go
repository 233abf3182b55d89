package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestDDL runs the DDL a user runs through the proxy and checks, after
// each step, what the client reads and what the server has.
func TestDDL(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	direct := db.direct(t)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		t.Run(mode.String(), func(t *testing.T) {
			c := p.connect(t, mode)
			read := func(sql string) []string {
				t.Helper()
				rows, err := c.Query(ctx, sql)
				if err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
				vals, err := pgx.CollectRows(rows, pgx.RowTo[*string])
				if err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
				var got []string
				for _, v := range vals {
					if v == nil {
						got = append(got, "NULL")
					} else {
						got = append(got, *v)
					}
				}
				return got
			}
			physical := func(table string) map[string]bool {
				t.Helper()
				rows, err := direct.Query(ctx, "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1", table)
				if err != nil {
					t.Fatal(err)
				}
				cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Fatal(err)
				}
				m := map[string]bool{}
				for _, col := range cols {
					m[col] = true
				}
				return m
			}
			tag := func(sql, want string) {
				t.Helper()
				got, err := c.Exec(ctx, sql)
				if err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
				if got.String() != want {
					t.Fatalf("%s: tag %q, want %q", sql, got, want)
				}
			}
			tag("CREATE TABLE ddl (id int, name text)", "CREATE TABLE")
			tag("CREATE TABLE IF NOT EXISTS ddl (id int, name text)", "CREATE TABLE")
			mustExec(t, c, "INSERT INTO ddl VALUES (1, 'one')")
			tag("ALTER TABLE ddl ADD COLUMN note text", "ALTER TABLE")
			if !physical("ddl")["note__eq"] || physical("ddl")["note"] {
				t.Fatalf("added column is not encrypted: %v", physical("ddl"))
			}
			mustExec(t, c, "INSERT INTO ddl VALUES (2, 'two', 'a note')")
			if got := read("SELECT note FROM ddl"); len(got) != 2 {
				t.Fatalf("after ADD COLUMN: %v", got)
			}
			tag("ALTER TABLE ddl RENAME COLUMN name TO label", "ALTER TABLE")
			if ph := physical("ddl"); !ph["label__eq"] || ph["name__eq"] {
				t.Fatalf("after RENAME COLUMN: %v", ph)
			}
			if got := read("SELECT label FROM ddl"); len(got) != 2 || (got[0] != "one" && got[1] != "one") {
				t.Fatalf("renamed column reads %v", got)
			}
			tag("ALTER TABLE ddl DROP COLUMN note", "ALTER TABLE")
			if physical("ddl")["note__eq"] {
				t.Fatal("DROP COLUMN left note__eq")
			}
			tag("CREATE INDEX ddl_label ON ddl (label)", "CREATE INDEX")
			var n int
			if err := direct.QueryRow(ctx, "SELECT count(*) FROM pg_indexes WHERE tablename = 'ddl' AND indexdef LIKE '%label__eq%'").Scan(&n); err != nil || n != 1 {
				t.Fatalf("index on label__eq: %d %v", n, err)
			}
			tag("CREATE INDEX ddl_id ON ddl (id)", "CREATE INDEX")
			if err := direct.QueryRow(ctx, "SELECT count(*) FROM pg_indexes WHERE tablename = 'ddl' AND (indexdef LIKE '%id__eq%' OR indexdef LIKE '%id__ord%')").Scan(&n); err != nil || n != 2 {
				t.Fatalf("indexes on id's onions: %d %v", n, err)
			}
			// CLUSTER passes through: it orders the rows by the index on
			// the Eq onion, and they read the same afterwards.
			tag("CLUSTER ddl USING ddl_label", "CLUSTER")
			if err := direct.QueryRow(ctx, "SELECT count(*) FROM pg_index WHERE indexrelid = 'ddl_label'::regclass AND indisclustered").Scan(&n); err != nil || n != 1 {
				t.Fatalf("CLUSTER did not reach the server: %d %v", n, err)
			}
			tag("CLUSTER ddl", "CLUSTER")
			if got := read("SELECT label FROM ddl ORDER BY label"); len(got) != 2 || got[0] != "one" || got[1] != "two" {
				t.Fatalf("after CLUSTER: %v", got)
			}
			tag("ALTER TABLE ddl RENAME TO ddl2", "ALTER TABLE")
			if got := read("SELECT label FROM ddl2"); len(got) != 2 {
				t.Fatalf("renamed table reads %v", got)
			}
			if _, err := c.Exec(ctx, "ALTER TABLE ddl2 ALTER COLUMN label TYPE varchar(3)"); pgCode(err) != "0A000" {
				t.Fatalf("ALTER COLUMN TYPE on an encrypted column: %v", err)
			}
			tag("DROP TABLE ddl2", "DROP TABLE")
			if err := direct.QueryRow(ctx, "SELECT count(*) FROM pgonion.tables").Scan(&n); err != nil || n != 0 {
				t.Fatalf("catalog after DROP: %d tables, %v", n, err)
			}
			// The name is free again, and a new table under it is encrypted.
			tag("CREATE TABLE ddl (id int, name text)", "CREATE TABLE")
			mustExec(t, c, "INSERT INTO ddl VALUES (3, 'three')")
			if got := read("SELECT name FROM ddl"); len(got) != 1 || got[0] != "three" {
				t.Fatalf("recreated table reads %v", got)
			}
			tag("DROP TABLE ddl", "DROP TABLE")
			mustExec(t, c, "CREATE SCHEMA IF NOT EXISTS s")
			mustExec(t, c, "CREATE TABLE s.t (x int)")
			if _, err := c.Exec(ctx, "DROP SCHEMA s CASCADE"); pgCode(err) != "0A000" {
				t.Fatalf("DROP SCHEMA CASCADE over an encrypted table: %v", err)
			}
			mustExec(t, c, "DROP TABLE s.t")
			mustExec(t, c, "DROP SCHEMA s CASCADE")
		})
	}
}

// TestCreateInTransaction creates a table and writes it in one
// transaction block, where no other session can see the catalog entry yet:
// the session itself must still encrypt. After a rollback the name is free.
func TestCreateInTransaction(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		c := p.connect(t, mode)
		mustExec(t, c, "BEGIN")
		mustExec(t, c, "CREATE TABLE intx (a text)")
		mustExec(t, c, "INSERT INTO intx VALUES ('written in the creating transaction')")
		var got string
		if err := c.QueryRow(ctx, "SELECT a FROM intx").Scan(&got); err != nil || got != "written in the creating transaction" {
			t.Fatalf("%v: read %q %v", mode, got, err)
		}
		mustExec(t, c, "ROLLBACK")
		mustExec(t, c, "BEGIN")
		mustExec(t, c, "CREATE TABLE intx (a text)")
		mustExec(t, c, "INSERT INTO intx VALUES ('secret in a transaction')")
		mustExec(t, c, "COMMIT")
		var n int
		if err := db.direct(t).QueryRow(ctx, "SELECT count(*) FROM intx WHERE a__eq IS NOT NULL").Scan(&n); err != nil || n != 1 {
			t.Fatalf("%v: %d encrypted rows, %v", mode, n, err)
		}
		mustExec(t, c, "DROP TABLE intx")
	}
}

// TestLongColumnNames: encrypted columns whose names come near
// PostgreSQL's 63-byte limit (Django's backends tests make them; two
// share their first 60 bytes) get cells of distinct, untruncated names,
// and every statement over them answers as on plaintext, renames
// included.
func TestLongColumnNames(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	plain := plainConn(t)
	long := strings.Repeat("x", 60)
	a, b := long+"aaa", long+"bbb" // 63 bytes each
	mid := strings.Repeat("y", 57) // the longest name kept as it is
	utf := strings.Repeat("é", 31) // 62 bytes: a shortened name cut at a rune
	ddl := fmt.Sprintf(`CREATE TABLE longnames (id int PRIMARY KEY, %q text, %q int, %q text, %q date)`, a, b, mid, utf)
	mustExec(t, c, ddl)
	mustExec(t, plain, ddl)
	stmts := []string{
		`INSERT INTO longnames VALUES (1, 'one', 10, 'm1', '2020-01-01'), (2, 'two', 20, 'm2', '2021-06-30'), (3, NULL, 30, 'm1', NULL)`,
		fmt.Sprintf(`UPDATE longnames SET %q = 'uno' WHERE %q = 10`, a, b),
		fmt.Sprintf(`DELETE FROM longnames WHERE %q = 'm2' AND %q < '2022-01-01'`, mid, utf),
		fmt.Sprintf(`ALTER TABLE longnames RENAME COLUMN %q TO %q`, b, long+"ccc"),
		fmt.Sprintf(`INSERT INTO longnames (id, %q, %q) VALUES (4, 'four', 40)`, a, long+"ccc"),
	}
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("through the proxy: %s: %v", s, err)
		}
		mustExec(t, plain, s)
	}
	for _, q := range []string{
		`SELECT * FROM longnames ORDER BY id`,
		fmt.Sprintf(`SELECT id FROM longnames WHERE %q = 'uno' OR %q >= 40 ORDER BY id`, a, long+"ccc"),
		fmt.Sprintf(`SELECT %q, count(*) FROM longnames GROUP BY 1 ORDER BY 1`, mid),
	} {
		got, want := collectAll(t, c, q), collectAll(t, plain, q)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: through the proxy %q, plaintext %q", q, got, want)
		}
	}
	// Every cell keeps its whole suffix: none was truncated.
	rows, err := db.direct(t).Query(ctx, `SELECT attname::text FROM pg_attribute WHERE attrelid = 'longnames'::regclass AND attnum > 0 AND NOT attisdropped`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	cells := 0
	for _, n := range names {
		if !strings.Contains(n, "__") {
			continue
		}
		cells++
		if !slices.ContainsFunc([]string{"__eq", "__ord", "__add", "__srch", "__val", "__salt"}, func(s string) bool { return strings.HasSuffix(n, s) }) {
			t.Errorf("cell %q was truncated", n)
		}
	}
	if cells < 10 {
		t.Errorf("only %d cells on the server: %q", cells, names)
	}
}

// collectAll returns a query's rows as printed values.
func collectAll(t *testing.T, c *pgx.Conn, q string) []string {
	t.Helper()
	rows, err := c.Query(context.Background(), q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		v, err := r.Values()
		return fmt.Sprint(v), err
	})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

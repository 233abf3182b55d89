package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The write corpus (testdata/writes.sql) is a differential test of the
// statements that change tables: each runs through the proxy over
// encrypted tables and directly on plaintext PostgreSQL, in order; the
// two must succeed with the same command tag and returned rows, or fail
// with the same SQLSTATE, and afterwards every table must hold the same
// rows.
//
// Format: one statement per line; blank lines and lines starting with
// "--" are comments. A trailing " -- params: v1, v2" gives $1, $2, ...
// ('strings' sent as text, integers): the statement then runs prepared
// (the extended protocol), else as a simple query. A trailing " --
// refuse: text" says the proxy must refuse it (0A000, a message
// containing text); it is then not run directly.

const writeCorpusDDL = `CREATE TABLE w1 (id int PRIMARY KEY, n int CHECK (n >= 0), amt numeric(10,2), name text NOT NULL,
	tag varchar(5) UNIQUE, d date, ts timestamptz, f float8, ok boolean);
CREATE TABLE w2 (id serial PRIMARY KEY, w1_id int REFERENCES w1 (id), note text, qty int);
CREATE TABLE w5 (id int PRIMARY KEY, a int NOT NULL, b int, s text, sq int GENERATED ALWAYS AS (a * a + b) STORED,
	low text GENERATED ALWAYS AS (lower(s) || '!') STORED, CHECK (sq < 1000))`

func TestWriteCorpus(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	enc := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	plain := plainConn(t)
	mustExec(t, plain, "DROP TABLE IF EXISTS w5, w4, w3, w2, w1")
	mustExec(t, plain, "SET TIME ZONE 'UTC'")
	mustExec(t, enc, "SET TIME ZONE 'UTC'")
	for _, s := range strings.Split(writeCorpusDDL, ";\n") {
		mustExec(t, enc, s)
		mustExec(t, plain, s)
	}
	f, err := os.Open("testdata/writes.sql")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tables := []string{"w1", "w2", "w5"}
	sc := bufio.NewScanner(f)
	n, line := 0, 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "--") {
			continue
		}
		sql, params := text, []any(nil)
		mode := pgx.QueryExecModeSimpleProtocol
		if i := strings.Index(text, " -- refuse: "); i >= 0 {
			sql, want := text[:i], text[i+len(" -- refuse: "):]
			_, err := enc.Exec(ctx, sql)
			var pe *pgconn.PgError
			if !asPgError(err, &pe) || pe.Code != "0A000" || !strings.Contains(pe.Message, want) {
				t.Errorf("writes.sql:%d: %s: %v, want a refusal (0A000) naming %s", line, sql, err, want)
			}
			n++
			continue
		}
		if i := strings.Index(text, " -- params: "); i >= 0 {
			sql, params = text[:i], parseParams(t, line, text[i+len(" -- params: "):])
			mode = pgx.QueryExecModeCacheStatement
		}
		n++
		args := append([]any{mode}, params...)
		got, gerr := queryResultArgs(ctx, enc, sql, args...)
		want, werr := queryResultArgs(ctx, plain, sql, args...)
		if pgCode(gerr) != pgCode(werr) || got != want {
			t.Errorf("writes.sql:%d: %s\n  through the proxy %q %v\n  plaintext         %q %v", line, sql, got, gerr, want, werr)
		}
		if strings.HasPrefix(strings.ToUpper(sql), "CREATE TABLE W3") {
			tables = append(tables, "w3")
		}
		if strings.Contains(strings.ToUpper(sql), "INTO W4") {
			tables = append(tables, "w4")
		}
		if enc.PgConn().TxStatus() == 'E' || plain.PgConn().TxStatus() == 'E' {
			if enc.PgConn().TxStatus() != plain.PgConn().TxStatus() {
				t.Fatalf("writes.sql:%d: transaction status %c through the proxy, %c plaintext", line, enc.PgConn().TxStatus(), plain.PgConn().TxStatus())
			}
			continue // the tables cannot be read until the block ends
		}
		for _, tb := range tables {
			q := "SELECT * FROM " + tb + " ORDER BY 1, 2"
			if g, w := collectAll(t, enc, q), collectAll(t, plain, q); fmt.Sprint(g) != fmt.Sprint(w) {
				t.Fatalf("writes.sql:%d: after %s\n  %s through the proxy %v\n  plaintext %v", line, sql, tb, g, w)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d statements, every table compared after each", n)
}

// queryResultArgs is queryResult with a query mode and arguments.
func queryResultArgs(ctx context.Context, conn *pgx.Conn, sql string, args ...any) (string, error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return "", err
	}
	var out []string
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			rows.Close()
			return "", err
		}
		out = append(out, fmt.Sprint(v))
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return rows.CommandTag().String() + " " + strings.Join(out, "; "), nil
}

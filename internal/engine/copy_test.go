package engine_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// TestCopyDifferential sends the same COPY data through the proxy into an
// encrypted table and directly into a plaintext one, and compares what
// SELECT * returns (and the errors).
func TestCopyDifferential(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	enc := p.connect(t, pgx.QueryExecModeCacheStatement)
	plainDB := newEncDB(t)
	plain := plainDB.direct(t)
	cases := []struct {
		name, columns, options, data string
	}{
		{"text", "", "", "1\tone\t1.50\t2024-01-02\tt\n2\t\\N\t\\N\t\\N\t\\N\n3\ttab\\there\t-0.01\t1999-12-31\tf\n"},
		{"text with escapes and CRLF", "", "", "4\tnew\\nline \\\\ back\t7\t2000-02-29\ttrue\r\n5\t\\x41\\101\t0\t2000-01-01\tno\r\n"},
		{"csv", "", "(FORMAT csv, HEADER)", "id,name,amount,day,ok\n6,\"quoted, comma\",1,2020-05-05,yes\n7,,2,2020-05-06,0\n8,\"\",3,2020-05-07,1\n"},
		{"csv with a column list", "(name, id)", "(FORMAT csv, DELIMITER ';', NULL 'nil')", "Ünïcödé ✓;9\nnil;10\n"},
		{"legacy syntax", "", "CSV", "11,legacy,1.1,2021-01-01,t\n"},
		{"bad value", "", "", "12\tx\tnot a number\t2020-01-01\tt\n"},
		{"missing column", "", "", "13\tshort\n"},
		{"extra column", "", "", "14\ta\t1\t2020-01-01\tt\textra\n"},
		{"bad date", "", "", "15\ta\t1\t2020-02-30\tt\n"},
	}
	const ddl = "CREATE TABLE copied (id int, name text, amount numeric(8,2), day date, ok boolean)"
	mustExec(t, enc, ddl)
	mustExec(t, plain, ddl)
	for _, tc := range cases {
		sql := "COPY copied " + tc.columns + " FROM STDIN " + strings.TrimPrefix(tc.options, "WITH ")
		_, gerr := enc.PgConn().CopyFrom(ctx, strings.NewReader(tc.data), sql)
		_, werr := plain.PgConn().CopyFrom(ctx, strings.NewReader(tc.data), sql)
		if (gerr == nil) != (werr == nil) || pgCode(gerr) != pgCode(werr) {
			t.Fatalf("%s: through the proxy %v, directly %v", tc.name, gerr, werr)
		}
		got := queryAll(t, enc, pgx.QueryExecModeSimpleProtocol, "SELECT * FROM copied")
		want := queryAll(t, plain, pgx.QueryExecModeSimpleProtocol, "SELECT * FROM copied")
		if strings.Join(got.rows, "\n") != strings.Join(want.rows, "\n") {
			t.Fatalf("%s: rows\n got %v\nwant %v", tc.name, got.rows, want.rows)
		}
	}
	var n int
	if err := enc.QueryRow(ctx, "SELECT count(*) FROM copied").Scan(&n); err != nil || n != 11 {
		t.Fatalf("copied rows: %d %v", n, err)
	}
	// Every field above is encrypted: the server read binary rows. A
	// COPY of no row, and one with a plain field (a serial key, stored
	// plain), which the server reads in text.
	const serialDDL = "CREATE TABLE copied_serial (id serial PRIMARY KEY, name text)"
	mustExec(t, enc, serialDDL)
	mustExec(t, plain, serialDDL)
	// Many rows in one message: a batch the proxy splits across cores,
	// in text (copied_serial) and in binary (copied).
	var many, manySerial strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&many, "%d\trow %d\t%d.%02d\t2020-01-%02d\t%t\n", 100+i, i, i, i%100, 1+i%28, i%2 == 0)
		fmt.Fprintf(&manySerial, "%d\trow %d\n", 100+i, i)
	}
	for _, tc := range []struct{ table, data string }{
		{"copied", ""},
		{"copied_serial", "11\tone\n12\t\\N\n13\tthree\\tthree\n"},
		{"copied_serial (name)", "four\n"},
		{"copied", many.String()},
		{"copied_serial", manySerial.String()},
	} {
		sql := "COPY " + tc.table + " FROM STDIN"
		gtag, gerr := enc.PgConn().CopyFrom(ctx, strings.NewReader(tc.data), sql)
		wtag, werr := plain.PgConn().CopyFrom(ctx, strings.NewReader(tc.data), sql)
		if gerr != nil || werr != nil || gtag.String() != wtag.String() {
			t.Fatalf("%s: through the proxy %q %v, directly %q %v", sql, gtag, gerr, wtag, werr)
		}
	}
	for _, q := range []string{"SELECT * FROM copied ORDER BY id", "SELECT * FROM copied_serial ORDER BY id"} {
		got := queryAll(t, enc, pgx.QueryExecModeSimpleProtocol, q)
		want := queryAll(t, plain, pgx.QueryExecModeSimpleProtocol, q)
		if strings.Join(got.rows, "\n") != strings.Join(want.rows, "\n") {
			t.Fatalf("%s: rows\n got %v\nwant %v", q, got.rows, want.rows)
		}
	}
	// What the proxy cannot do is refused, and says so.
	// (COPY ... TO STDOUT is answered: TestCopyOut.)
	for _, sql := range []string{
		"COPY copied TO '/tmp/x'",
		"COPY copied FROM '/tmp/x'",
		"COPY copied FROM STDIN (FORMAT binary)",
	} {
		_, err := enc.PgConn().CopyFrom(ctx, strings.NewReader(""), sql)
		if pgCode(err) != "0A000" {
			t.Errorf("%s: %v, want SQLSTATE 0A000", sql, err)
		}
	}
}

// noAdd keeps pgbench's columns encrypted with DET/OPE (and search for the
// filler) but without Paillier, whose encryption would make scale 1 (100k
// rows) take minutes on a small machine (see bench/README.md).
func noAdd(table, column string) rewrite.ColumnPolicy {
	if strings.HasSuffix(column, "filler") {
		return rewrite.ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq"}}
	}
	return rewrite.ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq", "ord"}}
}

// TestPgbenchInit runs pgbench -i through the proxy, which encrypts every
// column of pgbench's tables; COPY carries the 100,000 account rows.
func TestPgbenchInit(t *testing.T) {
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		t.Fatal("pgbench is not installed:", err)
	}
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, noAdd)
	// The default steps: d(rop) t(ables) g(enerate, client side: INSERT
	// and COPY) v(acuum) p(rimary keys, added after the load: the proxy
	// peels the key columns' Eq onions to DET for them).
	out, err := exec.Command(pgbench, "-i", "-s", "1", p.url).CombinedOutput()
	if err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	var pks int
	if err := db.direct(t).QueryRow(ctx, "SELECT count(*) FROM pg_indexes WHERE indexname IN ('pgbench_accounts_pkey', 'pgbench_branches_pkey', 'pgbench_tellers_pkey') AND indexdef LIKE '%__eq)%'").Scan(&pks); err != nil || pks != 3 {
		t.Fatalf("primary keys on the Eq onions: %d, %v", pks, err)
	}
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	for table, want := range map[string]int{"pgbench_accounts": 100000, "pgbench_branches": 1, "pgbench_tellers": 10} {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != want {
			t.Fatalf("%s: %d rows, %v; want %d", table, n, err, want)
		}
	}
	rows, err := c.Query(ctx, "SELECT aid, bid, abalance FROM pgbench_accounts")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	var aids [100001]bool
	for rows.Next() {
		var aid, bid, abalance int
		if err := rows.Scan(&aid, &bid, &abalance); err != nil {
			t.Fatal(err)
		}
		if aid < 1 || aid > 100000 || aids[aid] || bid != 1 || abalance != 0 {
			t.Fatalf("row %d %d %d (aid seen before: %t)", aid, bid, abalance, aid >= 1 && aid <= 100000 && aids[aid])
		}
		aids[aid] = true
		seen++
	}
	if rows.Err() != nil || seen != 100000 {
		t.Fatalf("read %d rows: %v", seen, rows.Err())
	}
	// The key is enforced over the peeled ciphertexts, also for new rows.
	if _, err := c.Exec(ctx, "INSERT INTO pgbench_branches (bid, bbalance) VALUES (1, 5)"); pgCode(err) != "23505" {
		t.Fatalf("duplicate key through the proxy: %v, want 23505", err)
	}
	mustExec(t, c, "INSERT INTO pgbench_branches (bid, bbalance) VALUES (2, 5)")
	// The server holds ciphertexts only.
	var plainCols int
	if err := db.direct(t).QueryRow(ctx, "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public' AND table_name LIKE 'pgbench_%' AND column_name IN ('aid', 'bid', 'tid', 'abalance', 'bbalance', 'tbalance', 'filler', 'delta', 'mtime')").Scan(&plainCols); err != nil || plainCols != 0 {
		t.Fatalf("%d plaintext columns on the server (%v)", plainCols, err)
	}
}

// TestCopySearchCells: a COPY into a table whose text column has search
// tokens writes them (bigint[] cells, in the binary rows the server
// reads), and LIKE over the loaded rows answers as plaintext does.
func TestCopySearchCells(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, func(table, column string) rewrite.ColumnPolicy {
		if column == "note" {
			return rewrite.ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq", "search"}}
		}
		return rewrite.ColumnPolicy{Policy: catalog.Encrypted}
	})
	enc := p.connect(t, pgx.QueryExecModeCacheStatement)
	plainDB := newEncDB(t)
	plain := plainDB.direct(t)
	const ddl = "CREATE TABLE notes (id int, note text)"
	mustExec(t, enc, ddl)
	mustExec(t, plain, ddl)
	data := "1\tthe quick brown fox\n2\t\\N\n3\tlazy dogs sleep\n4\t\n5\tquick thinking\n"
	for _, c := range []*pgx.Conn{enc, plain} {
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data), "COPY notes FROM STDIN"); err != nil {
			t.Fatal(err)
		}
	}
	var tokens int
	if err := db.direct(t).QueryRow(ctx, "SELECT count(*) FROM notes WHERE note__srch IS NOT NULL").Scan(&tokens); err != nil || tokens != 4 {
		t.Fatalf("rows with search tokens: %d (%v), want the 4 non-NULL notes", tokens, err)
	}
	for _, q := range []string{
		"SELECT id FROM notes WHERE note LIKE '%quick%' ORDER BY id",
		"SELECT id FROM notes WHERE note ILIKE '%DOG%' ORDER BY id",
		"SELECT id, note FROM notes ORDER BY id",
	} {
		got := queryAll(t, enc, pgx.QueryExecModeSimpleProtocol, q)
		want := queryAll(t, plain, pgx.QueryExecModeSimpleProtocol, q)
		if strings.Join(got.rows, "\n") != strings.Join(want.rows, "\n") {
			t.Fatalf("%s:\n got %v\nwant %v", q, got.rows, want.rows)
		}
	}
}

package engine_test

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/engine"
	"github.com/pgonion/pgonion/internal/pgtest"
)

// serverLog returns a function that reads what the test cluster's server
// log gained since serverLog was called (nil when the server is not an
// embedded cluster, whose log the tests can read).
func serverLog(t *testing.T) func() []byte {
	t.Helper()
	cl := pgtest.Current().Cluster
	if cl == nil {
		t.Log("not an embedded cluster: the server log is not checked")
		return func() []byte { return nil }
	}
	st, err := os.Stat(cl.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	from := st.Size()
	return func() []byte {
		t.Helper()
		b, err := os.ReadFile(cl.LogFile())
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) < from {
			return b
		}
		return b[from:]
	}
}

// logAll makes the server log every statement of the test's database.
func logAll(t *testing.T, direct *pgx.Conn) {
	t.Helper()
	mustExec(t, direct, "ALTER DATABASE "+pgx.Identifier{direct.Config().Database}.Sanitize()+" SET log_statement = 'all'")
}

// TestPeelKeyNotInSQL: ALTER TABLE ... ADD PRIMARY KEY over an Eq onion at
// RND peels it with the key as a parameter, never as a literal (which the
// statement log and pg_stat_statements would keep).
func TestPeelKeyNotInSQL(t *testing.T) {
	db := newEncDB(t)
	direct := db.direct(t)
	logAll(t, direct)
	read := serverLog(t)
	p := startProxy(t, db, nil)
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	mustExec(t, c, "CREATE TABLE pk (id int, v text)")
	mustExec(t, c, "INSERT INTO pk VALUES (1, 'a'), (2, 'b')")
	mustExec(t, c, "ALTER TABLE pk ADD PRIMARY KEY (id)")
	if _, err := c.Exec(t.Context(), "INSERT INTO pk VALUES (1, 'c')"); pgCode(err) != "23505" {
		t.Fatalf("duplicate key after ADD PRIMARY KEY: %v, want 23505", err)
	}
	var n int
	if err := c.QueryRow(t.Context(), "SELECT count(*) FROM pk WHERE id = 2").Scan(&n); err != nil || n != 1 {
		t.Fatalf("lookup by key: %d %v", n, err)
	}
	log := read()
	if log == nil {
		return
	}
	if !bytes.Contains(log, []byte("decrypt_iv")) {
		t.Fatal("the server log shows no peel: is log_statement in effect?")
	}
	for _, line := range bytes.Split(log, []byte("\n")) {
		if bytes.Contains(line, []byte("decrypt_iv")) && keyLiteral.Match(line) {
			t.Fatalf("a key reached the server log as a literal: %s", line)
		}
	}
}

// keyLiteral matches a bytea literal long enough to be a key.
var keyLiteral = regexp.MustCompile(`'\\x[0-9a-fA-F]{32,}'`)

// TestProxySchemaRefused: clients cannot read or write the proxy's
// metadata through the proxy (deleting a table's catalog rows would make
// it look plain), in either protocol; the session goes on.
func TestProxySchemaRefused(t *testing.T) {
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		c := p.connect(t, mode)
		mustExec(t, c, "CREATE TABLE IF NOT EXISTS people (id int, name text)")
		for _, sql := range []string{
			"DELETE FROM pgonion.tables WHERE table_name = 'people'",
			"UPDATE pgonion.catalog_version SET version = version + 1",
			"SELECT * FROM pgonion.columns",
			"TRUNCATE pgonion.policies",
			"DROP SCHEMA pgonion CASCADE",
			"SET search_path = pgonion, public",
			"WITH d AS (DELETE FROM pgonion.tables RETURNING 1) SELECT count(*) FROM d",
		} {
			_, err := c.Exec(t.Context(), sql)
			if pgCode(err) != "42501" {
				t.Fatalf("%v: %s: %v, want 42501", mode, sql, err)
			}
			var one int
			if err := c.QueryRow(t.Context(), "SELECT 1").Scan(&one); err != nil {
				t.Fatalf("after %s: %v", sql, err)
			}
		}
	}
	var n int
	if err := db.direct(t).QueryRow(t.Context(), "SELECT count(*) FROM pgonion.tables WHERE table_name = 'people'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("catalog row of people: %d %v", n, err)
	}
}

// TestTamperingFailsClosed changes the proxy's metadata behind its back,
// as a DBA could, then sends canaries through the proxy: each case is
// refused with an error saying the catalog failed verification, and no
// canary reaches the server's log or tables.
func TestTamperingFailsClosed(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name   string
		tamper string
		want   string // in the refusal
	}{
		{"delete a table's catalog rows and bump the version",
			"DELETE FROM pgonion.tables WHERE table_name = 'people'; UPDATE pgonion.catalog_version SET version = version + 1; NOTIFY pgonion_catalog",
			"modified outside the proxy"},
		// Without a bump the running proxy keeps its verified copy (and
		// encrypts); a new one refuses to start.
		{"delete them without a bump", "DELETE FROM pgonion.tables WHERE table_name = 'people'", ""},
		{"replay an older policy row",
			"DELETE FROM pgonion.policies; INSERT INTO pgonion.policies SELECT * FROM old_policies; UPDATE pgonion.catalog_version SET version = version + 1; NOTIFY pgonion_catalog",
			"modified outside the proxy"},
		{"roll the whole catalog back",
			"DELETE FROM pgonion.tables; DELETE FROM pgonion.policies; DELETE FROM pgonion.catalog_version;" +
				"INSERT INTO pgonion.tables SELECT * FROM old_tables; INSERT INTO pgonion.columns SELECT * FROM old_columns;" +
				"INSERT INTO pgonion.policies SELECT * FROM old_policies; INSERT INTO pgonion.catalog_version SELECT * FROM old_version; NOTIFY pgonion_catalog",
			"went back"},
		{"remove the seal", "UPDATE pgonion.catalog_version SET seal = NULL, version = version + 1; NOTIFY pgonion_catalog", "not sealed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newEncDB(t)
			direct := db.direct(t)
			logAll(t, direct)
			p := startProxy(t, db, nil)
			admin, err := pgx.Connect(ctx, db.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close(ctx)
			macKey := testMACKey(t, db)
			declare := func(policy catalog.Policy) {
				tx, err := admin.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx)
				if err := catalog.SetPolicy(ctx, tx, macKey, catalog.ColumnPolicy{Schema: "public", Table: "later", Column: "ssn", Policy: policy}); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
			}
			c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
			declare(catalog.Plain)
			mustExec(t, direct, "CREATE TABLE old_policies AS SELECT * FROM pgonion.policies; CREATE TABLE old_version AS SELECT * FROM pgonion.catalog_version;"+
				"CREATE TABLE old_tables AS SELECT * FROM pgonion.tables; CREATE TABLE old_columns AS SELECT * FROM pgonion.columns")
			declare(catalog.Sensitive)
			mustExec(t, c, "CREATE TABLE people (id int, name text)")
			mustExec(t, c, "INSERT INTO people VALUES (1, 'Ada')")
			read := serverLog(t)
			mustExec(t, direct, tc.tamper)
			// Let the NOTIFY arrive, where there is one: until then the
			// proxy works from its verified copy (and still encrypts).
			time.Sleep(50 * time.Millisecond)
			for deadline := time.Now().Add(5 * time.Second); tc.want != "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if _, err := c.Exec(ctx, "SELECT id FROM people WHERE id = 0"); err != nil && strings.Contains(err.Error(), tc.want) {
					break
				}
			}
			for _, sql := range []string{
				"INSERT INTO people VALUES (2, 'CanaryTextZebra quokka')",
				"INSERT INTO people (id, name) VALUES (3, 'CanaryTextZebra quokka')",
				"SELECT id FROM people WHERE name = 'CanaryTextZebra quokka'",
				"CREATE TABLE later (id int, ssn text)",
			} {
				_, err := c.Exec(ctx, sql)
				if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
					t.Fatalf("%s after tampering: %v, want a refusal saying %q", sql, err, tc.want)
				}
				var one int
				if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
					t.Fatalf("session after the refusal: %v", err)
				}
			}
			checkNoCanary(t, "the server log", read())
			var dump bytes.Buffer
			if _, err := direct.PgConn().CopyTo(ctx, &dump, "COPY people TO STDOUT"); err != nil {
				t.Fatal(err)
			}
			checkNoCanary(t, "the table", dump.Bytes())
			// A proxy starting now refuses the catalog (but for a whole
			// consistent older copy, which only a running proxy can tell).
			if tc.want != "went back" {
				e, err := engine.New(ctx, engine.Config{Backend: db.dsn, Store: db.store})
				if err == nil {
					e.Close()
					t.Fatal("a new proxy started on the tampered catalog")
				}
			}
		})
	}
}

// TestSaltCheckIsNotTheProtection: with the salt CHECK dropped on the
// server, the proxy still encrypts every value it writes.
func TestSaltCheckIsNotTheProtection(t *testing.T) {
	ctx := t.Context()
	db := newEncDB(t)
	direct := db.direct(t)
	logAll(t, direct)
	p := startProxy(t, db, nil)
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	mustExec(t, c, "CREATE TABLE cards (number text, holder text)")
	var check string
	if err := direct.QueryRow(ctx, "SELECT conname FROM pg_constraint WHERE conrelid = 'cards'::regclass AND contype = 'c'").Scan(&check); err != nil {
		t.Fatal(err)
	}
	mustExec(t, direct, "ALTER TABLE cards DROP CONSTRAINT "+pgx.Identifier{check}.Sanitize())
	read := serverLog(t)
	mustExec(t, c, "INSERT INTO cards VALUES ('CanaryTextZebra!', 'quokka')") // 16 bytes, like a salt
	ext := p.connect(t, pgx.QueryExecModeExec)
	mustExec(t, ext, "INSERT INTO cards VALUES ($1, $2)", "CanaryTextZebra!", "quokka")
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM cards WHERE holder = 'quokka'").Scan(&n); err != nil || n != 2 {
		t.Fatalf("read back: %d %v", n, err)
	}
	checkNoCanary(t, "the server log", read())
	var dump bytes.Buffer
	if _, err := direct.PgConn().CopyTo(ctx, &dump, "COPY cards TO STDOUT"); err != nil {
		t.Fatal(err)
	}
	checkNoCanary(t, "the table", dump.Bytes())
}

// testMACKey is the catalog key of db's key store.
func testMACKey(t *testing.T, db *encDB) []byte {
	t.Helper()
	k, err := catalog.MACKey(db.store.Deriver())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestEmbeddedSQLRefused: SQL inside strings that could reach a table with
// encrypted columns (DO blocks, function bodies, query_to_xml, dynamic
// EXECUTE) is refused, in both protocols; the canaries in it never reach
// the server's log. Code that cannot reach such a table runs.
func TestEmbeddedSQLRefused(t *testing.T) {
	ctx := t.Context()
	db := newEncDB(t)
	direct := db.direct(t)
	logAll(t, direct)
	p := startProxy(t, db, nil)
	simple := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	// Before any encrypted table exists, nothing is refused.
	mustExec(t, simple, "DO $$ BEGIN EXECUTE 'SELECT 1'; END $$")
	mustExec(t, simple, "CREATE TABLE emp (id int, name text)")
	mustExec(t, simple, "INSERT INTO emp VALUES (1, 'x')")
	read := serverLog(t)
	for _, c := range []*pgx.Conn{simple, p.connect(t, pgx.QueryExecModeExec)} {
		for _, sql := range []string{
			"DO $$ BEGIN PERFORM 1 FROM emp WHERE name = 'CanaryTextZebra quokka'; END $$",
			"DO $$ BEGIN PERFORM 1 FROM \"EMP\" WHERE name = 'CanaryTextZebra quokka'; END $$",
			"DO $$ BEGIN EXECUTE 'SELECT 1 FROM ' || 'e' || 'mp WHERE name = ''CanaryTextZebra quokka'''; END $$",
			"DO LANGUAGE plpython3u $$ plpy.execute('SELECT 1 FROM emp WHERE name = ''CanaryTextZebra quokka''') $$",
			"CREATE FUNCTION f() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM emp WHERE name = 'CanaryTextZebra quokka' $$",
			"CREATE PROCEDURE pr() LANGUAGE plpgsql AS $$ BEGIN UPDATE emp SET name = 'CanaryTextZebra quokka'; END $$",
			"CREATE FUNCTION g() RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM query_to_xml('SELECT 1', true, false, ''); END $$",
			"SELECT query_to_xml('SELECT id FROM emp WHERE name = ''CanaryTextZebra quokka''', true, false, '')",
			"SELECT query_to_xml(q, true, false, '') FROM (VALUES ('SELECT 1')) v(q)",
			"SELECT query_to_xmlschema('SELECT id FROM emp WHERE name = ''CanaryTextZebra quokka''', true, false, '')",
		} {
			_, err := c.Exec(ctx, sql)
			if pgCode(err) != "0A000" {
				t.Fatalf("%s: %v, want 0A000", sql, err)
			}
			var one int
			if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatalf("after %s: %v", sql, err)
			}
		}
	}
	// Code that reaches no encrypted table runs.
	mustExec(t, simple, "DO $$ BEGIN PERFORM 1; END $$")
	mustExec(t, simple, "CREATE FUNCTION ok() RETURNS int LANGUAGE sql AS 'SELECT 1'")
	checkNoCanary(t, "the server log", read())
}

// rss returns the process's resident set size in bytes (Linux).
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm: RSS not measured")
	}
	var size, res int64
	if _, err := fmt.Sscan(string(b), &size, &res); err != nil {
		t.Fatal(err)
	}
	return res * int64(os.Getpagesize())
}

// TestResourceLimits: a statement too long to parse is refused (54000)
// without the proxy growing; a statement whose result would make the
// proxy hold more than its budget fails with 53200; the session goes on
// after both, and a statement within the limits answers.
func TestResourceLimits(t *testing.T) {
	ctx := t.Context()
	db := newEncDB(t)
	p := startProxyWith(t, db, engine.Config{MaxHeldBytes: 4 << 20})
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	mustExec(t, c, "CREATE TABLE big (id int, name text)")
	var rows []string
	for i := range 3163 { // 3163² ≈ 10 million
		rows = append(rows, fmt.Sprintf("(%d, 'name %d')", i, i%700))
	}
	mustExec(t, c, "INSERT INTO big VALUES "+strings.Join(rows, ", "))

	// A 3.2 MB IN list.
	var in strings.Builder
	in.WriteString("SELECT count(*) FROM big WHERE name IN (")
	for i := 0; in.Len() < 3200000; i++ {
		if i > 0 {
			in.WriteString(", ")
		}
		fmt.Fprintf(&in, "'name %d'", i)
	}
	in.WriteString(")")
	runtime.GC()
	before := rss(t)
	for range 3 {
		if _, err := c.Exec(ctx, in.String()); pgCode(err) != "54000" {
			t.Fatalf("3.2 MB IN list: %v, want 54000", err)
		}
	}
	if grown := rss(t) - before; grown > 64<<20 {
		t.Errorf("the proxy grew by %d MB refusing a 3.2 MB statement", grown>>20)
	}
	var one int
	if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}

	// 10 million rows grouped by the proxy (split execution: the server
	// cannot add encrypted ids), with about as many groups: over the 4 MB
	// budget. The proxy fails the statement and cancels it on the server.
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		start := time.Now()
		_, err := c.Exec(ctx, "SELECT a.id + b.id, count(*) FROM big a, big b GROUP BY 1, a.name, b.name", mode)
		t.Logf("%v: failed after %v", mode, time.Since(start).Round(time.Millisecond))
		if pgCode(err) != "53200" {
			t.Fatalf("%v: grouping beyond the budget: %v, want 53200", mode, err)
		}
		if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatal(err)
		}
	}
	// Sorted by the proxy (text order of a column without an Ord onion).
	if _, err := c.Exec(ctx, "SELECT a.name, b.name FROM big a, big b ORDER BY a.name, b.name"); pgCode(err) != "53200" {
		t.Fatalf("sorting beyond the budget: %v, want 53200", err)
	}
	// Within the budget.
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM (SELECT id + 1, count(*) FROM big GROUP BY 1) s").Scan(&n); err != nil || n != 3163 {
		t.Fatalf("grouping within the budget: %d %v", n, err)
	}
	if grown := rss(t) - before; grown > 256<<20 {
		t.Errorf("the proxy grew by %d MB with a 4 MB budget", grown>>20)
	}
}

// TestIncrementOverflow: the server cannot check the range of an
// encrypted sum, so an increment that leaves the type's range is stored;
// reading it fails with PostgreSQL's 22003 for that statement (not the
// session), and an increment constant outside the type is refused.
func TestIncrementOverflow(t *testing.T) {
	ctx := t.Context()
	db := newEncDB(t)
	p := startProxy(t, db, incPolicy) // Paillier declared: increments on the server
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	mustExec(t, c, "CREATE TABLE ctr (id int, n int, s smallint, b bigint)")
	mustExec(t, c, "INSERT INTO ctr VALUES (1, 2147483647, 32767, 9223372036854775807)")
	// Without an Add onion (the default policy) the proxy computes the
	// increment and fails at once, as the server does.
	d := startProxy(t, db, nil).connect(t, pgx.QueryExecModeSimpleProtocol)
	mustExec(t, d, "CREATE TABLE ctr_rmw (id int, n int)")
	mustExec(t, d, "INSERT INTO ctr_rmw VALUES (1, 2147483647)")
	if _, err := d.Exec(ctx, "UPDATE ctr_rmw SET n = n + 1"); pgCode(err) != "22003" {
		t.Fatalf("increment past integer without an Add onion: %v, want 22003", err)
	}
	for _, sql := range []string{"UPDATE ctr SET n = n + 1", "UPDATE ctr SET s = s + 1", "UPDATE ctr SET b = b + 1"} {
		mustExec(t, c, sql)
	}
	if _, err := c.Exec(ctx, "UPDATE ctr SET n = n + 3000000000"); pgCode(err) != "22003" {
		t.Fatalf("increment constant beyond integer: %v, want 22003", err)
	}
	for col, msg := range map[string]string{"n": "integer out of range", "s": "smallint out of range", "b": "bigint out of range"} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			var v int64
			err := c.QueryRow(ctx, "SELECT "+col+" FROM ctr", mode).Scan(&v)
			if pgCode(err) != "22003" || !strings.Contains(err.Error(), msg) {
				t.Fatalf("reading %s: %v, want 22003 %s", col, err, msg)
			}
			var one int
			if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatalf("session after the error: %v", err)
			}
		}
	}
	var id int
	if err := c.QueryRow(ctx, "SELECT id FROM ctr").Scan(&id); err != nil || id != 1 {
		t.Fatalf("other columns: %d %v", id, err)
	}
}

// TestLengthCastsOnConstants: a constant cast to a string type with a
// length is stored as PostgreSQL stores it (the cast truncates), through
// the proxy as directly; other modifiers on constants are refused, not
// dropped.
func TestLengthCastsOnConstants(t *testing.T) {
	ctx := t.Context()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	enc := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	plain, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	ddl := "CREATE TABLE ct (id int, t text, v varchar(10), c char(5))"
	mustExec(t, enc, ddl)
	mustExec(t, plain, ddl)
	for _, sql := range []string{
		"INSERT INTO ct VALUES (1, CAST('abcdefgh' AS varchar(5)), 'x', 'y')",
		"INSERT INTO ct VALUES (2, 'abcdefgh'::char(3), 'abcdefgh'::varchar(3), 'abcdefgh'::character(4))",
		"INSERT INTO ct VALUES (3, 'ab'::char(5), 'ab   '::char(5), 'ab'::char(5))",
		"INSERT INTO ct VALUES (4, 'żółwie'::varchar(2), 'żółwie'::character varying(4), 'żółwie'::bpchar(3))",
		"UPDATE ct SET t = 'abcdefgh'::varchar(2) WHERE id = 1",
	} {
		mustExec(t, enc, sql)
		mustExec(t, plain, sql)
	}
	read := func(c *pgx.Conn) []string {
		rows, err := c.Query(ctx, "SELECT id, t, v, c FROM ct ORDER BY id", pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for rows.Next() {
			var id int
			var a, b, d string
			if err := rows.Scan(&id, &a, &b, &d); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d|%s|%s|%s", id, a, b, d))
		}
		return out
	}
	if got, want := read(enc), read(plain); !slices.Equal(got, want) {
		t.Fatalf("through the proxy %q, directly %q", got, want)
	}
	if _, err := enc.Exec(ctx, "INSERT INTO ct (id, t) VALUES (5, '1.25'::numeric(3,1))"); pgCode(err) != "0A000" {
		t.Fatalf("a numeric(p,s) cast on a constant: %v, want 0A000", err)
	}
}

// TestRefusalsQuoteNoValues: a refused increment names the column, not
// the client's constant (0A000 messages are logged in full).
func TestRefusalsQuoteNoValues(t *testing.T) {
	db := newEncDB(t)
	p := startProxy(t, db, incPolicy) // Paillier declared: a fractional increment is refused
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	mustExec(t, c, "CREATE TABLE acct (id int, n int)")
	_, err := c.Exec(t.Context(), "UPDATE acct SET n = n + 4242.4242")
	if pgCode(err) != "0A000" || !strings.Contains(err.Error(), "acct.n") || strings.Contains(err.Error(), "4242") {
		t.Fatalf("refused increment: %v, want 0A000 naming acct.n without the constant", err)
	}
}

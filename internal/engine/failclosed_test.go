package engine_test

import (
	"bytes"
	"os"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"

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

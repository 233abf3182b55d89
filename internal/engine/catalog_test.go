package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/engine"
)

// TestTwoProxies runs two proxies on one database: each sees the other's
// tables at once, and reads the rows the other wrote.
func TestTwoProxies(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	a := startProxy(t, db, nil).connect(t, pgx.QueryExecModeCacheStatement)
	b := startProxy(t, db, nil).connect(t, pgx.QueryExecModeCacheStatement)
	for i := 0; i < 20; i++ {
		// Create through one, write through the other right away: the
		// second must never take the new table for a plain one.
		name := "shared" + string(rune('a'+i))
		c1, c2 := a, b
		if i%2 == 1 {
			c1, c2 = b, a
		}
		mustExec(t, c1, "CREATE TABLE "+name+" (id int, secret text)")
		mustExec(t, c2, "INSERT INTO "+name+" VALUES ($1, $2)", 1, "from the other proxy")
		mustExec(t, c1, "INSERT INTO "+name+" VALUES (2, 'from the creator')")
		var n int
		if err := db.direct(t).QueryRow(ctx, "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 AND column_name = 'secret__eq'", name).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%s is not encrypted on the server: %d %v", name, n, err)
		}
		for _, c := range []*pgx.Conn{c1, c2} {
			rows, err := c.Query(ctx, "SELECT secret FROM "+name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil || len(got) != 2 {
				t.Fatalf("%s: %v %v", name, got, err)
			}
		}
	}
}

// TestTamperedCatalog changes a column's recorded layer behind the
// proxies' back: a new proxy refuses to start, a running one refuses
// every statement on a table until the catalog verifies again.
func TestTamperedCatalog(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	conn := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	mustExec(t, conn, "CREATE TABLE victim (id int, secret text)")
	mustExec(t, conn, "INSERT INTO victim VALUES (1, 'x')")
	direct := db.direct(t)
	// Pretend the Eq onion was peeled to DET, as an attacker wanting
	// equality leakage would.
	mustExec(t, direct, `UPDATE pgonion.columns SET onions = '{"eq": "det", "search": "search"}' WHERE column_name = 'secret'`)
	mustExec(t, direct, "UPDATE pgonion.catalog_version SET version = version + 1")
	mustExec(t, direct, "NOTIFY pgonion_catalog")

	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := engine.New(cctx, engine.Config{Backend: db.dsn, Store: db.store})
	if !errors.Is(err, catalog.ErrTampered) {
		t.Fatalf("engine.New on a tampered catalog: %v, want ErrTampered", err)
	}
	// The running proxy no longer trusts any of it once the NOTIFY
	// reached it (milliseconds; 10 s under the slowest CI): statements
	// on tables are refused with a clear error, known or not.
	var s string
	var err2 error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err2 = conn.QueryRow(ctx, "SELECT secret FROM victim").Scan(&s)
		if pgCode(err2) == "58000" || time.Now().After(deadline) {
			break
		}
	}
	if pgCode(err2) != "58000" || !strings.Contains(err2.Error(), "modified outside the proxy") {
		t.Fatalf("read after tampering: %q %v, want SQLSTATE 58000", s, err2)
	}
	// A table it does not know cannot be checked: refused, not guessed.
	_, err = conn.Exec(ctx, "INSERT INTO unknown_table VALUES (1)")
	if pgCode(err) != "58000" {
		t.Fatalf("statement on an unknown table with a tampered catalog: %v, want SQLSTATE 58000", err)
	}
}

// TestPhysicalTableRefusesPlaintext sends, directly to the server, the
// plaintext statements a client would send if the proxy's rewriting were
// bypassed (e.g. by a proxy whose copy of the catalog is a moment old):
// the physical table rejects them. (Not all: a positional INSERT whose
// first value is exactly 16 bytes long passes the salt check. That, and
// the milliseconds a NOTIFY takes, is the residual risk of a catalog copy
// that is behind; see README, "Encrypted tables".)
func TestPhysicalTableRefusesPlaintext(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	mustExec(t, p.connect(t, pgx.QueryExecModeSimpleProtocol), "CREATE TABLE guarded (id int, secret text)")
	direct := db.direct(t)
	for _, sql := range []string{
		"INSERT INTO guarded VALUES (1, 'secret')",   // an int into the salt
		"INSERT INTO guarded VALUES ('secret', 'x')", // too short for a salt
		"INSERT INTO guarded (id, secret) VALUES (1, 'secret')",
		"INSERT INTO guarded (secret) VALUES ('secret')",
		"UPDATE guarded SET secret = 'secret'",
	} {
		if _, err := direct.Exec(ctx, sql); err == nil {
			t.Errorf("%s: accepted", sql)
		}
	}
	if _, err := direct.PgConn().CopyFrom(ctx, strings.NewReader("1\tsecret\n"), "COPY guarded FROM STDIN"); err == nil {
		t.Error("plaintext COPY accepted")
	}
	var n int
	if err := direct.QueryRow(ctx, "SELECT count(*) FROM guarded").Scan(&n); err != nil || n != 0 {
		t.Fatalf("guarded holds %d rows (%v)", n, err)
	}
}

package engine_test

import (
	"context"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// psqlScript runs through the proxy on encrypted tables and directly on a
// plaintext database; psql's output must be byte-identical.
const psqlScript = `
\pset null '(null)'
CREATE TABLE people (id int, name text, city varchar(30), salary numeric(10,2), born date, seen timestamptz, active boolean, photo bytea, code char(4), big bigint, small smallint);
INSERT INTO people VALUES (1, 'Zoë Ångström', 'Zürich', 12345.67, '1980-02-29', '2024-01-02 03:04:05.678+01', true, '\xdeadbeef', 'ab', 9223372036854775807, -32768);
INSERT INTO people VALUES (2, '', '', 0, '2000-01-01', '1970-01-01 00:00:00+00', false, '\x', '', -9223372036854775808, 32767),
  (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO people (id, name) VALUES (4, 'only a name');
SELECT * FROM people;
SELECT name AS n, id, photo FROM people;
\x on
SELECT p.* FROM people p;
\x off
SET TimeZone = 'America/New_York';
SELECT seen, born FROM people;
INSERT INTO people (name, id) VALUES ('columns in another order', 5);
SELECT id, name FROM people;
`

func TestPsqlDifferential(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql is not installed:", err)
	}
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	plainDSN := pgtest.DSN(t)
	run := func(dsn string) string {
		t.Helper()
		cmd := exec.Command(psql, "-X", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", "-")
		cmd.Stdin = strings.NewReader(psqlScript)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("psql %s: %v\n%s", redact(dsn), err, out)
		}
		return string(out)
	}
	direct := run(plainDSN)
	proxied := run(p.url)
	if direct != proxied {
		t.Fatalf("psql output differs\n--- direct\n%s\n--- through the proxy\n%s", direct, proxied)
	}
	// The server's copy of the proxy's table has no plaintext column; its
	// twin (the logical definition, for the catalogs) has no row.
	var n int
	if err := db.direct(t).QueryRow(context.Background(), "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'people' AND column_name IN ('name', 'salary', 'photo')").Scan(&n); err != nil || n != 0 {
		t.Fatalf("plaintext columns on the server: %d %v", n, err)
	}
	if err := db.direct(t).QueryRow(context.Background(), "SELECT count(*) FROM pgonion_l_public.people").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows in the twin: %d %v", n, err)
	}
}

func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "?"
	}
	return u.Redacted()
}

// TestByteaOutputEscape reads encrypted columns after the session chose
// bytea_output = escape, which changes how the server sends ciphertexts
// in the simple protocol.
func TestByteaOutputEscape(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, newEncDB(t), nil)
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	mustExec(t, c, "CREATE TABLE esc (b bytea, s text)")
	mustExec(t, c, `INSERT INTO esc VALUES ('\x00015c7f80ff', 'back\slash')`)
	mustExec(t, c, "SET bytea_output = escape")
	var b, s string
	if err := c.QueryRow(ctx, "SELECT b::text, s FROM esc").Scan(&b, &s); err == nil {
		t.Fatalf("a cast of an encrypted column was not refused")
	}
	if err := c.QueryRow(ctx, "SELECT s FROM esc").Scan(&s); err != nil || s != `back\slash` {
		t.Fatalf("text column: %q %v", s, err)
	}
	var raw []byte
	if err := c.QueryRow(ctx, "SELECT b FROM esc").Scan(&raw); err != nil || string(raw) != "\x00\x01\\\x7f\x80\xff" {
		t.Fatalf("bytea column: %x %v", raw, err)
	}
}

package wire_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runPsql runs psql with args against the proxy (or directly) and returns
// its combined output.
func runPsql(t *testing.T, p *testProxy, direct bool, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, pgBin(t, "psql"), append([]string{"-X", "-v", "ON_ERROR_STOP=1"}, args...)...)
	cmd.Env = p.pgEnv(direct)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

const psqlScript = `
CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(10,2), tags text[], made date, data bytea);
INSERT INTO items VALUES
  (1, 'apple', 1.25, '{fruit,red}', '2024-01-02', '\xdeadbeef'),
  (2, 'pear', NULL, '{}', NULL, ''),
  (3, E'tab\there', 99999.99, '{"a b",c}', '1999-12-31', NULL);
SELECT * FROM items ORDER BY id;
\pset format aligned
SELECT count(*), sum(price), string_agg(name, ',' ORDER BY id) FROM items;
BEGIN;
UPDATE items SET price = price * 2 WHERE id = 1 RETURNING id, price;
SAVEPOINT s1;
DELETE FROM items WHERE id = 2;
ROLLBACK TO SAVEPOINT s1;
COMMIT;
SELECT id, price FROM items ORDER BY id;
DO $$ BEGIN RAISE NOTICE 'notice from a DO block'; END $$;
SELECT 1 AS a \; SELECT 2 AS b;
PREPARE q(int) AS SELECT name FROM items WHERE id = $1;
EXECUTE q(3);
DEALLOCATE q;
\echo done
`

// TestPsqlScriptSameAsDirect runs one script with psql -f directly and
// through the proxy: the output must be identical.
func TestPsqlScriptSameAsDirect(t *testing.T) {
	p := startProxy(t, nil)
	script := filepath.Join(t.TempDir(), "script.sql")
	if err := os.WriteFile(script, []byte(psqlScript), 0o644); err != nil {
		t.Fatal(err)
	}
	direct, err := runPsql(t, p, true, "-f", script)
	if err != nil {
		t.Fatalf("direct psql failed: %v\n%s", err, direct)
	}
	// Same script again on a second fresh database, through the proxy.
	p2 := startProxy(t, nil)
	proxied, err := runPsql(t, p2, false, "-f", script)
	if err != nil {
		t.Fatalf("psql through the proxy failed: %v\n%s", err, proxied)
	}
	if proxied != direct {
		t.Fatalf("output differs\n--- direct ---\n%s\n--- proxy ---\n%s", direct, proxied)
	}
	for _, want := range []string{"notice from a DO block", "done", "2.50", "(3 rows)"} {
		if !strings.Contains(proxied, want) {
			t.Errorf("output lacks %q:\n%s", want, proxied)
		}
	}
}

func TestPsqlCommandAndError(t *testing.T) {
	p := startProxy(t, nil)
	out, err := runPsql(t, p, false, "-At", "-c", "SELECT 40 + 2")
	if err != nil || strings.TrimSpace(out) != "42" {
		t.Fatalf("psql -c: %v %q", err, out)
	}
	out, err = runPsql(t, p, false, "-c", "SELECT 1/0")
	if err == nil || !strings.Contains(out, "division by zero") {
		t.Fatalf("error not relayed: %v %q", err, out)
	}
}

func TestPsqlCopyInAndOut(t *testing.T) {
	p := startProxy(t, nil)
	dir := t.TempDir()
	var in bytes.Buffer
	for i := range 5000 {
		in.WriteString(strings.Join([]string{itoa(i), "name " + itoa(i), `"quoted, ""x"""`}, ",") + "\n")
	}
	inFile, outFile := filepath.Join(dir, "in.csv"), filepath.Join(dir, "out.csv")
	if err := os.WriteFile(inFile, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runPsql(t, p, false, "-c", "CREATE TABLE c (id int, name text, q text)"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := runPsql(t, p, false, "-c", `\copy c FROM '`+inFile+`' WITH (FORMAT csv)`); err != nil || !strings.Contains(out, "COPY 5000") {
		t.Fatalf("copy in: %v %s", err, out)
	}
	if out, err := runPsql(t, p, false, "-c", `\copy (SELECT * FROM c ORDER BY id) TO '`+outFile+`' WITH (FORMAT csv)`); err != nil {
		t.Fatalf("copy out: %v %s", err, out)
	}
	got, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, in.Bytes()) {
		t.Fatalf("copied out %d bytes, want the %d bytes copied in", len(got), in.Len())
	}
	// A failing COPY (bad data) reports the error and leaves the session usable.
	bad := filepath.Join(dir, "bad.csv")
	_ = os.WriteFile(bad, []byte("1,a,b\nnot-a-number,b,c\n"), 0o644)
	out, err := runPsql(t, p, false, "-c", `\copy c FROM '`+bad+`' WITH (FORMAT csv)`, "-c", "SELECT count(*) FROM c")
	if err == nil || !strings.Contains(out, "invalid input syntax for type integer") {
		t.Fatalf("bad copy: %v %s", err, out)
	}
}

// TestPsqlCancel interrupts psql during pg_sleep: psql sends a CancelRequest
// to the proxy, which must cancel the statement on the server.
func TestPsqlCancel(t *testing.T) {
	p := startProxy(t, nil)
	direct := p.connectDirect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, pgBin(t, "psql"), "-X", "-c", "SELECT pg_sleep(60) /* cancel-me */")
	cmd.Env = p.pgEnv(false)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "pg_sleep to run on the server", func() bool {
		return countBackends(t, direct, "%cancel-me%") == 1
	})
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if err == nil || !strings.Contains(out.String(), "canceling statement due to user request") {
		t.Fatalf("psql after SIGINT: %v\n%s", err, out.String())
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	waitFor(t, 10*time.Second, "the server statement to end", func() bool {
		return countBackends(t, direct, "%cancel-me%") == 0
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

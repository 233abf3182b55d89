package main

import (
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestColumns declares policies with `proxy columns set`, creates the
// table through `proxy serve`, checks the server-side layout, narrows a
// column, and reads the data back after a restart of the proxy.
func TestColumns(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	dir := t.TempDir()
	proxyCmd := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := proxyCmd("keys", "init"); code != 0 {
		t.Fatalf("keys init: %s", out)
	}
	for _, args := range [][]string{
		{"people.ssn", "--policy", "sensitive"},
		{"public.people.age", "--policy", "encrypted", "--capabilities", "eq,ord"},
		{"people.note", "--policy", "plain"},
	} {
		if out, code := proxyCmd(append([]string{"columns", "set", "--backend", dsn}, args...)...); code != 0 || !strings.Contains(out, "when table public.people is created") {
			t.Fatalf("columns set %v: exit %d\n%s", args, code, out)
		}
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"people.x", "--policy", "secret"}, "bad --policy"},
		{[]string{"people.x", "--policy", "plain", "--capabilities", "eq"}, "--capabilities goes with --policy encrypted"},
		{[]string{"people.x", "--policy", "encrypted", "--capabilities", "fuzzy"}, "bad capability"},
		{[]string{"x", "--policy", "plain"}, "want [SCHEMA.]TABLE.COLUMN"},
	} {
		if out, code := proxyCmd(append([]string{"columns", "set", "--backend", dsn}, bad.args...)...); code != 2 || !strings.Contains(out, bad.want) || !strings.Contains(out, "hint:") {
			t.Fatalf("columns set %v: exit %d\n%s\nwant exit 2 and %q with a hint", bad.args, code, out, bad.want)
		}
	}

	serve := func() (*proc, *pgx.Conn) {
		addr := freeAddr(t)
		p := startedIn(t, dir, regexp.MustCompile("proxy listening"), "serve", "--listen", addr, "--backend", dsn, "--auth", "trust")
		db := strings.SplitN(dsn[strings.LastIndex(dsn, "/")+1:], "?", 2)[0]
		c, err := pgx.Connect(ctx, "postgres://app@"+addr+"/"+db+"?sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		return p, c
	}
	stop := func(p *proc, c *pgx.Conn) {
		c.Close(ctx)
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		if err := p.wait(); err != nil {
			t.Fatalf("serve: %v\n%s", err, p.output())
		}
	}
	p, c := serve()
	if _, err := c.Exec(ctx, "CREATE TABLE people (id int, ssn text, age int, note text)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO people VALUES ($1, $2, $3, $4)", 1, "123-45-6789", 42, "hello"); err != nil {
		t.Fatal(err)
	}
	physical := func() []string {
		rows, err := pgxConnect(t, dsn).Query(ctx, "SELECT column_name FROM information_schema.columns WHERE table_name = 'people' ORDER BY ordinal_position")
		if err != nil {
			t.Fatal(err)
		}
		cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return cols
	}
	want := []string{"pgonion_salt", "id__eq", "id__ord", "id__add", "id__salt", "ssn__eq", "ssn__salt", "age__eq", "age__ord", "age__salt", "note"}
	if got := physical(); !slices.Equal(got, want) {
		t.Fatalf("server columns %v, want %v", got, want)
	}
	stop(p, c)

	out, code := proxyCmd("columns", "list", "--backend", dsn)
	for _, w := range []string{"public.people.ssn", "sensitive", "public.people.age", "eq,ord", "public.people.note", "plain"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Fatalf("columns list (exit %d) lacks %q:\n%s", code, w, out)
		}
	}
	if out, code := proxyCmd("columns", "set", "people.age", "--policy", "encrypted", "--capabilities", "eq", "--backend", dsn); code != 0 || !strings.Contains(out, "dropped server columns age__ord") {
		t.Fatalf("narrowing age: exit %d\n%s", code, out)
	}
	if out, code := proxyCmd("columns", "set", "people.note", "--policy", "encrypted", "--backend", dsn); code != 1 || !strings.Contains(out, "hint:") {
		t.Fatalf("encrypting a plain column in place: exit %d\n%s", code, out)
	}
	if out, code := proxyCmd("columns", "set", "people.ssn", "--policy", "encrypted", "--capabilities", "eq,search", "--backend", dsn); code != 1 || !strings.Contains(out, "re-encrypted") {
		t.Fatalf("adding an onion: exit %d\n%s", code, out)
	}

	// After a restart, with the narrowed column, the data still reads.
	p, c = serve()
	var ssn, note string
	var age int
	if err := c.QueryRow(ctx, "SELECT ssn, age, note FROM people").Scan(&ssn, &age, &note); err != nil || ssn != "123-45-6789" || age != 42 || note != "hello" {
		t.Fatalf("after restart: %q %d %q %v", ssn, age, note, err)
	}
	stop(p, c)
}

func pgxConnect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

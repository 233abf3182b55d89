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
		{"people.id", "--policy", "encrypted", "--capabilities", "eq,ord,add"}, // Paillier is opt-in
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
		rows, err := pgxConnect(t, dsn).Query(ctx, "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'people' ORDER BY ordinal_position")
		if err != nil {
			t.Fatal(err)
		}
		cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return cols
	}
	// Ord cells first, then the salt and the salt overrides, then the Eq
	// cells and plain columns in the logical order (rewrite.PlanCreate).
	want := []string{"id__ord", "age__ord", "pgonion_salt", "id__salt", "ssn__salt", "age__salt", "id__eq", "id__add", "ssn__eq", "age__eq", "note"}
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
	// Changes that need the data rewritten are done online (recrypt).
	if out, code := proxyCmd("columns", "set", "people.note", "--policy", "encrypted", "--backend", dsn); code != 0 || !strings.Contains(out, "plain -> encrypted") || !strings.Contains(out, "note__plaintext") {
		t.Fatalf("encrypting a plain column in place: exit %d\n%s", code, out)
	}
	if out, code := proxyCmd("columns", "set", "people.ssn", "--policy", "encrypted", "--capabilities", "eq,search", "--backend", dsn); code != 0 || !strings.Contains(out, "re-encrypted: sensitive (eq) -> encrypted (eq,search)") {
		t.Fatalf("adding an onion: exit %d\n%s", code, out)
	}

	// After a restart, with the narrowed and rewritten columns, the data
	// still reads.
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

// TestColumnsJoinGroups declares join groups with `proxy columns set
// --join-group`, creates the tables through the proxy, and checks that
// `columns list` shows the groups and that a created column's group
// cannot change.
func TestColumnsJoinGroups(t *testing.T) {
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
	set := func(args ...string) (string, int) {
		t.Helper()
		return proxyCmd(append([]string{"columns", "set", "--backend", dsn}, args...)...)
	}
	// listed returns the cells of `columns list` about column
	// (schema.table.column): column, type, policy, capabilities, join
	// group, onions.
	cells := regexp.MustCompile(`\s{2,}`)
	listed := func(column string) []string {
		t.Helper()
		out, code := proxyCmd("columns", "list", "--backend", dsn)
		if code != 0 || !slices.Equal(cells.Split(strings.SplitN(out, "\n", 2)[0], -1), []string{"COLUMN", "TYPE", "POLICY", "CAPABILITIES", "JOIN GROUP", "ONIONS"}) {
			t.Fatalf("columns list: exit %d\n%s", code, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if f := cells.Split(strings.TrimSpace(line), -1); f[0] == column && len(f) == 6 {
				return f
			}
		}
		t.Fatalf("columns list lacks %s:\n%s", column, out)
		return nil
	}
	if out, code := proxyCmd("keys", "init"); code != 0 {
		t.Fatalf("keys init: %s", out)
	}
	for _, args := range [][]string{
		{"orders.customer_id", "--policy", "encrypted", "--capabilities", "eq,ord", "--join-group", "customer"},
		{"customers.id", "--join-group=customer", "--policy", "encrypted"},
		{"customers.region", "--policy", "encrypted", "--join-group", "region"},
	} {
		if out, code := set(args...); code != 0 || !strings.Contains(out, "in join group") || !strings.Contains(out, "when table public.") {
			t.Fatalf("columns set %v: exit %d\n%s", args, code, out)
		}
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"orders.x", "--policy", "encrypted", "--join-group", "Customer"}, "bad --join-group"},
		{[]string{"orders.x", "--policy", "encrypted", "--join-group", "a-b"}, "bad --join-group"},
		{[]string{"orders.x", "--policy", "sensitive", "--join-group", "customer"}, "--join-group goes with --policy encrypted"},
		{[]string{"orders.x", "--policy", "plain", "--join-group", "customer"}, "--join-group goes with --policy encrypted"},
		{[]string{"orders.x", "--policy", "encrypted", "--capabilities", "ord", "--join-group", "customer"}, "needs the eq capability"},
	} {
		if out, code := set(bad.args...); code != 2 || !strings.Contains(out, bad.want) || !strings.Contains(out, "hint:") {
			t.Fatalf("columns set %v: exit %d\n%s\nwant exit 2 and %q with a hint", bad.args, code, out, bad.want)
		}
	}
	if f := listed("public.orders.customer_id"); f[1] != "(table not created yet)" || f[3] != "eq,ord" || f[4] != "customer" {
		t.Fatalf("declared join group not listed: %q", f)
	}
	// Declarations replace each other: without --join-group, the column
	// leaves its group (and set says so); --join-group '' clears it too.
	if out, code := set("customers.id", "--policy", "encrypted"); code != 0 || !strings.Contains(out, "no longer in join group customer") {
		t.Fatalf("redeclaring without the group: exit %d\n%s", code, out)
	}
	if f := listed("public.customers.id"); f[4] != "-" {
		t.Fatalf("join group still listed: %q", f)
	}
	if out, code := set("customers.id", "--policy", "encrypted", "--join-group", "customer"); code != 0 {
		t.Fatalf("rejoining: exit %d\n%s", code, out)
	}
	if out, code := set("customers.region", "--policy", "encrypted", "--join-group", ""); code != 0 || strings.Contains(out, "join group") {
		t.Fatalf("clearing with --join-group '': exit %d\n%s", code, out)
	}
	if f := listed("public.customers.region"); f[4] != "-" {
		t.Fatalf("cleared join group still listed: %q", f)
	}

	addr := freeAddr(t)
	p := startedIn(t, dir, regexp.MustCompile("proxy listening"), "serve", "--listen", addr, "--backend", dsn, "--auth", "trust")
	db := strings.SplitN(dsn[strings.LastIndex(dsn, "/")+1:], "?", 2)[0]
	c, err := pgx.Connect(ctx, "postgres://app@"+addr+"/"+db+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE customers (id int, region text)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE orders (id int, customer_id int)"); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, p.output())
	}

	for column, group := range map[string]string{"public.orders.customer_id": "customer", "public.customers.id": "customer"} {
		if f := listed(column); f[1] != "integer" || f[4] != group {
			t.Fatalf("created column %s is not listed in join group %s: %q", column, group, f)
		}
	}
	for _, column := range []string{"public.orders.id", "public.customers.region"} {
		if f := listed(column); f[4] != "-" {
			t.Fatalf("column %s listed in a join group: %q", column, f)
		}
	}
	// Moving a created column to another join group re-encrypts it
	// under the group's keys.
	for _, group := range []string{"other", "customer"} {
		out, code := set("orders.customer_id", "--policy", "encrypted", "--capabilities", "eq,ord", "--join-group", group)
		if code != 0 || !strings.Contains(out, "re-encrypted") || !strings.Contains(out, "-> encrypted (eq,ord) in join group "+group) {
			t.Fatalf("moving orders.customer_id to join group %s: exit %d\n%s", group, code, out)
		}
		if f := listed("public.orders.customer_id"); f[4] != group {
			t.Fatalf("orders.customer_id is listed in join group %q, want %s", f[4], group)
		}
	}
	if out, code := set("orders.customer_id", "--policy", "sensitive"); code != 1 || !strings.Contains(out, "cannot become sensitive") || !strings.Contains(out, "hint:") {
		t.Fatalf("making a grouped column sensitive: exit %d\n%s", code, out)
	}
	// Narrowing keeps the group, with or without --join-group.
	if out, code := set("orders.customer_id", "--policy", "encrypted", "--capabilities", "eq"); code != 0 ||
		!strings.Contains(out, "in join group customer") || !strings.Contains(out, "dropped server columns customer_id__ord") {
		t.Fatalf("narrowing a grouped column: exit %d\n%s", code, out)
	}
	if out, code := set("orders.customer_id", "--policy", "encrypted", "--capabilities", "eq", "--join-group", "customer"); code != 0 || !strings.Contains(out, "in join group customer") {
		t.Fatalf("restating the join group: exit %d\n%s", code, out)
	}
	if f := listed("public.orders.customer_id"); f[3] != "eq" || f[4] != "customer" {
		t.Fatalf("narrowed column left its join group: %q", f)
	}
}

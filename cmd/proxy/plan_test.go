package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// planWorkloadSQL has an equality, a range, a query that the previous
// ones leave needing nothing more, a join refused for want of a join
// group, a comparison on a sensitive column, a write, a query without
// encrypted tables and DDL.
const planWorkloadSQL = `-- equality
SELECT name FROM people WHERE age = 42;

/* range, with a parameter */
SELECT name FROM people WHERE age BETWEEN $1 AND 60 ORDER BY age;
SELECT count(*) FROM people WHERE id = 7 AND age = 3;
SELECT p.name FROM people p JOIN orders o ON o.cust = p.age;
SELECT name FROM people
 WHERE ssn = $1 FOR UPDATE;
INSERT INTO people (id, age) VALUES (2, 3);
SELECT 1;
CREATE INDEX ON orders (cust);
SELECT age % 7, count(*) FROM people GROUP BY 1 ORDER BY 2 DESC;
`

// TestColumnsPlan creates tables through the proxy, then plans a workload
// with `proxy columns plan` (text and --json) and checks the layers it
// reports, the refusals, and that nothing was peeled; and that `proxy
// status` shows each column's layers and what the server learns.
func TestColumnsPlan(t *testing.T) {
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
		{"people.age", "--policy", "encrypted", "--capabilities", "eq,ord"},
		{"people.name", "--policy", "plain"},
		{"orders.cust", "--policy", "encrypted", "--capabilities", "eq"},
	} {
		if out, code := proxyCmd(append([]string{"columns", "set", "--backend", dsn}, args...)...); code != 0 {
			t.Fatalf("columns set %v: exit %d\n%s", args, code, out)
		}
	}
	addr := freeAddr(t)
	p := startedIn(t, dir, regexp.MustCompile("proxy listening"), "serve", "--listen", addr, "--backend", dsn, "--auth", "trust")
	db := strings.SplitN(dsn[strings.LastIndex(dsn, "/")+1:], "?", 2)[0]
	c, err := pgx.Connect(ctx, "postgres://app@"+addr+"/"+db+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	// people.id is a key: its Eq onion starts at DET.
	for _, sql := range []string{
		"CREATE TABLE people (id int PRIMARY KEY, name text, age int, ssn text)",
		"CREATE TABLE orders (id int, cust int)",
		"INSERT INTO people VALUES (1, 'ann', 42, '123-45-6789')",
		// Server-generated keys and a foreign key to one stay plain.
		"CREATE TABLE tags (id serial PRIMARY KEY, label text)",
		"CREATE TABLE tagged (tag int REFERENCES tags, note text)",
	} {
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	c.Close(ctx)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, p.output())
	}

	statusBefore, code := proxyCmd("status", "--backend", dsn)
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, statusBefore)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^public\.tags\.id\s+serial\s+plain\s.*stored unencrypted; the server generates its values \(a sequence default\)\)$`),
		regexp.MustCompile(`(?m)^public\.tagged\.tag\s+int4\s+plain\s.*stored unencrypted; a foreign key to tags\.id, enforced by the server\)$`),
		regexp.MustCompile(`(?m)^public\.tags\.label\s+text\s+encrypted\s+eq\s`),
	} {
		if !want.MatchString(statusBefore) {
			t.Fatalf("status does not match %s:\n%s", want, statusBefore)
		}
	}
	cells := regexp.MustCompile(`\s{2,}`)
	learned := func(status, column string) []string {
		t.Helper()
		_, section, ok := strings.Cut(status, "What the server can learn, per encrypted column:")
		if !ok {
			t.Fatalf("status lacks the per-column summary:\n%s", status)
		}
		for _, line := range strings.Split(section, "\n") {
			if f := cells.Split(strings.TrimSpace(line), -1); f[0] == column {
				return f[1:]
			}
		}
		t.Fatalf("status summary lacks %s:\n%s", column, status)
		return nil
	}
	for column, want := range map[string][]string{
		"public.people.id":   {"eq=det (equality)", "ord=rnd (nothing)", "add=hom (nothing)"},
		"public.people.age":  {"eq=rnd (nothing)", "ord=rnd (nothing)"},
		"public.people.ssn":  {"eq=rnd (nothing)", "sensitive: never peeled"},
		"public.orders.cust": {"eq=rnd (nothing)"},
	} {
		if got := learned(statusBefore, column); !slices.Equal(got, want) {
			t.Fatalf("status shows %s as %q, want %q:\n%s", column, got, want, statusBefore)
		}
	}
	if !strings.Contains(statusBefore, "(sensitive: never peeled)") || strings.Contains(statusBefore, "public.people.name  eq=") {
		t.Fatalf("status:\n%s", statusBefore)
	}
	listBefore, _ := proxyCmd("columns", "list", "--backend", dsn)

	workload := filepath.Join(dir, "workload.sql")
	if err := os.WriteFile(workload, []byte(planWorkloadSQL), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := proxyCmd("columns", "plan", "--workload", workload, "--backend", dsn)
	if code != 0 {
		t.Fatalf("columns plan: exit %d\n%s", code, out)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\[1\] line 2: SELECT name FROM people WHERE age = 42\n\s+needs\s+public\.people\.age\s+eq=det\s+would be peeled: rnd -> det\n`),
		regexp.MustCompile(`(?m)^\[2\] line 5: SELECT name FROM people WHERE age BETWEEN \$1 AND 60 ORDER BY age\n\s+needs\s+public\.people\.age\s+ord=ope\s+would be peeled: rnd -> ope\n`),
		regexp.MustCompile(`(?m)^\[3\] line 6: .*\n\s+needs\s+public\.people\.id\s+eq=det\s+already at det\n\s+needs\s+public\.people\.age\s+eq=det\s+peeled by \[1\] earlier`),
		regexp.MustCompile(`(?m)^\[4\] line 7: .*JOIN.*\n\s+re-keys\s+public\.orders\.cust\s+into join group adj_[0-9a-f]+\s.*\n\s+re-keys\s+public\.people\.age\s+into join group adj_[0-9a-f]+\s.*\n\s+needs\s+public\.orders\.cust\s+eq=det\s+would be peeled`),
		regexp.MustCompile(`(?m)^\[5\] line 8: SELECT name FROM people WHERE ssn = \$1 FOR UPDATE\n\s+refused \(0A000\): .*sensitive.*\n\s+sensitive\s+public\.people\.ssn\s+eq=det\s+never peeled`),
		regexp.MustCompile(`(?m)^\[6\] line 10: INSERT .*\n\s+peels nothing`),
		regexp.MustCompile(`(?m)^\[7\] line 11: SELECT 1\n\s+reads no encrypted table`),
		regexp.MustCompile(`(?m)^\[8\] line 12: CREATE INDEX .*\n\s+not analysed`),
		regexp.MustCompile(`(?m)^\[9\] line 13: .*\n\s+split execution: .*\n\s+Proxy Aggregate .*\n\s+Output: mod\(in1, 7\), count\(\*\)\n\s+Group Key: mod\(in1, 7\)\n\s+Sort Key: count\(\*\) DESC\n\s+->  Server Part`),
		regexp.MustCompile(`(?m)^public\.people\.age\s+eq\s+rnd\s+det\s+peel rnd -> det\s+equality: which rows hold equal values, across the columns of join group adj_[0-9a-f]+\s+\[1\] \[3\] \[4\]$`),
		regexp.MustCompile(`(?m)^public\.people\.age\s+ord\s+rnd\s+ope\s+peel rnd -> ope\s+order: .*\s+\[2\]$`),
		regexp.MustCompile(`(?m)^public\.people\.id\s+eq\s+det\s+det\s+none \(already at det\)\s+equality: .*\s+\[3\]$`),
		regexp.MustCompile(`(?m)^public\.people\.ssn\s+eq\s+det\s+equality\s+\[5\]$`),
		regexp.MustCompile(`(?m)^public\.orders\.cust\s+adj_[0-9a-f]+\s+\[4\]\s+which values of orders\.cust and people\.age are equal`),
		regexp.MustCompile(`(?m)^Refused: \[5\] `),
		regexp.MustCompile(`(?m)^3 onions would be peeled and 2 columns re-keyed by this workload`),
	} {
		if !want.MatchString(out) {
			t.Fatalf("columns plan output does not match %s:\n%s", want, out)
		}
	}

	out, code = proxyCmd("columns", "plan", "--workload", workload, "--json", "--backend", dsn)
	var r planReport
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("columns plan --json: exit %d, %v\n%s", code, err, out)
	}
	var results []string
	for _, s := range r.Statements {
		results = append(results, s.Result)
	}
	if want := []string{"planned", "planned", "planned", "planned", "refused", "write", "plain", "not analysed", "planned"}; !slices.Equal(results, want) {
		t.Fatalf("--json results %q, want %q\n%s", results, want, out)
	}
	if n := r.Statements[0].Needs; len(n) != 1 || n[0] != (planNeed{Column: "public.people.age", Onion: "eq", Layer: "det", Current: "rnd", Action: "peel"}) {
		t.Fatalf("--json needs of [1]: %+v", n)
	}
	if s := r.Statements[4]; s.Code != "0A000" || len(s.Sensitive) != 1 || s.Sensitive[0].Column != "public.people.ssn" {
		t.Fatalf("--json [5]: %+v", s)
	}
	if len(r.Rekeys) != 2 || r.Rekeys[0].Group != r.Rekeys[1].Group || r.Rekeys[0].Statement != 4 {
		t.Fatalf("--json rekeys: %+v", r.Rekeys)
	}
	if len(r.Onions) != 4 || r.Peels != 3 || len(r.Sensitive) != 1 || r.Sensitive[0].Layer != "det" || !slices.Equal(r.Sensitive[0].Statements, []int{5}) {
		t.Fatalf("--json summary: %+v %+v, %d peels", r.Onions, r.Sensitive, r.Peels)
	}

	// Nothing was peeled: the catalog's layers are unchanged.
	if statusAfter, _ := proxyCmd("status", "--backend", dsn); statusAfter != statusBefore {
		t.Fatalf("status changed by columns plan:\nbefore:\n%s\nafter:\n%s", statusBefore, statusAfter)
	}
	if listAfter, _ := proxyCmd("columns", "list", "--backend", dsn); listAfter != listBefore {
		t.Fatalf("columns list changed by columns plan:\nbefore:\n%s\nafter:\n%s", listBefore, listAfter)
	}

	bad := filepath.Join(dir, "bad.sql")
	if err := os.WriteFile(bad, []byte("SELECT 1;\nSELEC name FROM people;\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"--backend", dsn}, 2, "--workload FILE is required"},
		{[]string{"--workload", filepath.Join(dir, "missing.sql"), "--backend", dsn}, 1, "cannot read the workload"},
		{[]string{"--workload", bad, "--backend", dsn}, 1, "bad.sql:2:1: syntax error"},
		{[]string{"--workload", workload}, 2, "--backend is required"},
	} {
		out, code := proxyCmd(append([]string{"columns", "plan"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.contains) || !strings.Contains(out, "hint:") {
			t.Errorf("columns plan %v: exit %d\n%s\nwant exit %d and %q with a hint", tc.args, code, out, tc.code, tc.contains)
		}
	}
}

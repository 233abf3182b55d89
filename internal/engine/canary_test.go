package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/embedpg"
	"github.com/pgonion/pgonion/internal/pgtest"
)

// canaries are distinctive values of every encrypted type, and the text
// forms in which they would show up on the server if they leaked.
var canaries = []struct {
	column string
	value  string   // SQL literal written through the proxy
	forms  []string // what must appear nowhere on the server
}{
	{"i2", "31337", []string{"31337"}},
	{"i4", "918273645", []string{"918273645"}},
	{"i8", "8765432109876543", []string{"8765432109876543"}},
	{"n", "4242424.42", []string{"4242424.42", "424242442"}},
	{"nu", "271828.182845904523", []string{"271828.182845904523", "182845904523"}},
	{"t", "'CanaryTextZebra quokka'", []string{"CanaryTextZebra", "quokka", "canarytextzebra"}},
	{"vc", "'VarcharCanaryX'", []string{"VarcharCanaryX", "varcharcanaryx"}},
	{"ch", "'CHCAN'", []string{"CHCAN"}},
	{"d", "'1987-06-05'", []string{"1987-06-05", "06-05-1987"}},
	{"ts", "'1999-12-31 23:58:57.123456'", []string{"23:58:57", "1999-12-31"}},
	{"tz", "'2011-11-11 11:11:11+00'", []string{"11:11:11", "2011-11-11"}},
	{"by", `'\xcafebabe1337f00d'`, []string{"cafebabe1337f00d", "\xca\xfe\xba\xbe\x13\x37\xf0\x0d"}},
}

// TestCanary writes distinctive values of every type through the proxy, in
// both protocols, then looks for them where a curious DBA would: the
// server's tables read directly, pg_dump's output and, with
// log_statement=all, the server log.
func TestCanary(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	direct := db.direct(t)
	dbName := direct.Config().Database
	mustExec(t, direct, "ALTER DATABASE "+pgx.Identifier{dbName}.Sanitize()+" SET log_statement = 'all'")
	p := startProxy(t, db, nil)
	simple := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	ext := p.connect(t, pgx.QueryExecModeCacheStatement)
	mustExec(t, simple, "CREATE TABLE canary "+allTypes)
	var cols, vals []string
	for _, c := range canaries {
		cols = append(cols, c.column)
		vals = append(vals, c.value)
	}
	mustExec(t, simple, "INSERT INTO canary (k, "+strings.Join(cols, ", ")+") VALUES (1, "+strings.Join(vals, ", ")+")")
	// The same values as parameters, read by the proxy in text format.
	var params []any
	var marks []string
	for i, c := range canaries {
		params = append(params, strings.Trim(c.value, "'"))
		marks = append(marks, "$"+strconv.Itoa(i+2))
	}
	if _, err := ext.Exec(ctx, "INSERT INTO canary (k, "+strings.Join(cols, ", ")+") VALUES ($1, "+strings.Join(marks, ", ")+")",
		append([]any{pgx.QueryExecModeExec, 2}, params...)...); err != nil {
		t.Fatal(err)
	}
	// They read back through the proxy.
	var got string
	if err := simple.QueryRow(ctx, "SELECT t FROM canary WHERE k IS NOT NULL LIMIT 1").Scan(&got); err != nil {
		// WHERE on k is refused while k is encrypted: read all.
		if err := simple.QueryRow(ctx, "SELECT t FROM canary LIMIT 1").Scan(&got); err != nil {
			t.Fatal(err)
		}
	}
	if got != "CanaryTextZebra quokka" {
		t.Fatalf("read back %q", got)
	}

	// 1. The tables, read directly.
	var dump bytes.Buffer
	rows, err := direct.Query(ctx, "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var s, n string
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, pgx.Identifier{s, n}.Sanitize())
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for _, tab := range tables {
		if _, err := direct.PgConn().CopyTo(ctx, &dump, "COPY "+tab+" TO STDOUT"); err != nil {
			t.Fatal(err)
		}
	}
	checkNoCanary(t, "the server's tables", dump.Bytes())

	// 2. pg_dump.
	bin, err := embedpg.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bin, "pg_dump"), "--no-owner", db.dsn).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	if !bytes.Contains(out, []byte("canary__eq")) && !bytes.Contains(out, []byte("t__eq")) {
		t.Fatal("pg_dump output lacks the encrypted table")
	}
	checkNoCanary(t, "pg_dump output", out)

	// 3. The server log, which logged every statement.
	cl := pgtest.Current().Cluster
	if cl == nil {
		t.Log("not an embedded cluster: the server log is not checked")
		return
	}
	log, err := os.ReadFile(cl.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(log, []byte("INSERT INTO canary")) {
		t.Fatal("the server log does not show the INSERTs: is log_statement in effect?")
	}
	checkNoCanary(t, "the server log", log)
}

func checkNoCanary(t *testing.T, where string, b []byte) {
	t.Helper()
	for _, h := range canaryHits(b) {
		t.Errorf("%s contains %s", where, h)
	}
}

// canaryHits lists the canary forms found in b, case-insensitively.
func canaryHits(b []byte) []string {
	var hits []string
	lower := bytes.ToLower(b)
	for _, c := range canaries {
		for _, f := range c.forms {
			if containsDelimited(lower, bytes.ToLower([]byte(f))) {
				hits = append(hits, fmt.Sprintf("%q (column %s)", f, c.column))
			}
		}
	}
	return hits
}

// containsDelimited reports whether b contains f. A form made only of
// hexadecimal digits (a short number such as 31337) counts only where it
// is not part of a longer run of hex digits: ciphertexts shown in hex
// contain any 5-digit string by chance about once per megabyte, while a
// plaintext number in a dump, log or statement is delimited.
func containsDelimited(b, f []byte) bool {
	if len(f) == 0 || strings.Trim(string(f), "0123456789abcdef") != "" {
		return bytes.Contains(b, f)
	}
	isHex := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }
	for i := 0; ; {
		k := bytes.Index(b[i:], f)
		if k < 0 {
			return false
		}
		at := i + k
		end := at + len(f)
		if (at == 0 || !isHex(b[at-1])) && (end == len(b) || !isHex(b[end])) {
			return true
		}
		i = at + 1
	}
}

// TestCanaryControl shows that the canary check finds every value when it
// is stored in plaintext (so TestCanary's silence means something).
func TestCanaryControl(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	direct := db.direct(t)
	mustExec(t, direct, "CREATE TABLE canary "+allTypes)
	var cols, vals []string
	for _, c := range canaries {
		cols = append(cols, c.column)
		vals = append(vals, c.value)
	}
	mustExec(t, direct, "INSERT INTO canary ("+strings.Join(cols, ", ")+") VALUES ("+strings.Join(vals, ", ")+")")
	var dump bytes.Buffer
	if _, err := direct.PgConn().CopyTo(ctx, &dump, "COPY canary TO STDOUT"); err != nil {
		t.Fatal(err)
	}
	hits := canaryHits(dump.Bytes())
	found := map[string]bool{}
	for _, h := range hits {
		found[h[strings.LastIndex(h, "(column ")+8:len(h)-1]] = true
	}
	for _, c := range canaries {
		if !found[c.column] {
			t.Errorf("plaintext of column %s not detected in %q", c.column, dump.String())
		}
	}
}

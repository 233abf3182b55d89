package rewrite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// rmwConn connects to the test server with pgonion.expect_rows, the
// guard Render's UPDATE calls, installed from its migration.
func rmwConn(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	fn, err := os.ReadFile(filepath.Join("..", "..", "migrations", "0018_expect_rows.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{"CREATE SCHEMA IF NOT EXISTS pgonion", "DROP FUNCTION IF EXISTS pgonion.expect_rows(bigint, bigint)", string(fn)} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	return conn
}

// TestRMWRenderGuard: the unheld UPDATE of a read-modify-write changes
// the rows read when every row version is still current, and fails with
// 40001, changing nothing, when one changed after the read. The held
// one has no guard.
func TestRMWRenderGuard(t *testing.T) {
	ctx := context.Background()
	conn := rmwConn(t)
	mustRun := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	ct := planTable(t, conn, "CREATE TABLE rmw (id int PRIMARY KEY, n int)")
	mustRun("INSERT INTO rmw (id, pgonion_salt) VALUES (1, '\\x00112233445566778899aabbccddeeff'), (2, '\\x00112233445566778899aabbccddeeff')")
	sts, err := Parse("UPDATE rmw SET n = n * 2 WHERE id > 0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanUpdateRMW(sts[0], ct.Table, nil)
	if err != nil || p == nil {
		t.Fatalf("plan: %v %v", p, err)
	}
	if !strings.Contains(p.Read.SQL, "FOR NO KEY UPDATE OF rmw") {
		t.Errorf("the read does not lock as PostgreSQL's UPDATE of a non-key column does: %s", p.Read.SQL)
	}
	read := func() []RMWRow {
		rows, err := conn.Query(ctx, "SELECT ctid::text, xmin::text FROM rmw ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RMWRow, error) {
			var rr RMWRow
			err := r.Scan(&rr.CTID, &rr.XMin)
			rr.Cells = []Cells{{"_eq": ByteaLiteral([]byte{1}), SaltSuffix: ByteaLiteral(make([]byte, 16))}}
			return rr, err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	stale := read()
	mustRun("UPDATE rmw SET id = id WHERE id = 2") // a concurrent write: a new row version
	sql, err := p.Render(stale, false)
	if err != nil {
		t.Fatal(err)
	}
	var pe *pgconn.PgError
	if _, err := conn.Exec(ctx, sql); !errors.As(err, &pe) || pe.Code != "40001" {
		t.Fatalf("UPDATE of a stale row version: %v, want 40001", err)
	}
	sql, err = p.Render(read(), false)
	if err != nil {
		t.Fatal(err)
	}
	// The rows are spliced into a template deparsed once: the text is
	// what the deparser prints for the whole statement.
	whole, err := Parse(sql)
	if err != nil || len(whole) != 1 {
		t.Fatalf("the rendered UPDATE does not parse: %v\n%s", err, sql)
	}
	if again, err := whole[0].Deparse(); err != nil || again != sql {
		t.Errorf("rendered:\n%s\ndeparsed whole:\n%s (%v)", sql, again, err)
	}
	tag, err := conn.Exec(ctx, sql)
	if err != nil || tag.String() != "UPDATE 2" {
		t.Fatalf("UPDATE of current row versions: %q %v", tag, err)
	}
	// Held, the read's locks guarantee the versions: no guard.
	sql, err = p.Render(read(), true)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sql, "expect_rows") {
		t.Errorf("a held UPDATE repeats the guard: %s", sql)
	}
	if tag, err := conn.Exec(ctx, sql); err != nil || tag.String() != "UPDATE 2" {
		t.Fatalf("held UPDATE of current row versions: %q %v", tag, err)
	}
}

// TestRMWRenderWithPlainSet: an UPDATE that also sets a plain column (a
// SET item the server computes) is rendered whole, not from the cached
// template, and runs: both columns change.
func TestRMWRenderWithPlainSet(t *testing.T) {
	ctx := context.Background()
	conn := rmwConn(t)
	ct := planTable(t, conn, "CREATE TABLE rmwp (id int PRIMARY KEY, n int, tag_plain text)")
	if _, err := conn.Exec(ctx, "INSERT INTO rmwp (id, tag_plain, pgonion_salt) VALUES (1, 'old', '\\x00112233445566778899aabbccddeeff')"); err != nil {
		t.Fatal(err)
	}
	sts, err := Parse("UPDATE rmwp SET n = n * 2, tag_plain = upper(tag_plain) || '!' WHERE id = 1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanUpdateRMW(sts[0], ct.Table, nil)
	if err != nil || p == nil {
		t.Fatalf("plan: %v %v", p, err)
	}
	var row RMWRow
	if err := conn.QueryRow(ctx, "SELECT ctid::text, xmin::text FROM rmwp").Scan(&row.CTID, &row.XMin); err != nil {
		t.Fatal(err)
	}
	row.Cells = []Cells{{"_eq": ByteaLiteral([]byte{7}), SaltSuffix: ByteaLiteral(make([]byte, 16))}}
	sql, err := p.Render([]RMWRow{row}, true)
	if err != nil {
		t.Fatal(err)
	}
	if tag, err := conn.Exec(ctx, sql); err != nil || tag.String() != "UPDATE 1" {
		t.Fatalf("%s: %q %v", sql, tag, err)
	}
	var eq []byte
	var tag string
	if err := conn.QueryRow(ctx, "SELECT n__eq, tag_plain FROM rmwp").Scan(&eq, &tag); err != nil {
		t.Fatal(err)
	}
	if len(eq) != 1 || eq[0] != 7 || tag != "OLD!" {
		t.Errorf("after the UPDATE: n__eq %x, tag_plain %q; want 07, OLD!", eq, tag)
	}
}

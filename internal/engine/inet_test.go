package engine_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestInetColumns: encrypted inet columns (Eq onion only), written with
// literals and text and binary parameters, answer as on plaintext
// PostgreSQL in equality, IN, the proxy's sort (network_cmp) and
// DISTINCT; comparisons the proxy cannot make are refused.
func TestInetColumns(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	plain, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	const ddl = `CREATE TABLE hosts (id int PRIMARY KEY, ip inet)`
	c := p.connect(t, pgx.QueryExecModeCacheStatement)
	mustExec(t, c, ddl)
	mustExec(t, plain, ddl)
	lits := []string{"1.2.3.4", "1.2.3.4/24", "10.0.0.1", "::1", "2001:DB8::1", "::ffff:1.2.3.4", "1.2.3.5/24", "192.168.0.0/16"}
	for i, lit := range lits {
		for _, conn := range []*pgx.Conn{c, plain} {
			mustExec(t, conn, fmt.Sprintf("INSERT INTO hosts VALUES (%d, '%s')", i, lit), pgx.QueryExecModeSimpleProtocol)
			// pgx sends a netip.Prefix in binary.
			mustExec(t, conn, "INSERT INTO hosts VALUES ($1, $2)", 100+i, netip.MustParsePrefix(map[bool]string{true: lit, false: lit + map[bool]string{true: "/128", false: "/32"}[strings.Contains(lit, ":")]}[strings.Contains(lit, "/")]))
		}
	}
	queries := []string{
		"SELECT id, ip FROM hosts ORDER BY id",
		"SELECT id FROM hosts WHERE ip = '1.2.3.4' ORDER BY id",
		"SELECT id FROM hosts WHERE ip = '1.2.3.4/24' ORDER BY id",
		"SELECT id FROM hosts WHERE ip IN ('::1', '2001:db8::1') ORDER BY id",
		"SELECT id, ip FROM hosts ORDER BY ip, id",
		"SELECT id FROM hosts WHERE ip = $1 ORDER BY id",
	}
	run := func(conn *pgx.Conn, q string) (string, error) {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, "10.0.0.1")
		}
		rows, err := conn.Query(ctx, q, args...)
		if err != nil {
			return "", err
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			v, err := r.Values()
			return fmt.Sprint(v), err
		})
		return strings.Join(out, "\n"), err
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		c := p.connect(t, mode)
		for _, q := range queries {
			got, gerr := run(c, q)
			want, werr := run(plain, q)
			if gerr != nil || werr != nil || got != want {
				t.Errorf("%v: %s: through the proxy %v\n%s\nplaintext %v\n%s", mode, q, gerr, got, werr, want)
			}
		}
	}
	for _, q := range []string{"SELECT id FROM hosts WHERE ip << '1.2.3.0/24'", "SELECT DISTINCT ip FROM hosts ORDER BY ip"} {
		got, gerr := run(c, q)
		want, werr := run(plain, q)
		if pgCode(gerr) != "0A000" && (gerr != nil || werr != nil || got != want) {
			t.Errorf("%s: through the proxy %v\n%s\nplaintext %v\n%s, want the same or a refusal", q, gerr, got, werr, want)
		}
	}
}

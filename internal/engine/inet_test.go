package engine_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestInetColumns: encrypted inet columns (Eq onion only), written with
// literals and binary parameters, answer as on plaintext PostgreSQL in
// equality, IN and the proxy's sort (network_cmp); containment and
// DISTINCT ... ORDER BY may be refused, never answered differently.
func TestInetColumns(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE hosts (id int PRIMARY KEY, ip inet)`)
	for i, lit := range []string{"1.2.3.4", "1.2.3.4/24", "10.0.0.1", "::1", "2001:DB8::1", "::ffff:1.2.3.4", "1.2.3.5/24", "192.168.0.0/16"} {
		d.both(fmt.Sprintf("INSERT INTO hosts VALUES (%d, '%s')", i, lit), pgx.QueryExecModeSimpleProtocol)
		// pgx sends a netip.Prefix in binary.
		prefix := lit
		if !strings.Contains(lit, "/") {
			prefix = netip.MustParseAddr(lit).String() + map[bool]string{true: "/128", false: "/32"}[strings.Contains(lit, ":")]
		}
		d.both("INSERT INTO hosts VALUES ($1, $2)", 100+i, netip.MustParsePrefix(prefix))
	}
	d.compare([]string{
		"SELECT id, ip FROM hosts ORDER BY id",
		"SELECT id FROM hosts WHERE ip = '1.2.3.4' ORDER BY id",
		"SELECT id FROM hosts WHERE ip = '1.2.3.4/24' ORDER BY id",
		"SELECT id FROM hosts WHERE ip IN ('::1', '2001:db8::1') ORDER BY id",
		"SELECT id, ip FROM hosts ORDER BY ip, id",
		"SELECT id FROM hosts WHERE ip = $1 ORDER BY id",
	}, []string{
		"SELECT id FROM hosts WHERE ip << '1.2.3.0/24'",
		"SELECT DISTINCT ip FROM hosts ORDER BY ip",
	}, "10.0.0.1")
	// Django's bulk_update with server-side binding: a CASE the proxy
	// computes, its inet parameters in binary.
	for i, ip := range []string{"1.2.3.4/32", "2001::1/128"} {
		d.both("UPDATE hosts SET ip = CASE WHEN (id = $1) THEN $2::inet ELSE ip END WHERE id IN ($1)", pgx.QueryExecModeExec, 100+i, netip.MustParsePrefix(ip))
	}
	d.compare([]string{"SELECT id, ip FROM hosts ORDER BY id"}, nil)
	d.both("INSERT INTO hosts VALUES (200, NULL)")
	// With the parameter declared inet and sent in binary (pgx's exec
	// mode, psycopg's server-side binding).
	q := "SELECT id, coalesce(ip, $1) FROM hosts ORDER BY id"
	arg := netip.MustParsePrefix("10.9.8.7/32")
	got, gerr := rowsText(d.p.connect(t, pgx.QueryExecModeExec), q, arg)
	want, werr := rowsText(d.plain, q, arg)
	if gerr != nil || werr != nil || got != want {
		t.Errorf("%s: through the proxy %v\n%s\nplaintext %v\n%s", q, gerr, got, werr, want)
	}
}

// TestCidrColumns: encrypted cidr columns store and compare as inet
// does, print their mask always, and refuse host bits right of the mask
// as cidr_in does.
func TestCidrColumns(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE nets (id int PRIMARY KEY, n cidr NOT NULL, ip inet)`)
	for i, lit := range []string{"10.0.0.0/8", "10.0.0.0", "192.168.1.0/24", "::/0", "2001:db8::/32", "1.2.3.4", "0.0.0.0/0"} {
		d.both(fmt.Sprintf("INSERT INTO nets VALUES (%d, '%s', '%s')", i, lit, lit), pgx.QueryExecModeSimpleProtocol)
		d.both("INSERT INTO nets VALUES ($1, $2, $3)", 100+i, lit, lit)
	}
	if _, err := d.c.Exec(context.Background(), "INSERT INTO nets VALUES (200, '10.1.0.0/8')"); pgCode(err) != "22P02" {
		t.Errorf("host bits right of the mask: %v, want 22P02", err)
	}
	d.compare([]string{
		"SELECT id, n, ip FROM nets ORDER BY id",
		"SELECT id, n::text FROM nets ORDER BY id",
		"SELECT id FROM nets WHERE n = '10.0.0.0/8' ORDER BY id",
		"SELECT id FROM nets WHERE n = '1.2.3.4' ORDER BY id",
		"SELECT id FROM nets WHERE n IN ('::/0', '2001:db8::/32') ORDER BY id",
		"SELECT id, n FROM nets ORDER BY n, id",
		"SELECT id FROM nets WHERE n = $1 ORDER BY id",
		"SELECT id FROM nets WHERE n = '10.1.0.0/8'",
	}, []string{
		"SELECT id FROM nets WHERE n = ip ORDER BY id",
	}, "192.168.1.0/24")
}

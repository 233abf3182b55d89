package engine_test

import (
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
}

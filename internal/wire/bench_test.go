package wire_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// BenchmarkPointSelect measures one prepared point select (pgbench -S's
// statement) per iteration, directly and through the proxy, on one client
// connection. The difference is the proxy's added latency per query.
func BenchmarkPointSelect(b *testing.B) {
	ctx := context.Background()
	p := startProxy(b, nil)
	setup := p.connectDirect(b)
	if _, err := setup.Exec(ctx, `CREATE TABLE acc (aid int PRIMARY KEY, abalance int, filler char(84));
		INSERT INTO acc SELECT g, 0, '' FROM generate_series(1, 10000) g`); err != nil {
		b.Fatal(err)
	}
	for _, target := range []struct {
		name string
		conn func(testing.TB) *pgx.Conn
	}{{"direct", p.connectDirect}, {"proxy", p.connect}} {
		b.Run(target.name, func(b *testing.B) {
			c := target.conn(b)
			var bal int
			i := 0
			for b.Loop() {
				i++
				if err := c.QueryRow(ctx, "SELECT abalance FROM acc WHERE aid = $1", i%10000+1).Scan(&bal); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

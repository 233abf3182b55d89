package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// BenchmarkOLTPStatements runs sysbench's statements one at a time over
// its table of 10,000 rows, directly on a plaintext table and through the
// proxy on one encrypted by the default policy. With -benchmem the
// difference in allocations is the proxy's (pgx's own are the same).
//
//	go test -run '^$' -bench OLTPStatements -benchmem ./internal/engine
func BenchmarkOLTPStatements(b *testing.B) {
	ctx := context.Background()
	db := newEncDB(b)
	const rows = 10000
	var data strings.Builder
	for i := 1; i <= rows; i++ {
		fmt.Fprintf(&data, "%d\t%d\t%011d-%011d-%011d-%011d-%011d-%011d-%011d-%011d-%011d-%011d\t%011d-%011d-%011d-%011d-%011d\n",
			i, i*7919%rows, i, i*3, i*5, i*7, i*11, i*13, i*17, i*19, i*23, i*29, i*31, i*37, i*41, i*43, i*47)
	}
	const ddl = "CREATE TABLE sbtest1 (id serial PRIMARY KEY, k integer NOT NULL DEFAULT 0, c character(120) NOT NULL DEFAULT '', pad character(60) NOT NULL DEFAULT '')"
	direct := db.direct(b)
	conn := startProxy(b, db, nil).connect(b, pgx.QueryExecModeCacheStatement)
	for _, c := range []*pgx.Conn{direct, conn} {
		if c == direct {
			mustExec(b, c, "CREATE SCHEMA plain")
			mustExec(b, c, strings.Replace(ddl, "sbtest1", "plain.sbtest1", 1))
		} else {
			mustExec(b, c, ddl)
		}
	}
	for _, c := range []struct {
		conn  *pgx.Conn
		table string
	}{{direct, "plain.sbtest1"}, {conn, "sbtest1"}} {
		if _, err := c.conn.PgConn().CopyFrom(ctx, strings.NewReader(data.String()), "COPY "+c.table+" FROM STDIN"); err != nil {
			b.Fatal(err)
		}
	}
	statements := []struct{ name, sql string }{
		{"point-select", "SELECT c FROM %s WHERE id = $1"},
		{"range-100", "SELECT c FROM %s WHERE id BETWEEN $1 AND $1 + 99"},
		{"sum-100", "SELECT SUM(k) FROM %s WHERE id BETWEEN $1 AND $1 + 99"},
		{"order-100", "SELECT c FROM %s WHERE id BETWEEN $1 AND $1 + 99 ORDER BY c"},
		{"distinct-100", "SELECT DISTINCT c FROM %s WHERE id BETWEEN $1 AND $1 + 99 ORDER BY c"},
		{"update-k", "UPDATE %s SET k = k + 1 WHERE id = $1"},
	}
	for _, st := range statements {
		for _, target := range []struct {
			name  string
			conn  *pgx.Conn
			table string
		}{{"direct", direct, "plain.sbtest1"}, {"proxy", conn, "sbtest1"}} {
			b.Run(st.name+"/"+target.name, func(b *testing.B) {
				sql := fmt.Sprintf(st.sql, target.table)
				i := 0
				for b.Loop() {
					i++
					rs, err := target.conn.Query(ctx, sql, int32(i*7%(rows-100)+1))
					if err != nil {
						b.Fatal(err)
					}
					n := 0
					for rs.Next() {
						n++
					}
					if err := rs.Err(); err != nil {
						b.Fatal(err)
					}
					if n == 0 && st.name != "update-k" {
						b.Fatalf("%s returned no rows", st.name)
					}
				}
			})
		}
	}
}

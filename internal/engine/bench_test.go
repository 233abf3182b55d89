package engine_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// loadDDL is the table the load benchmarks fill: an id, two texts, an
// amount and a date, as in a typical fact table.
const loadDDL = "CREATE TABLE load (id bigint, name text, city varchar(40), amount numeric(12,2), day date)"

// loadRow returns row i of the benchmark data.
func loadRow(i int) []any {
	return []any{int64(i), "customer " + strconv.Itoa(i%5000) + " of the benchmark", "city " + strconv.Itoa(i%97),
		strconv.Itoa(i%100000) + "." + strconv.Itoa(10+i%90), time.Date(2020, 1, 1+i%365, 0, 0, 0, 0, time.UTC)}
}

// withoutAdd encrypts every column with every onion except Add (no
// Paillier): DET, OPE and search tokens only.
func withoutAdd(table, column string) rewrite.ColumnPolicy {
	var keep []string
	switch column {
	case "name", "city":
		keep = []string{string(onion.KindEq), string(onion.KindSearch)}
	default:
		keep = []string{string(onion.KindEq), string(onion.KindOrd)}
	}
	return rewrite.ColumnPolicy{Policy: catalog.Encrypted, Capabilities: keep}
}

// BenchmarkLoad measures rows per second into a table: directly into a
// plaintext table, and through the proxy into encrypted tables with and
// without the Paillier (Add) onion; by batched prepared INSERT and by COPY.
//
//	go test -run '^$' -bench Load -benchtime 20000x ./internal/engine
func BenchmarkLoad(b *testing.B) {
	ctx := context.Background()
	db := newEncDB(b)
	targets := []struct {
		name   string
		policy rewrite.PolicyFunc
	}{
		{"direct-plaintext", nil},
		{"proxy-det-ope-search", withoutAdd},
		{"proxy-all-onions", nil},
	}
	for _, tg := range targets {
		var conn *pgx.Conn
		if tg.name == "direct-plaintext" {
			conn = db.direct(b)
		} else {
			conn = startProxy(b, db, tg.policy).connect(b, pgx.QueryExecModeCacheStatement)
		}
		for _, method := range []string{"insert-batch", "copy"} {
			b.Run(tg.name+"/"+method, func(b *testing.B) {
				mustExec(b, conn, "DROP TABLE IF EXISTS load")
				mustExec(b, conn, loadDDL)
				b.ResetTimer()
				switch method {
				case "insert-batch":
					const batchSize = 500
					for start := 0; start < b.N; start += batchSize {
						batch := &pgx.Batch{}
						for i := start; i < min(b.N, start+batchSize); i++ {
							batch.Queue("INSERT INTO load VALUES ($1, $2, $3, $4, $5)", loadRow(i)...)
						}
						if err := conn.SendBatch(ctx, batch).Close(); err != nil {
							b.Fatal(err)
						}
					}
				case "copy":
					// Text format, as psql's \copy and pgbench send it.
					pr, pw := io.Pipe()
					go func() {
						var buf []byte
						for i := 0; i < b.N; i++ {
							r := loadRow(i)
							buf = fmt.Appendf(buf, "%d\t%s\t%s\t%s\t%s\n", r[0], r[1], r[2], r[3], r[4].(time.Time).Format("2006-01-02"))
							if len(buf) > 64<<10 {
								pw.Write(buf)
								buf = buf[:0]
							}
						}
						pw.Write(buf)
						pw.Close()
					}()
					tag, err := conn.PgConn().CopyFrom(ctx, pr, "COPY load FROM STDIN")
					if err != nil {
						b.Fatal(err)
					}
					if int(tag.RowsAffected()) != b.N {
						b.Fatalf("copied %d rows, want %d", tag.RowsAffected(), b.N)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				var n int
				if err := conn.QueryRow(ctx, "SELECT count(*) FROM load").Scan(&n); err != nil || n != b.N {
					b.Fatalf("table holds %d rows, want %d (%v)", n, b.N, err)
				}
			})
		}
	}
}

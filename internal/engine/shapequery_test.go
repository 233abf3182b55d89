package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestShapePlannedOnce: simple-protocol statements that differ only in
// their literals (pgbench's and sysbench's) are planned once per session
// and give what plaintext PostgreSQL gives, reads, read-modify-write
// UPDATEs and INSERTs alike; the literals compared with encrypted
// columns reach the server only encrypted.
func TestShapePlannedOnce(t *testing.T) {
	db := newEncDB(t)
	logAll(t, db.direct(t))
	read := serverLog(t)
	plain, err := pgx.Connect(context.Background(), pgtest.DSNWith(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close(context.Background()) })
	d := &typeDiff{t: t, p: startProxy(t, db, nil), plain: plain}
	c := d.p.connect(t, pgx.QueryExecModeSimpleProtocol)
	d.c = c
	d.both("CREATE TABLE acct (aid int PRIMARY KEY, bid int, abalance int, filler text)")
	for i := 1; i <= 20; i++ {
		sql := fmt.Sprintf("INSERT INTO acct (aid, bid, abalance, filler) VALUES (%d, %d, 0, 'CanaryTextZebra %d')", i, i%3, i)
		mustExec(t, c, sql)
		mustExec(t, d.plain, sql)
	}
	var (
		before int64
		runs   int
	)
	for i := 1; i <= 20; i++ {
		if i == 4 {
			// The first runs peel onions, and a plan whose planning
			// peeled is not kept.
			before, runs = d.p.eng.PlansReused(), 0
		}
		for _, sql := range []string{
			fmt.Sprintf("UPDATE acct SET abalance = abalance + %d WHERE aid = %d", 7-i, i),
			fmt.Sprintf("UPDATE acct SET abalance = abalance + -%d WHERE aid = %d", i, (i*7)%20+1),
		} {
			mustExec(t, c, sql)
			mustExec(t, d.plain, sql)
			runs++
		}
		for _, q := range []string{
			fmt.Sprintf("SELECT abalance FROM acct WHERE aid = %d", i),
			fmt.Sprintf("SELECT aid, filler FROM acct WHERE aid BETWEEN %d AND %d ORDER BY aid", i, i+3),
			fmt.Sprintf("SELECT count(*), sum(abalance) FROM acct WHERE bid = %d AND filler <> 'CanaryTextZebra %d'", i%3, i),
		} {
			got, gerr := rowsText(c, q)
			want, werr := rowsText(d.plain, q)
			if gerr != nil || werr != nil || got != want {
				t.Fatalf("%s: through the proxy %v\n%s\nplaintext %v\n%s", q, gerr, got, werr, want)
			}
			runs++
		}
	}
	// Once the onions are peeled, every execution reuses its shape's plan.
	if reused := d.p.eng.PlansReused() - before; reused < int64(runs) {
		t.Fatalf("%d of %d statements reused their shape's plan", reused, runs)
	}
	checkNoCanary(t, "the server log", read())
}

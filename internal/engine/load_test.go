package engine_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// TestPgbenchManyClients runs pgbench's TPC-B-like transactions with 100
// clients through the proxy, over encrypted tables (balances incremented
// on the server over their Add onion), in each protocol, against a server
// whose max_connections is 110: the proxy's own connections (catalog,
// peels, increment marks) come from a small bounded set, so no client is
// refused a connection or aborted.
func TestPgbenchManyClients(t *testing.T) {
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		t.Fatal("pgbench is not installed:", err)
	}
	ctx := context.Background()
	db, _ := newClusterDB(t, map[string]string{"max_connections": "110"})
	// Every column encrypted but the history's time stamp, which pgbench
	// writes as CURRENT_TIMESTAMP (the server's clock), as in
	// bench/pgbench.sh.
	p := startProxy(t, db, func(table, column string) rewrite.ColumnPolicy {
		if column == "mtime" {
			return rewrite.ColumnPolicy{Policy: catalog.Plain}
		}
		return rewrite.ColumnPolicy{Policy: catalog.Encrypted}
	})

	// pgbench's tables, created through the proxy with every column
	// encrypted; a small load (scale 1 would take minutes of Paillier
	// encryptions): the updates of absent accounts match no row.
	if out, err := exec.Command(pgbench, "-i", "-I", "dt", p.url).CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i -I dt: %v\n%s", err, out)
	}
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	mustExec(t, c, "INSERT INTO pgbench_branches (bid, bbalance) VALUES (1, 0)")
	var vals []string
	for i := 1; i <= 10; i++ {
		vals = append(vals, fmt.Sprintf("(%d, 1, 0)", i))
	}
	mustExec(t, c, "INSERT INTO pgbench_tellers (tid, bid, tbalance) VALUES "+strings.Join(vals, ", "))
	vals = vals[:0]
	for i := 1; i <= 1000; i++ {
		vals = append(vals, fmt.Sprintf("(%d, 1, 0, '')", i))
	}
	mustExec(t, c, "INSERT INTO pgbench_accounts (aid, bid, abalance, filler) VALUES "+strings.Join(vals, ", "))
	if out, err := exec.Command(pgbench, "-i", "-I", "p", p.url).CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i -I p: %v\n%s", err, out)
	}
	for _, mode := range []string{"simple", "extended", "prepared"} {
		out, err := exec.Command(pgbench, "-n", "-c", "100", "-j", "2", "-t", "5", "-M", mode, p.url).CombinedOutput()
		if err != nil || strings.Contains(string(out), "aborted") || !strings.Contains(string(out), "number of failed transactions: 0") {
			t.Fatalf("pgbench -c 100 -M %s: %v\n%s", mode, err, out)
		}
	}
	// The invariant of TPC-B: the tellers' and the branch's balances both
	// add up to the sum of the history's deltas.
	var branch, tellers, history int64
	if err := c.QueryRow(ctx, "SELECT (SELECT sum(bbalance) FROM pgbench_branches), (SELECT sum(tbalance) FROM pgbench_tellers), (SELECT sum(delta) FROM pgbench_history)").Scan(&branch, &tellers, &history); err != nil {
		t.Fatal(err)
	}
	if branch != history || tellers != history {
		t.Fatalf("balances: branches %d, tellers %d, history %d", branch, tellers, history)
	}
}

package wire_test

import (
	"context"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// TestPgbench initialises pgbench's tables through the proxy (COPY) and
// runs its TPC-B-like script in each query mode: no transaction may fail.
func TestPgbench(t *testing.T) {
	p := startProxy(t, nil)
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, pgBin(t, "pgbench"), args...)
		cmd.Env = p.pgEnv(false)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pgbench %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("-i", "-s", "1", "-q")
	failed := regexp.MustCompile(`number of failed transactions: 0 \(`)
	processed := regexp.MustCompile(`number of transactions actually processed: 800/800`)
	for _, mode := range []string{"simple", "extended", "prepared"} {
		out := run("-M", mode, "-c", "4", "-j", "2", "-t", "200", "-n")
		if !failed.MatchString(out) || !processed.MatchString(out) {
			t.Fatalf("-M %s:\n%s", mode, out)
		}
	}
	var n int
	if err := p.connectDirect(t).QueryRow(context.Background(), "SELECT count(*) FROM pgbench_history").Scan(&n); err != nil || n != 2400 {
		t.Fatalf("pgbench_history has %d rows (%v), want 2400", n, err)
	}
}

// Command tpch measures the proxy on a workload derived from TPC-H: it
// generates the data at a scale factor (DuckDB's dbgen, gen.py), creates
// the schema twice on a throwaway PostgreSQL (plaintext, and through the
// proxy with the column policy of schema.go), loads both with COPY, runs
// the 22 queries directly and through the proxy, compares the results and
// writes a Markdown report with a chart of the per-query time ratios.
//
// The data, the queries and the results are derived from TPC-H; they are
// not TPC-H results and are not comparable with published ones.
//
// Usage (from the repository root; bench/tpch-report and bench/tpch-smoke
// set up Python and call it):
//
//	go run ./bench/tpch -sf 0.1 -python PATH -out DIR
//
// The last line printed is "TPC-H: N/22 queries match plaintext".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tpch:", err)
		os.Exit(1)
	}
}

type options struct {
	sf      float64
	data    string
	python  string
	out     string
	runs    int
	minTime time.Duration
	timeout time.Duration
	keep    bool
	strict  bool
	hold    bool
	queries string
	train   bool
	buffers string
}

func run() error {
	var o options
	flag.Float64Var(&o.sf, "sf", 0.01, "TPC-H scale `factor` of the generated data")
	flag.StringVar(&o.data, "data", "", "`directory` of data generated earlier by gen.py (default: generate into a scratch directory)")
	flag.StringVar(&o.python, "python", "python3", "Python `interpreter` with duckdb and duckdb-extension-tpch 1.5.5")
	flag.StringVar(&o.out, "out", "tpch-report", "`directory` for the report (report.md, ratios.png)")
	flag.IntVar(&o.runs, "runs", 3, "least timed runs per query and target (the median is reported)")
	flag.DurationVar(&o.minTime, "min-time", 2*time.Second, "more timed runs of a query (up to 25) while its runs on both targets have taken less than this `duration` in all")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "time limit of one query run")
	flag.BoolVar(&o.keep, "keep", false, "keep the scratch directory (data, keys, proxy log)")
	flag.BoolVar(&o.strict, "fail-on-mismatch", false, "exit with status 1 when a query returns different rows through the proxy (after the report)")
	flag.BoolVar(&o.hold, "hold", false, "after loading, print the connection strings and keep the databases and the proxy up until interrupted (for working on queries); no queries are run")
	flag.BoolVar(&o.train, "train", true, "settle the onion layers before loading: run the queries once through the proxy on the empty tables, so their peels cost nothing and never rewrite a loaded table (CryptDB's training mode); with -train=false the first runs peel the loaded tables")
	flag.StringVar(&o.queries, "queries", "", "comma-separated query `numbers` to run (default: all 22)")
	flag.StringVar(&o.buffers, "shared-buffers", "auto", "shared_buffers of the throwaway PostgreSQL `size` (auto: a quarter of the machine's memory, between 512MB and 8GB)")
	flag.Parse()
	if o.sf <= 0 || o.runs < 1 || o.timeout <= 0 {
		return errors.New("-sf, -runs and -timeout must be positive")
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "proxy")); err != nil {
		return errors.New("run it from the repository root (go run ./bench/tpch)")
	}
	work, err := os.MkdirTemp("", "pgonion-tpch-")
	if err != nil {
		return err
	}
	if err := os.Chmod(work, 0o755); err != nil {
		return err
	}
	if o.keep {
		defer fmt.Fprintln(os.Stderr, "kept", work)
	} else {
		defer os.RemoveAll(work)
	}
	ctx := context.Background()
	progress := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	start := time.Now()

	if o.data == "" {
		o.data = filepath.Join(work, "data")
		progress("generating data derived from TPC-H at scale factor %g...", o.sf)
		gen := exec.CommandContext(ctx, o.python, filepath.Join(root, "bench", "tpch", "gen.py"), "--sf", fmt.Sprint(o.sf), "--out", o.data)
		gen.Stdout, gen.Stderr = os.Stderr, os.Stderr
		if err := gen.Run(); err != nil {
			return fmt.Errorf("generating the data (gen.py with %s): %w", o.python, err)
		}
	}
	settings := serverSettings(o.buffers)
	e, err := startEnv(ctx, root, work, settings, os.Stderr)
	if err != nil {
		return err
	}
	defer e.stop()
	which, err := parseQueryList(o.queries)
	if err != nil {
		return err
	}
	var train []int
	if o.train {
		train = which
	}
	loads, trainPeels, err := e.load(ctx, o.data, train, o.timeout, os.Stderr)
	if err != nil {
		return err
	}
	if o.hold {
		return e.hold(o.data)
	}
	sizes, err := tableSizes(ctx, e)
	if err != nil {
		return err
	}
	progress("running %d queries (at least %d timed runs each, more until %v)...", len(which), o.runs, o.minTime)
	before, err := e.peelsLogged()
	if err != nil {
		return err
	}
	results, err := e.runQueries(ctx, o.data, which, timing{Min: o.runs, MinTime: o.minTime}, o.timeout, progress)
	if err != nil {
		return err
	}
	after, err := e.peelsLogged()
	if err != nil {
		return err
	}
	rep := report{SF: o.sf, Runs: o.runs, MinTime: o.minTime, Loads: loads, Queries: results, Took: time.Since(start),
		Trained: o.train, TrainPeels: trainPeels, LatePeels: after - before, Settings: settings, Sizes: sizes}
	if err := rep.write(ctx, o.out, e); err != nil {
		return err
	}
	progress("report: %s", filepath.Join(o.out, "report.md"))
	if len(which) == 22 {
		fmt.Printf("TPC-H: %d/22 queries match plaintext\n", rep.matches())
	} else {
		fmt.Printf("TPC-H: %d/%d selected queries match plaintext\n", rep.matches(), len(which))
	}
	if n := rep.count(statusMismatch); o.strict && n > 0 {
		os.Exit(1)
	}
	return nil
}

// parseQueryList reads -queries: "" is all 22.
func parseQueryList(s string) ([]int, error) {
	if s == "" {
		out := make([]int, 22)
		for i := range out {
			out[i] = i + 1
		}
		return out, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(f), "Q"))
		if err != nil || n < 1 || n > 22 {
			return nil, fmt.Errorf("-queries: %q is not a query number between 1 and 22", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// hold prints how to reach the loaded databases and waits for an
// interrupt.
func (e *env) hold(dataDir string) error {
	fmt.Printf("plaintext database:  psql %q\n", e.plainDSN)
	fmt.Printf("encrypted, directly: psql %q\n", e.encDSN)
	fmt.Printf("through the proxy:   psql %q\n", e.proxyDSN)
	fmt.Printf("proxy (pid %d, log %s): %s\n", e.proxy.Process.Pid, e.proxyLog, strings.Join(e.proxyArgs, " "))
	fmt.Printf("queries: %s\n", filepath.Join(dataDir, "queries"))
	fmt.Println("holding; interrupt (Ctrl-C) to stop and delete everything")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	return nil
}

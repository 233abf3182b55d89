package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/bench/tpch/chart"
)

// report is everything one run measured.
type report struct {
	SF      float64
	Runs    int           // least timed runs per query
	MinTime time.Duration // more runs until both targets took this long
	Loads   []loadResult
	Queries []queryResult
	Took    time.Duration

	Trained    bool // onion layers settled on the empty tables (-train)
	TrainPeels int  // onions peeled then
	LatePeels  int  // onions peeled by the measured queries on loaded tables

	Settings map[string]string // of the PostgreSQL server (serverSettings)
	Sizes    []tableSize       // after the load (tableSizes)
}

// tableSize is the size of one table (with its TOAST data, without
// indexes) in both databases.
type tableSize struct {
	Table            string
	Plain, Encrypted int64 // bytes
}

// tableSizes measures the tables of both databases.
func tableSizes(ctx context.Context, e *env) ([]tableSize, error) {
	size := func(dsn string) (map[string]int64, error) {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		out := map[string]int64{}
		for _, t := range tables {
			var n int64
			if err := conn.QueryRow(ctx, "SELECT pg_table_size(to_regclass($1))", t).Scan(&n); err != nil {
				return nil, fmt.Errorf("size of %s: %w", t, err)
			}
			out[t] = n
		}
		return out, nil
	}
	plain, err := size(e.plainDSN)
	if err != nil {
		return nil, err
	}
	enc, err := size(e.encDSN)
	if err != nil {
		return nil, err
	}
	var out []tableSize
	for _, t := range tables {
		out = append(out, tableSize{Table: t, Plain: plain[t], Encrypted: enc[t]})
	}
	return out, nil
}

func (r *report) matches() int { return r.count(statusMatch) }

// count is the number of queries with the status.
func (r *report) count(status string) int {
	n := 0
	for _, q := range r.Queries {
		if q.Status == status {
			n++
		}
	}
	return n
}

// write writes DIR/report.md and DIR/ratios.png.
func (r *report) write(ctx context.Context, dir string, e *env) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	png, err := os.Create(filepath.Join(dir, "ratios.png"))
	if err != nil {
		return err
	}
	var bars []chart.Bar
	for _, q := range r.Queries {
		bars = append(bars, chart.Bar{Label: fmt.Sprintf("Q%d", q.Nr), Ratio: q.Ratio(), Status: q.Status})
	}
	title := fmt.Sprintf("Derived from TPC-H, SF %g: proxied vs direct query time", r.SF)
	if err := chart.WriteRatioChart(png, title, bars); err != nil {
		png.Close()
		return err
	}
	if err := png.Close(); err != nil {
		return err
	}
	var b strings.Builder
	r.markdown(&b, serverVersion(ctx, e.plainDSN))
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644)
}

func (r *report) markdown(b *strings.Builder, pgVersion string) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
	p("# pgonion on a workload derived from TPC-H (SF %g)", r.SF)
	p("")
	p("The data (DuckDB's dbgen) and the 22 queries (standard substitution parameters) are derived from TPC-H; these are not TPC-H results and are not comparable with published ones.")
	p("")
	p("Machine: %d cores, %s memory, %s/%s, Go %s, PostgreSQL %s. Generated %s in %s by `go run ./bench/tpch -sf %g -runs %d -min-time %v` (what `bench/tpch-report` and `bench/tpch-smoke` run).",
		runtime.NumCPU(), memory(), runtime.GOOS, runtime.GOARCH, strings.TrimPrefix(runtime.Version(), "go"), pgVersion,
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), r.Took.Round(time.Second), r.SF, r.Runs, r.MinTime)
	p("")
	p("Both databases live on one throwaway PostgreSQL server (fsync off) with shared_buffers=%s and work_mem=%s (`-shared-buffers`). Note that a sequential scan of a table larger than a quarter of shared_buffers reads through a 256 kB ring instead of the buffer cache: a table that the encryption makes larger than that bound is read from the operating system's cache on every scan while its plaintext copy may stay in PostgreSQL's.", r.Settings["shared_buffers"], r.Settings["work_mem"])
	p("")
	var ratios []float64
	for _, q := range r.Queries {
		if q.Status == statusMatch {
			ratios = append(ratios, q.Ratio())
		}
	}
	p("## Summary")
	p("")
	p("- **%d/22 queries match plaintext** through the proxy over encrypted tables.", r.matches())
	if len(ratios) > 0 {
		slices.Sort(ratios)
		p("- Proxied/direct time of the matching queries: median %.2fx, min %.2fx, max %.2fx (each the median of its timed runs).", medianF(ratios), ratios[0], ratios[len(ratios)-1])
	}
	counts := map[string]int{}
	for _, q := range r.Queries {
		counts[q.Status]++
	}
	p("- Refused: %d, wrong results: %d, errors: %d.", counts[statusRefused], counts[statusMismatch], counts[statusError])
	p("")
	p("![proxied/direct time per query](ratios.png)")
	p("")
	p("## Queries")
	p("")
	p("Times are client-observed (simple protocol, results read as text), medians of the timed runs (\"runs\": at least %d, more, up to %d, while a query's runs on both targets have taken less than %v in all), alternating direct and proxied after one untimed run each; \"first\" is that first run through the proxy, which peels any onion the query needs that is not peeled yet.", r.Runs, maxRuns, r.MinTime)
	p("")
	if r.Trained {
		p("Onion layers were settled before loading (CryptDB's training mode, `-train`): the queries ran once through the proxy on the empty encrypted tables, which peeled %d onions at no cost; the rows were then written at those layers. The server knows what it would know had the peels happened on the loaded tables. Onions peeled on the loaded tables by the measured runs: %d.", r.TrainPeels, r.LatePeels)
	} else {
		p("Onion layers were not settled before loading (`-train=false`): the first runs peeled %d onions on the loaded tables; each peel rewrites every row of its table, which stays twice as large (dead rows) until VACUUM FULL, and the timed runs pay for the larger scans.", r.LatePeels)
	}
	p("")
	p("| query | result | direct ms | proxied ms | ratio | runs | first proxied ms | rows | what is missing / message |")
	p("|---|---|---:|---:|---:|---:|---:|---:|---|")
	for _, q := range r.Queries {
		d, pr, ratio, runs, first := "", "", "", "", ""
		if q.Status == statusMatch {
			d, pr, ratio = fmt.Sprintf("%.1f", ms(q.Direct)), fmt.Sprintf("%.1f", ms(q.Proxied)), fmt.Sprintf("%.2fx", q.Ratio())
			runs, first = fmt.Sprint(q.Runs), fmt.Sprintf("%.1f", ms(q.First))
		}
		note := ""
		if q.Status != statusMatch {
			note = fmt.Sprintf("`%s`", strings.ReplaceAll(q.Detail, "|", `\|`))
			if n := queryNotes[q.Nr]; n != "" {
				note = n + " (" + note + ")"
			}
		}
		p("| Q%d | %s | %s | %s | %s | %s | %s | %d | %s |", q.Nr, q.Status, d, pr, ratio, runs, first, q.Rows, note)
	}
	p("")
	p("## Load")
	p("")
	p("COPY ... FROM STDIN (csv) of each table, directly into the plaintext database and through the proxy into the encrypted one (times below). Then, on both and not timed: the same indexes (`%s`; through the proxy they index the Eq onions), every table but region and nation clustered on its key's index (`%s`: on the encrypted database this restores the correlation between key order and row order that the planner prices index scans by), and VACUUM ANALYZE.", strings.Join(indexDDL, "`, `"), strings.Join(clusterDDL, "`, `"))
	p("")
	p("| table | rows | direct s | direct rows/s | proxied s | proxied rows/s | ratio |")
	p("|---|---:|---:|---:|---:|---:|---:|")
	var rows int64
	var dt, pt time.Duration
	for _, l := range r.Loads {
		if l.ProxyErr != "" {
			p("| %s | %d | %.2f | %.0f | failed: %s | | |", l.Table, l.Rows, l.Direct.Seconds(), rate(l.Rows, l.Direct), l.ProxyErr)
			continue
		}
		rows, dt, pt = rows+l.Rows, dt+l.Direct, pt+l.Proxied
		p("| %s | %d | %.2f | %.0f | %.2f | %.0f | %.1fx |", l.Table, l.Rows, l.Direct.Seconds(), rate(l.Rows, l.Direct), l.Proxied.Seconds(), rate(l.Rows, l.Proxied), l.Proxied.Seconds()/l.Direct.Seconds())
	}
	p("| all | %d | %.2f | %.0f | %.2f | %.0f | %.1fx |", rows, dt.Seconds(), rate(rows, dt), pt.Seconds(), rate(rows, pt), pt.Seconds()/dt.Seconds())
	p("")
	if len(r.Sizes) > 0 {
		p("## Storage")
		p("")
		p("Size of each table after the load (`pg_table_size`: heap and TOAST, no indexes).")
		p("")
		p("| table | plaintext MB | encrypted MB | ratio |")
		p("|---|---:|---:|---:|")
		var pl, en int64
		for _, z := range r.Sizes {
			pl, en = pl+z.Plain, en+z.Encrypted
			p("| %s | %.1f | %.1f | %.2fx |", z.Table, float64(z.Plain)/(1<<20), float64(z.Encrypted)/(1<<20), float64(z.Encrypted)/float64(max(z.Plain, 1)))
		}
		p("| all | %.1f | %.1f | %.2fx |", float64(pl)/(1<<20), float64(en)/(1<<20), float64(en)/float64(max(pl, 1)))
		p("")
	}
	p("## Column policy")
	p("")
	p("Every column is encrypted (none plain, none sensitive), declared with `proxy columns set` before the tables are created through the proxy. Join groups share DET and OPE keys, so their columns compare with each other on the server. See `columnPolicy` in `bench/tpch/schema.go` for the reasons.")
	p("")
	p("| table | column | type | capabilities | join group |")
	p("|---|---|---|---|---|")
	for _, t := range tables {
		for _, c := range columns(t) {
			caps, group := columnPolicy(t, c[0])
			if group == "" {
				group = "-"
			}
			p("| %s | %s | %s | %s | %s |", t, c[0], c[1], caps, group)
		}
	}
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func medianF(x []float64) float64 {
	if len(x)%2 == 1 {
		return x[len(x)/2]
	}
	return (x[len(x)/2-1] + x[len(x)/2]) / 2
}

// memory is the machine's memory from /proc/meminfo ("?" elsewhere).
func memory() string {
	kb := memTotalKB()
	if kb == 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
}

// memTotalKB is MemTotal from /proc/meminfo in kB, or 0 where it cannot
// be read.
func memTotalKB() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var kb int64
	if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err != nil {
		return 0
	}
	return kb
}

func serverVersion(ctx context.Context, dsn string) string {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "?"
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "?"
	}
	return v
}

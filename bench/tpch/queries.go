package main

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Query outcomes.
const (
	statusMatch    = "match"    // same rows as directly (numbers within 0.01)
	statusMismatch = "mismatch" // different rows
	statusRefused  = "refused"  // the proxy refused it (0A000)
	statusError    = "error"    // another error (or a timeout)
)

// queryResult is the outcome of one query.
type queryResult struct {
	Nr      int
	Status  string
	Detail  string        // refusal or error message, or what differed
	Direct  time.Duration // median of the timed runs
	Proxied time.Duration // median of the timed runs through the proxy
	First   time.Duration // the first run through the proxy (peels onions)
	Rows    int
	Runs    int // timed runs per target
}

// timing is how many timed runs each query gets: at least Min pairs
// (direct, proxied), more while both targets together have taken less
// than MinTime, up to maxRuns. Fast queries, the noisiest, so get more
// runs; slow ones are not repeated needlessly.
type timing struct {
	Min     int
	MinTime time.Duration
}

// maxRuns bounds the timed runs of one query.
const maxRuns = 25

// more reports whether another pair of runs is due after n pairs that
// took spent in all.
func (t timing) more(n int, spent time.Duration) bool {
	return n < t.Min || (n < maxRuns && spent < t.MinTime)
}

// Ratio is proxied over direct time (0 when not measured).
func (r queryResult) Ratio() float64 {
	if r.Status != statusMatch || r.Direct <= 0 {
		return 0
	}
	return r.Proxied.Seconds() / r.Direct.Seconds()
}

// runQueries runs the queries numbered which on both databases: once each to warm
// up (the proxy's first run peels the onions the query needs), then runs
// timed runs alternating direct and proxied, comparing the results.
func (e *env) runQueries(ctx context.Context, dataDir string, which []int, runs timing, timeout time.Duration, progress func(string, ...any)) ([]queryResult, error) {
	direct, err := pgx.Connect(ctx, e.plainDSN)
	if err != nil {
		return nil, err
	}
	defer direct.Close(ctx)
	var out []queryResult
	for _, nr := range which {
		b, err := os.ReadFile(filepath.Join(dataDir, "queries", fmt.Sprintf("q%02d.sql", nr)))
		if err != nil {
			return nil, err
		}
		sql := string(b)
		r := queryResult{Nr: nr}
		want, _, err := timed(ctx, direct, sql, timeout)
		if err != nil {
			return nil, fmt.Errorf("Q%d fails directly on plaintext: %w", nr, err)
		}
		r.Rows = len(want)
		// A fresh connection per query: a failed query leaves nothing
		// behind for the next.
		proxied, err := pgx.Connect(ctx, e.proxyDSN)
		if err != nil {
			return nil, err
		}
		got, first, err := timed(ctx, proxied, sql, timeout)
		r.First = first
		switch {
		case err != nil:
			r.Status, r.Detail = classify(err)
		default:
			r.Status, r.Detail = compareRows(want, got, strings.Contains(strings.ToUpper(sql), "ORDER BY"))
		}
		if r.Status == statusMatch {
			var ds, ps []time.Duration
			var spent time.Duration
			for runs.more(len(ds), spent) {
				_, d, err := timed(ctx, direct, sql, timeout)
				if err != nil {
					return nil, err
				}
				_, p, err := timed(ctx, proxied, sql, timeout)
				if err != nil {
					r.Status, r.Detail = classify(err)
					break
				}
				ds, ps = append(ds, d), append(ps, p)
				spent += d + p
			}
			if r.Status == statusMatch {
				r.Direct, r.Proxied, r.Runs = median(ds), median(ps), len(ds)
			}
		}
		proxied.Close(ctx)
		msg := r.Status
		if r.Status == statusMatch {
			msg = fmt.Sprintf("match, %.1f ms direct, %.1f ms proxied (%.2fx, %d runs)", ms(r.Direct), ms(r.Proxied), r.Ratio(), r.Runs)
		} else if r.Detail != "" {
			msg += ": " + r.Detail
		}
		progress("Q%d: %s", nr, msg)
		out = append(out, r)
	}
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// timed runs sql (simple protocol) and returns its rows as text.
func timed(ctx context.Context, conn *pgx.Conn, sql string, timeout time.Duration) ([][]*string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, 0, err
	}
	var out [][]*string
	for rows.Next() {
		raw := rows.RawValues()
		row := make([]*string, len(raw))
		for i, v := range raw {
			if v != nil {
				s := string(v)
				row[i] = &s
			}
		}
		out = append(out, row)
	}
	rows.Close()
	d := time.Since(start)
	if err := rows.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, d, fmt.Errorf("timed out after %s: %w", timeout, err)
		}
		return nil, d, err
	}
	return out, d, nil
}

// classify turns a proxy error into a status and message.
func classify(err error) (string, string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if pe.Code == "0A000" {
			return statusRefused, pe.Message
		}
		return statusError, pe.Code + ": " + pe.Message
	}
	return statusError, err.Error()
}

// compareRows compares the proxy's rows with the direct ones: in order
// when the query sorts, as multisets otherwise. Numbers may differ by at
// most 0.01 (the TPC-H answer checks' tolerance for money and averages);
// everything else must be identical.
func compareRows(want, got [][]*string, ordered bool) (string, string) {
	if len(want) != len(got) {
		return statusMismatch, fmt.Sprintf("%d rows, want %d", len(got), len(want))
	}
	if !ordered {
		want, got = sortedRows(want), sortedRows(got)
	}
	for i := range want {
		if len(want[i]) != len(got[i]) {
			return statusMismatch, fmt.Sprintf("row %d has %d columns, want %d", i+1, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			if !sameValue(want[i][j], got[i][j]) {
				detail := fmt.Sprintf("row %d column %d: %s, want %s", i+1, j+1, show(got[i][j]), show(want[i][j]))
				if ordered && slices.EqualFunc(sortedRows(want), sortedRows(got), sameRow) {
					detail = "the same rows in another order; first difference at " + detail
				}
				return statusMismatch, detail
			}
		}
	}
	return statusMatch, ""
}

func sameRow(a, b []*string) bool { return slices.EqualFunc(a, b, sameValue) }

func sameValue(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if *a == *b {
		return true
	}
	x, okx := new(big.Rat).SetString(*a)
	y, oky := new(big.Rat).SetString(*b)
	if !okx || !oky {
		return false
	}
	d := new(big.Rat).Sub(x, y)
	return d.Abs(d).Cmp(big.NewRat(1, 100)) <= 0
}

func show(s *string) string {
	if s == nil {
		return "NULL"
	}
	return fmt.Sprintf("%q", *s)
}

func sortedRows(rows [][]*string) [][]*string {
	key := func(r []*string) string {
		var b strings.Builder
		for _, v := range r {
			b.WriteString(show(v))
			b.WriteByte(0)
		}
		return b.String()
	}
	out := slices.Clone(rows)
	slices.SortFunc(out, func(a, b []*string) int { return strings.Compare(key(a), key(b)) })
	return out
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

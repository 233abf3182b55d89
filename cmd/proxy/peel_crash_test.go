package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestPeelCrash kills `proxy serve` with SIGKILL while it peels an onion
// (the one UPDATE over the whole table that strips the RND layer, see
// internal/engine/peel.go), at a random moment between sending the query
// and the typical time of its answer, and checks after each kill that the
// peel was all or nothing:
//
//   - on the server (no proxy running, once the dead proxy's backends are
//     gone): the catalog records the onion either at RND or at its inner
//     layer, no other onion changed, and the cells agree with it (as many
//     distinct cells as rows at RND, as many as distinct values once
//     peeled);
//   - through a restarted proxy: every row decrypts to what was loaded,
//     and the query runs, peeling only if the kill left the onion at RND,
//     and answers as the plaintext does.
//
// Each iteration uses an onion still at RND; when a table has none left, a
// new one is loaded. PGONION_PEEL_KILLS sets the number of kills (default
// 20; bench/peel-soak.sh runs 100), PGONION_PEEL_ROWS the rows per table
// (default 30000), PGONION_PEEL_SEED the random seed.
func TestPeelCrash(t *testing.T) {
	kills := crashEnvInt(t, "PGONION_PEEL_KILLS", 20)
	nrows := crashEnvInt(t, "PGONION_PEEL_ROWS", 30000)
	seed := crashSeed(t, "PGONION_PEEL_SEED")
	t.Logf("%d kills, %d rows per table, PGONION_PEEL_SEED=%d", kills, nrows, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	began := time.Now()

	r := &crashRig{t: t, ctx: context.Background(), dsn: pgtest.DSN(t), dir: t.TempDir(), rows: nrows, rng: rng}
	r.db = strings.SplitN(r.dsn[strings.LastIndex(r.dsn, "/")+1:], "?", 2)[0]
	r.direct = r.connectDirect()
	r.poller = r.connectDirect()
	if out, err := r.cmd("keys", "init"); err != nil {
		t.Fatalf("keys init: %v\n%s", err, out)
	}
	r.start()
	r.newTable()

	// Calibration: two peels run to their end, to time the query (the
	// first also creates pgcrypto).
	for i := 0; i < 2; i++ {
		o := r.next()
		took, err := r.check(o, r.query(o))
		if err != nil {
			t.Fatal(err)
		}
		r.peelTimes = append(r.peelTimes, took)
		t.Logf("calibration: the query with the peel of %s took %v", o, took.Round(time.Millisecond))
	}
	t.Logf("the proxy logged: %s", r.peelLog())

	stats := map[string]int{}
	var stepTimes []time.Duration
	for i := 0; i < kills; i++ {
		stepStart := time.Now()
		o := r.next()
		// Up to a little more than the median time of the queries that
		// peeled (those after the kills that left the onion at RND too).
		typical := crashMedian(r.peelTimes)
		delay := time.Duration(rng.Int64N(int64(typical) * 5 / 4))
		outcome, err := r.killDuring(o, delay)
		if err != nil {
			t.Fatalf("kill %d (%s, after %v): %v\nproxy output:\n%s", i+1, o, delay.Round(time.Millisecond), err, r.lastOutput)
		}
		stats[outcome]++
		stepTimes = append(stepTimes, time.Since(stepStart))
		t.Logf("kill %d: %s after %v: %s", i+1, o, delay.Round(time.Millisecond), outcome)
	}
	// Every peeled onion still answers its query.
	for col, kinds := range r.layers {
		for kind, layer := range kinds {
			if layer != "rnd" {
				o := crashOnion{table: r.table, col: col, kind: kind}
				if _, err := r.check(o, r.query(o)); err != nil {
					t.Fatalf("final check of %s: %v", o, err)
				}
			}
		}
	}
	r.stop()

	t.Logf("queries that peeled took %v (median of %d)", crashMedian(r.peelTimes).Round(time.Millisecond), len(r.peelTimes))
	mid := stats[outcomeSetup] + stats[outcomeUpdate] + stats[outcomeCatalog] + stats[outcomeCommitted]
	slices.Sort(stepTimes)
	t.Logf("peel crash: %d kills in %v (%d tables of %d rows): %d before the peel's transaction, %d mid-peel (%d before its UPDATE, %d during the UPDATE, %d during the catalog update or commit, %d committed but unanswered), %d after the answer; median iteration %v",
		kills, time.Since(began).Round(time.Second), r.tables, nrows, stats[outcomeBefore], mid, stats[outcomeSetup], stats[outcomeUpdate], stats[outcomeCatalog], stats[outcomeCommitted], stats[outcomeAnswered],
		stepTimes[len(stepTimes)/2].Round(time.Millisecond))
	if kills >= 20 && stats[outcomeUpdate] == 0 {
		t.Errorf("no kill landed during the peel's UPDATE: the test does not test what it should (median query time %v)", crashMedian(r.peelTimes))
	}
}

// Where a kill landed.
const (
	outcomeBefore    = "before the peel's transaction (onion still at RND)"
	outcomeSetup     = "mid-peel: in the peel's transaction, before its UPDATE"
	outcomeUpdate    = "mid-peel: during the UPDATE of the cells"
	outcomeCatalog   = "mid-peel: after the UPDATE, during the catalog update or commit"
	outcomeCommitted = "mid-peel: committed, the client had no answer yet"
	outcomeAnswered  = "after the client's answer"
)

func crashMedian(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// crashSeed is the random seed of a crash test: $name, else the time.
func crashSeed(t *testing.T, name string) uint64 {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return uint64(time.Now().UnixNano())
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// runKilled runs the proxy binary with args in dir, killing it with
// SIGKILL after delay (0: never). It reports whether the command
// finished, and its output; a run that fails is an error, but for one
// refused because a killed run's backend still held the table's rewrite
// lock (not finished, no error).
func runKilled(dir string, args []string, delay time.Duration) (bool, string, error) {
	c := exec.Command(binary, args...)
	c.Dir = dir
	var out strings.Builder
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		return false, "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	var timer <-chan time.Time
	if delay > 0 {
		timer = time.After(delay)
	}
	select {
	case err := <-exited:
		if err != nil && strings.Contains(out.String(), "another rewrite") {
			return false, out.String(), nil
		}
		if err != nil {
			return false, out.String(), fmt.Errorf("%s: %v\n%s", args[0], err, out.String())
		}
		return true, out.String(), nil
	case <-timer:
		_ = c.Process.Kill()
		<-exited
		return false, out.String(), nil
	}
}

func crashEnvInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

// crashOnion is an onion of a column of a crash test table.
type crashOnion struct {
	table, col, kind string
}

func (o crashOnion) String() string { return o.table + "." + o.col + " " + o.kind }

// inner is the layer the onion is peeled to.
func (o crashOnion) inner() string {
	if o.kind == "ord" {
		return "ope"
	}
	return "det"
}

// cell is the server column holding the onion.
func (o crashOnion) cell() string { return o.col + "__" + o.kind }

// crashQuery is a query needing an onion peeled, with its expected answer.
type crashQuery struct {
	sql    string
	args   []any
	simple bool
	want   []int
}

// crashRig holds the state of TestPeelCrash: the proxy, the current table
// with its plaintext and the layers the catalog should record.
type crashRig struct {
	t      *testing.T
	ctx    context.Context
	dsn    string
	db     string
	dir    string
	rows   int
	rng    *rand.Rand
	direct *pgx.Conn

	poller     *pgx.Conn       // watches the peel's progress during a query
	peelTimes  []time.Duration // of queries that peeled, without a kill
	proxy      *proc
	client     *pgx.Conn
	lastOutput string

	tables int
	table  string
	texts  map[string][]string    // text column -> value of each row (id = index)
	dates  map[string][]time.Time // date column -> value of each row
	layers map[string]map[string]string
	todo   []crashOnion // onions still at RND, in random order
}

// checkApp is the application_name of the test's own connections to the
// server, which backends() leaves out.
const checkApp = "peel-crash-check"

func (r *crashRig) connectDirect() *pgx.Conn {
	r.t.Helper()
	cfg, err := pgx.ParseConfig(r.dsn)
	if err != nil {
		r.t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = checkApp
	c, err := pgx.ConnectConfig(r.ctx, cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func (r *crashRig) cmd(args ...string) (string, error) {
	c := exec.Command(binary, args...)
	c.Dir = r.dir
	out, err := c.CombinedOutput()
	return string(out), err
}

// start starts a proxy and connects a client to it.
func (r *crashRig) start() {
	r.t.Helper()
	addr := freeAddr(r.t)
	r.proxy = startedIn(r.t, r.dir, regexp.MustCompile("proxy listening"), "serve", "--listen", addr, "--backend", r.dsn, "--auth", "trust")
	c, err := pgx.Connect(r.ctx, "postgres://crash@"+addr+"/"+r.db+"?sslmode=disable")
	if err != nil {
		r.t.Fatalf("connecting through the proxy: %v\n%s", err, r.proxy.output())
	}
	r.client = c
}

// stop stops the proxy in order.
func (r *crashRig) stop() {
	r.t.Helper()
	r.client.Close(r.ctx)
	_ = r.proxy.cmd.Process.Signal(syscall.SIGTERM)
	if err := r.proxy.wait(); err != nil {
		r.t.Fatalf("serve: %v\n%s", err, r.proxy.output())
	}
}

// peelLog returns the proxy's "peeled onion" log lines.
func (r *crashRig) peelLog() string {
	var lines []string
	for _, l := range strings.Split(r.proxy.output(), "\n") {
		if strings.Contains(l, "peeled onion") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return strings.Join(lines, "; ")
}

// newTable loads a new table through the proxy: id plain, three text
// columns with the Eq onion, five date columns with Eq and Ord, all at RND.
func (r *crashRig) newTable() {
	t := r.t
	t.Helper()
	start := time.Now()
	r.tables++
	r.table = fmt.Sprintf("crash_%d", r.tables)
	decl := [][]string{{r.table + ".id", "--policy", "plain"}}
	textMods := []int{97, 500, 3000}
	dateMods := []int{365, 1000, 3650, 50, 7300}
	r.texts, r.dates, r.layers, r.todo = map[string][]string{}, map[string][]time.Time{}, map[string]map[string]string{}, nil
	var cols []string
	for k, m := range textMods {
		name := fmt.Sprintf("t%d", k+1)
		cols = append(cols, name+" text")
		decl = append(decl, []string{r.table + "." + name, "--policy", "encrypted", "--capabilities", "eq"})
		vals := make([]string, r.rows)
		for i := range vals {
			vals[i] = fmt.Sprintf("t%d-%05d", k+1, (i*7919+k)%m)
		}
		r.texts[name] = vals
		r.layers[name] = map[string]string{"eq": "rnd"}
		r.todo = append(r.todo, crashOnion{r.table, name, "eq"})
	}
	day0 := time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)
	for k, m := range dateMods {
		name := fmt.Sprintf("d%d", k+1)
		cols = append(cols, name+" date")
		decl = append(decl, []string{r.table + "." + name, "--policy", "encrypted", "--capabilities", "eq,ord"})
		vals := make([]time.Time, r.rows)
		for i := range vals {
			vals[i] = day0.AddDate(0, 0, (i*31+k*17)%m)
		}
		r.dates[name] = vals
		r.layers[name] = map[string]string{"eq": "rnd", "ord": "rnd"}
		r.todo = append(r.todo, crashOnion{r.table, name, "eq"}, crashOnion{r.table, name, "ord"})
	}
	r.rng.Shuffle(len(r.todo), func(i, j int) { r.todo[i], r.todo[j] = r.todo[j], r.todo[i] })
	for _, d := range decl {
		if out, err := r.cmd(append([]string{"columns", "set", "--backend", r.dsn}, d...)...); err != nil {
			t.Fatalf("columns set %v: %v\n%s", d, err, out)
		}
	}
	if _, err := r.client.Exec(r.ctx, "CREATE TABLE "+r.table+" (id int, "+strings.Join(cols, ", ")+")"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; i < r.rows; i++ {
		b.WriteString(strconv.Itoa(i))
		for k := range textMods {
			b.WriteString("\t" + r.texts[fmt.Sprintf("t%d", k+1)][i])
		}
		for k := range dateMods {
			b.WriteString("\t" + r.dates[fmt.Sprintf("d%d", k+1)][i].Format("2006-01-02"))
		}
		b.WriteString("\n")
	}
	if _, err := r.client.PgConn().CopyFrom(r.ctx, strings.NewReader(b.String()), "COPY "+r.table+" FROM STDIN"); err != nil {
		t.Fatalf("COPY through the proxy: %v", err)
	}
	if err := r.checkServer(crashOnion{}, nil); err != nil {
		t.Fatalf("after the load: %v", err)
	}
	if _, err := r.direct.Exec(r.ctx, "VACUUM "+r.table); err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %s: %d rows, %d onions at RND, in %v", r.table, r.rows, len(r.todo), time.Since(start).Round(time.Millisecond))
}

// next returns an onion still at RND, loading a new table when needed.
func (r *crashRig) next() crashOnion {
	if len(r.todo) == 0 {
		r.newTable()
	}
	o := r.todo[0]
	r.todo = r.todo[1:]
	return o
}

// query returns a query needing o peeled: equality with, or for the Ord
// onion less than, the value of a random row.
func (r *crashRig) query(o crashOnion) crashQuery {
	row := r.rng.IntN(r.rows)
	q := crashQuery{simple: r.rng.IntN(2) == 0}
	op := "="
	if o.kind == "ord" {
		op = "<"
	}
	var arg any
	var literal string
	if vals, ok := r.texts[o.col]; ok {
		arg, literal = vals[row], "'"+vals[row]+"'"
		for i, v := range vals {
			if v == vals[row] {
				q.want = append(q.want, i)
			}
		}
	} else {
		vals := r.dates[o.col]
		v := vals[row]
		if op == "<" {
			v = v.AddDate(0, 0, 1) // at least the row itself
		}
		arg, literal = v, "'"+v.Format("2006-01-02")+"'"
		for i, w := range vals {
			if op == "=" && w.Equal(v) || op == "<" && w.Before(v) {
				q.want = append(q.want, i)
			}
		}
	}
	if q.simple {
		q.sql = fmt.Sprintf("SELECT id FROM %s WHERE %s %s %s", o.table, o.col, op, literal)
	} else {
		q.sql = fmt.Sprintf("SELECT id FROM %s WHERE %s %s $1", o.table, o.col, op)
		q.args = []any{arg}
	}
	return q
}

// run runs q through conn and returns the ids, sorted.
func (q crashQuery) run(ctx context.Context, conn *pgx.Conn) ([]int, error) {
	args := q.args
	if q.simple {
		args = []any{pgx.QueryExecModeSimpleProtocol}
	}
	rows, err := conn.Query(ctx, q.sql, args...)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	slices.Sort(ids)
	return ids, err
}

// check runs q through the proxy and compares the answer, then checks
// that o is peeled on the server. It returns how long the query took.
func (r *crashRig) check(o crashOnion, q crashQuery) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	start := time.Now()
	got, err := q.run(ctx, r.client)
	took := time.Since(start)
	if err != nil {
		return took, fmt.Errorf("%s: %w", q.sql, err)
	}
	if !slices.Equal(got, q.want) {
		return took, fmt.Errorf("%s: %d ids, want %d", q.sql, len(got), len(q.want))
	}
	r.layers[o.col][o.kind] = o.inner()
	return took, r.checkServer(o, nil)
}

// distinctPlain is how many distinct values column col holds.
func (r *crashRig) distinctPlain(col string) int {
	seen := map[string]bool{}
	for _, v := range r.texts[col] {
		seen[v] = true
	}
	for _, v := range r.dates[col] {
		seen[v.Format("2006-01-02")] = true
	}
	return len(seen)
}

// checkServer compares the catalog's layers with r.layers, except that the
// layer of target may also be its inner one when either is non-nil (then
// *either is set to the layer found), and checks that the cells of every
// onion agree with its recorded layer.
func (r *crashRig) checkServer(target crashOnion, either *string) error {
	rows, err := r.direct.Query(r.ctx, `SELECT c.column_name, o.key, o.value FROM pgonion.columns c JOIN pgonion.tables t USING (table_id), jsonb_each_text(c.onions) o
		WHERE t.table_name = $1 AND o.key IN ('eq', 'ord')`, r.table)
	if err != nil {
		return err
	}
	type onionLayer struct{ Col, Kind, Layer string }
	found, err := pgx.CollectRows(rows, pgx.RowToStructByPos[onionLayer])
	if err != nil {
		return err
	}
	if want := len(r.texts) + 2*len(r.dates); len(found) != want {
		return fmt.Errorf("the catalog records %d Eq and Ord onions for %s, want %d: %v", len(found), r.table, want, found)
	}
	for _, f := range found {
		want := r.layers[f.Col][f.Kind]
		if either != nil && f.Col == target.col && f.Kind == target.kind {
			if f.Layer != want && f.Layer != target.inner() {
				return fmt.Errorf("the catalog records %s at %q, want %s or %s", target, f.Layer, want, target.inner())
			}
			*either, want = f.Layer, f.Layer
		}
		if f.Layer != want {
			return fmt.Errorf("the catalog records %s.%s %s at %q, want %q", r.table, f.Col, f.Kind, f.Layer, want)
		}
		var distinct, n int
		cell := pgx.Identifier{f.Col + "__" + f.Kind}.Sanitize()
		if err := r.direct.QueryRow(r.ctx, "SELECT count(DISTINCT "+cell+"), count("+cell+") FROM "+r.table).Scan(&distinct, &n); err != nil {
			return err
		}
		wantDistinct := r.rows
		if want != "rnd" {
			wantDistinct = r.distinctPlain(f.Col)
		}
		if n != r.rows || distinct != wantDistinct {
			return fmt.Errorf("%s.%s %s recorded at %s: %d cells, %d distinct; want %d, %d distinct (cells at mixed layers?)", r.table, f.Col, f.Kind, want, n, distinct, r.rows, wantDistinct)
		}
	}
	return nil
}

// readAll reads every row through the proxy and compares it with the
// plaintext.
func (r *crashRig) readAll() error {
	var cols []string
	for k := range len(r.texts) {
		cols = append(cols, fmt.Sprintf("t%d", k+1))
	}
	for k := range len(r.dates) {
		cols = append(cols, fmt.Sprintf("d%d", k+1))
	}
	rows, err := r.client.Query(r.ctx, "SELECT id, "+strings.Join(cols, ", ")+" FROM "+r.table)
	if err != nil {
		return err
	}
	defer rows.Close()
	seen := make([]bool, r.rows)
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return err
		}
		id := int(vals[0].(int32))
		if id < 0 || id >= r.rows || seen[id] {
			return fmt.Errorf("row id %d read twice or unknown", id)
		}
		seen[id] = true
		for j, c := range cols {
			v := vals[j+1]
			switch {
			case strings.HasPrefix(c, "t"):
				if v != r.texts[c][id] {
					return fmt.Errorf("row %d: %s = %v, want %v", id, c, v, r.texts[c][id])
				}
			default:
				d, ok := v.(time.Time)
				if !ok || !d.Equal(r.dates[c][id]) {
					return fmt.Errorf("row %d: %s = %v, want %v", id, c, v, r.dates[c][id])
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for id, ok := range seen {
		if !ok {
			return fmt.Errorf("row %d missing", id)
		}
	}
	return nil
}

// crashBackend is a client backend on the test database other than ours.
type crashBackend struct {
	State, Query string
	InTx         bool
}

func (r *crashRig) backends(conn *pgx.Conn) ([]crashBackend, error) {
	rows, err := conn.Query(r.ctx, `SELECT coalesce(state, ''), query, xact_start IS NOT NULL FROM pg_stat_activity
		WHERE datname = current_database() AND application_name <> $1 AND backend_type = 'client backend'`, checkApp)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[crashBackend])
}

// stepRank orders the steps of the peel's transaction.
var stepRank = map[string]int{"": 0, outcomeSetup: 1, outcomeUpdate: 2, outcomeCatalog: 3}

// peelStep tells from a backend's last statement which step of the peel's
// transaction (internal/engine/peel.go) it is in; "" when it is not the
// peel's.
func peelStep(b crashBackend) string {
	q := strings.ToUpper(strings.TrimSpace(b.Query))
	switch {
	case strings.Contains(q, "DECRYPT_IV("):
		if b.State == "active" {
			return outcomeUpdate
		}
		return outcomeCatalog
	case strings.HasPrefix(q, "UPDATE PGONION.") || strings.HasPrefix(q, "DELETE FROM PGONION.") || strings.HasPrefix(q, "INSERT INTO PGONION.") ||
		strings.HasPrefix(q, "NOTIFY") || q == "COMMIT":
		return outcomeCatalog
	case q == "BEGIN" || strings.Contains(q, "LOCK_TIMEOUT") || strings.Contains(q, "PG_ADVISORY_XACT_LOCK") || strings.Contains(q, "PGONION.") ||
		strings.HasPrefix(q, "CREATE EXTENSION") || strings.HasPrefix(q, "LOCK TABLE"):
		return outcomeSetup
	}
	return ""
}

// killDuring sends o's query, kills the proxy with SIGKILL after delay,
// checks the state it left, restarts the proxy, checks through it, and
// returns where the kill landed.
func (r *crashRig) killDuring(o crashOnion, delay time.Duration) (string, error) {
	q := r.query(o)
	// The furthest step of the peel seen before the kill.
	stopWatch := make(chan struct{})
	seen := make(chan string, 1)
	go func() {
		furthest := ""
		defer func() { seen <- furthest }()
		for {
			select {
			case <-stopWatch:
				return
			default:
			}
			bs, err := r.backends(r.poller)
			if err != nil {
				return
			}
			for _, b := range bs {
				if b.InTx && stepRank[peelStep(b)] > stepRank[furthest] {
					furthest = peelStep(b)
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
		defer cancel()
		_, err := q.run(ctx, r.client)
		done <- err
	}()
	time.Sleep(delay)
	answered := false
	select {
	case err := <-done:
		if err != nil {
			return "", fmt.Errorf("the query failed before the kill: %v", err)
		}
		answered = true
	default:
	}
	if err := r.proxy.cmd.Process.Kill(); err != nil {
		return "", err
	}
	_ = r.proxy.wait()
	close(stopWatch)
	before := <-seen
	r.lastOutput = r.proxy.output()
	// Where the peel's transaction was when the proxy died: its backend
	// goes on with the statement it runs, and ends when it next reads.
	at, err := r.backends(r.direct)
	if err != nil {
		return "", err
	}
	if !answered {
		<-done // fails: the proxy is gone
	}
	r.client.Close(r.ctx)
	landed := ""
	for _, b := range at {
		if b.InTx && stepRank[peelStep(b)] > stepRank[landed] {
			landed = peelStep(b)
		}
	}
	during, committing := landed == outcomeUpdate, landed == outcomeCatalog
	if stepRank[before] > stepRank[landed] {
		landed = before
		if landed == outcomeUpdate {
			// Seen running before the kill, gone after it: the kill
			// came after the UPDATE, between the statements that follow.
			landed = outcomeCatalog
		}
	}
	// Wait for the dead proxy's backends to end.
	deadline := time.Now().Add(time.Minute)
	for {
		left, err := r.backends(r.direct)
		if err != nil {
			return "", err
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("backends of the killed proxy still running after a minute: %+v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var layer string
	if err := r.checkServer(o, &layer); err != nil {
		return "", fmt.Errorf("after the kill: %w", err)
	}
	switch {
	case answered:
		if layer != o.inner() {
			return "", fmt.Errorf("the client had its answer but the catalog records %s at %s", o, layer)
		}
		landed = outcomeAnswered
	case layer == o.inner() && during:
		return "", fmt.Errorf("the proxy died during the UPDATE of the cells, yet the peel committed")
	case layer == o.inner() && committing:
		landed = outcomeCatalog // the commit was on its way
	case layer == o.inner():
		landed = outcomeCommitted
	case landed == "":
		landed = outcomeBefore
	}
	r.layers[o.col][o.kind] = layer

	// A new proxy reads every row, and the query finishes the peel.
	r.start()
	if err := r.readAll(); err != nil {
		return "", fmt.Errorf("reading back after the kill (onion left at %s): %w", layer, err)
	}
	peelsBefore := strings.Count(r.proxy.output(), "peeled onion")
	took, err := r.check(o, q)
	if err != nil {
		return "", fmt.Errorf("rerunning the query after the kill (onion left at %s): %w", layer, err)
	}
	peeled := strings.Count(r.proxy.output(), "peeled onion") - peelsBefore
	if want := map[bool]int{true: 1, false: 0}[layer == "rnd"]; peeled != want {
		return "", fmt.Errorf("the restarted proxy peeled %d times, want %d (onion left at %s)", peeled, want, layer)
	}
	if peeled == 1 {
		r.peelTimes = append(r.peelTimes, took)
	}
	if _, err := r.direct.Exec(r.ctx, "VACUUM "+r.table); err != nil {
		return "", err
	}
	return landed, nil
}

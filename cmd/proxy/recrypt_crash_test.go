package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/embedpg"
	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestEncryptCrash adopts a plaintext table with `proxy encrypt --yes`
// while an application writes through `proxy serve`, kills the encrypt
// command with SIGKILL at random moments (PGONION_RECRYPT_KILLS times,
// default 20; bench/recrypt-soak.sh runs 100), and after each kill checks
// through the proxy that every row reads back as the plaintext copy (the
// same writes applied directly) says. Run again, the command finishes the
// work; at the end the columns are encrypted, their plaintext is gone
// from pg_dump, and `proxy decrypt` brings them back, with the same
// answers.
func TestEncryptCrash(t *testing.T) {
	kills := crashEnvInt(t, "PGONION_RECRYPT_KILLS", 20)
	nrows := crashEnvInt(t, "PGONION_RECRYPT_ROWS", 20000)
	seed := crashSeed(t, "PGONION_RECRYPT_SEED")
	t.Logf("%d kills, %d rows, PGONION_RECRYPT_SEED=%d", kills, nrows, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	dir := t.TempDir()
	run := func(args ...string) (string, error) {
		c := exec.Command(binary, args...)
		c.Dir = dir
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := run("keys", "init"); err != nil {
		t.Fatalf("keys init: %v\n%s", err, out)
	}
	direct, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	for _, tbl := range []string{"people", "people_plain"} {
		if _, err := direct.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s (id int PRIMARY KEY, name text NOT NULL, city varchar(30), born date);
			INSERT INTO %s SELECT i, 'canary-name-' || i, CASE WHEN i %% 7 = 0 THEN NULL ELSE 'city-' || (i %% 40) END, date '1950-01-01' + i %% 20000
			FROM generate_series(1, %d) i;
			CREATE INDEX %s_city ON %s (city)`, tbl, tbl, nrows, tbl, tbl)); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := run("columns", "set", "people.id", "--policy", "plain", "--backend", dsn); err != nil {
		t.Fatalf("columns set: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	srv := startedIn(t, dir, regexp.MustCompile("proxy listening"), "serve", "--listen", addr, "--backend", dsn, "--auth", "trust")
	defer func() {
		_ = srv.cmd.Process.Signal(syscall.SIGTERM)
		_ = srv.wait()
	}()
	app, err := pgx.Connect(ctx, "postgres://app@"+addr+"/"+strings.SplitN(dsn[strings.LastIndex(dsn, "/")+1:], "?", 2)[0]+"?sslmode=disable")
	if err != nil {
		t.Fatalf("connecting through the proxy: %v\n%s", err, srv.output())
	}
	defer app.Close(ctx)

	// The application: updates and inserts through the proxy, mirrored
	// directly on the plaintext copy, until stopped.
	var mu sync.Mutex // held while a write and its mirror are in flight
	var appErrs []string
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := 1 + (i*7919)%nrows
			stmts := []string{
				fmt.Sprintf("UPDATE %%s SET city = 'moved-%d', name = 'canary-renamed-%d' WHERE id = %d", i, i, id),
				fmt.Sprintf("INSERT INTO %%s VALUES (%d, 'canary-new-%d', NULL, '2001-02-03')", nrows+i, i),
			}
			mu.Lock()
			if i%2 == 0 {
				// In a transaction block: its first statement on the
				// table may meet a switch.
				var err error
				if _, err = app.Exec(ctx, "BEGIN"); err == nil {
					for _, s := range stmts {
						if _, err = app.Exec(ctx, fmt.Sprintf(s, "people")); err != nil {
							break
						}
					}
				}
				if err == nil {
					_, err = app.Exec(ctx, "COMMIT")
				} else {
					_, _ = app.Exec(ctx, "ROLLBACK")
				}
				if err != nil {
					appErrs = append(appErrs, err.Error())
				} else {
					for _, s := range stmts {
						if _, err := direct.Exec(ctx, fmt.Sprintf(s, "people_plain")); err != nil {
							appErrs = append(appErrs, "direct: "+err.Error())
						}
					}
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
				continue
			}
			for _, s := range stmts {
				if _, err := app.Exec(ctx, fmt.Sprintf(s, "people")); err != nil {
					appErrs = append(appErrs, err.Error())
					continue
				}
				if _, err := direct.Exec(ctx, fmt.Sprintf(s, "people_plain")); err != nil {
					appErrs = append(appErrs, "direct: "+err.Error())
				}
			}
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()

	checker, err := pgx.Connect(ctx, "postgres://check@"+addr+"/"+strings.SplitN(dsn[strings.LastIndex(dsn, "/")+1:], "?", 2)[0]+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer checker.Close(ctx)
	rowsOf := func(c *pgx.Conn, table string) ([]string, error) {
		rows, err := c.Query(ctx, "SELECT id, name, city, born FROM "+table+" ORDER BY id", pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			v, err := r.Values()
			return fmt.Sprint(v), err
		})
	}
	same := func(stage string) {
		t.Helper()
		mu.Lock()
		got, gerr := rowsOf(checker, "people")
		want, werr := rowsOf(direct, "people_plain")
		errs := appErrs
		mu.Unlock()
		if gerr == nil && werr == nil && reflect.DeepEqual(got, want) {
			return
		}
		t.Logf("application errors so far: %q", errs)
		if gerr == nil && werr == nil {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("%s: row %d through the proxy %s, plaintext %s (%d and %d rows)", stage, i, got[i], want[i], len(got), len(want))
				}
			}
		}
		t.Fatalf("%s: %d rows through the proxy (%v), %d plaintext (%v)", stage, len(got), gerr, len(want), werr)
	}

	encrypt := []string{"encrypt", "--yes", "--quiet", "--batch-blocks", "4", "--backend", dsn, "people"}
	decrypt := []string{"decrypt", "--quiet", "--batch-blocks", "4", "--backend", dsn, "people"}
	// runFor runs one command, killing it after delay (0: never); it
	// reports whether the command finished.
	runFor := func(args []string, delay time.Duration) (bool, error) {
		finished, _, err := runKilled(dir, args, delay)
		return finished, err
	}
	// Calibration: one adoption and one decryption to their end.
	var typical time.Duration
	for _, args := range [][]string{encrypt, decrypt} {
		began := time.Now()
		if _, err := runFor(args, 0); err != nil {
			t.Fatal(err)
		}
		typical = max(typical, time.Since(began))
		same("after the calibration's " + args[0])
	}
	t.Logf("a full rewrite took up to %v", typical.Round(time.Millisecond))
	outcomes := map[string]int{}
	args := encrypt
	for i := range kills {
		delay := time.Duration(1 + rng.Int64N(int64(typical)*5/4))
		finished, err := runFor(args, delay)
		if err != nil {
			t.Fatalf("kill %d: %v", i+1, err)
		}
		what := args[0] + " killed"
		if finished {
			what = args[0] + " finished before the kill"
		}
		t.Logf("kill %d: %s after %v", i+1, what, delay.Round(time.Millisecond))
		if finished {
			outcomes[args[0]+" finished before the kill"]++
			if args[0] == "encrypt" {
				args = decrypt
			} else {
				args = encrypt
			}
		} else {
			outcomes[args[0]+" killed"]++
		}
		same(fmt.Sprintf("after kill %d (%s, %v)", i+1, args[0], delay.Round(time.Millisecond)))
		// The catalog still verifies.
		out, err := run("status", "--backend", dsn)
		if err != nil {
			t.Fatalf("after kill %d: proxy status: %v\n%s", i+1, err, out)
		}
		if strings.Contains(out, " under way on public.people") {
			outcomes["status showed the rewrite under way"]++
		}
	}
	if kills >= 10 && (outcomes["encrypt killed"] == 0 || outcomes["decrypt killed"] == 0 || outcomes["status showed the rewrite under way"] == 0) {
		t.Errorf("kills did not land in both commands: %v", outcomes)
	}
	// Finish what the last kill left, then adopt.
	var out string
	if args[0] == "decrypt" {
		for try := 0; ; try++ {
			out, err = run(decrypt...)
			if err == nil || !strings.Contains(out, "another rewrite") || try > 50 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("final decrypt: %v\n%s", err, out)
		}
	}
	// Run to the end (the dead run's backend may hold its lock a moment).
	for try := 0; ; try++ {
		out, err = run(encrypt...)
		if err == nil || !strings.Contains(out, "another rewrite") || try > 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("final encrypt: %v\n%s", err, out)
	}
	same("after the adoption")
	var enc []string
	mu.Lock()
	rows, err := direct.Query(ctx, `SELECT c.column_name FROM pgonion.columns c JOIN pgonion.tables t USING (table_id)
		WHERE t.table_name = 'people' AND c.policy <> 'plain' ORDER BY 1`)
	if err == nil {
		enc, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	mu.Unlock()
	if err != nil || !reflect.DeepEqual(enc, []string{"born", "city", "name"}) {
		t.Fatalf("encrypted columns %v (%v), want born, city, name", enc, err)
	}
	indexDef := func() string {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		var def string
		if err := direct.QueryRow(ctx, "SELECT pg_get_indexdef('people_city'::regclass)").Scan(&def); err != nil {
			t.Fatalf("the index on city: %v", err)
		}
		return def
	}
	if def := indexDef(); !strings.Contains(def, "(city__eq)") {
		t.Fatalf("after the adoption the index on city is %s, want it over city__eq", def)
	}
	bin := "pg_dump"
	if d, err := embedpg.FindBinDir(); err == nil {
		bin = d + "/pg_dump"
	}
	mu.Lock()
	dump, err := exec.Command(bin, "--dbname="+dsn, "--table=people", "--data-only").Output()
	mu.Unlock()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	if strings.Contains(string(dump), "canary") || strings.Contains(string(dump), "city-") {
		t.Fatal("pg_dump of the adopted table holds plaintext")
	}

	// And back.
	if out, err := run("decrypt", "--quiet", "--batch-blocks", "16", "--backend", dsn, "people"); err != nil {
		t.Fatalf("decrypt: %v\n%s", err, out)
	}
	same("after decrypting")
	if def := indexDef(); !strings.Contains(def, "(city)") {
		t.Fatalf("after decrypting the index on city is %s, want it over city", def)
	}
	close(stop)
	<-done
	same("at the end")
	// The application's statements never fail because of a rewrite:
	// proxies hold statements on the table while it switches forms.
	for _, e := range appErrs {
		t.Errorf("the application got an error: %s", e)
	}
	t.Logf("recrypt crash: %v", outcomes)
}

package engine_test

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// raceTrials is how many times TestCreateRace repeats its race per
// configuration (PGONION_RACE_TRIALS overrides it).
func raceTrials(t *testing.T) int {
	if s := os.Getenv("PGONION_RACE_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return 1000
}

// TestCreateRace: session B creates a table inside a transaction and
// commits; session A, already connected (to the same proxy, or to another
// proxy of the same database), inserts a canary at once (in the simple
// and the extended protocol, alternately), and every tenth trial also
// while B's transaction is still open. Every INSERT is either rewritten
// or refused: no canary reaches the server's log.
func TestCreateRace(t *testing.T) {
	for _, tc := range []struct {
		name       string
		twoProxies bool
	}{
		{"one proxy", false},
		{"two proxies", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := newEncDB(t)
			logAll(t, db.direct(t))
			p1 := startProxy(t, db, nil)
			p2 := p1
			if tc.twoProxies {
				p2 = startProxy(t, db, nil)
			}
			b := p1.connect(t, pgx.QueryExecModeSimpleProtocol)
			as := []*pgx.Conn{p2.connect(t, pgx.QueryExecModeSimpleProtocol), p2.connect(t, pgx.QueryExecModeExec)}
			read := serverLog(t)
			trials := raceTrials(t)
			deadline := time.Now().Add(3 * time.Minute)
			var inserted, refused, during int
			for i := range trials {
				if time.Now().After(deadline) {
					t.Logf("stopped after %d trials (time bound)", i)
					break
				}
				a := as[i%2]
				name := fmt.Sprintf("s%d", i)
				canary := fmt.Sprintf("canary%dzebra", i)
				tx, err := b.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec(ctx, "CREATE TABLE "+name+" (note text)"); err != nil {
					t.Fatal(err)
				}
				if i%10 == 0 {
					// While B's transaction is open: refused (PostgreSQL
					// would say the table does not exist).
					if _, err := a.Exec(ctx, "INSERT INTO "+name+" VALUES ($1)", "open"+canary); err == nil {
						t.Fatalf("trial %d: INSERT into a table being created in another open transaction succeeded", i)
					}
					during++
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				if _, err := a.Exec(ctx, "INSERT INTO "+name+" VALUES ($1)", canary); err != nil {
					refused++
				} else {
					inserted++
				}
			}
			log := read()
			if log != nil && !bytes.Contains(log, []byte("CREATE TABLE s0")) {
				t.Fatal("the server log does not show the statements: is log_statement in effect?")
			}
			if i := bytes.Index(log, []byte("zebra")); i >= 0 {
				t.Fatalf("a canary reached the server log: %s", log[max(0, i-200):min(len(log), i+50)])
			}
			t.Logf("%d inserts encrypted, %d refused after COMMIT, %d refused during the open transaction", inserted, refused, during)
			if inserted == 0 {
				t.Fatal("no insert succeeded: the test shows nothing")
			}
		})
	}
}

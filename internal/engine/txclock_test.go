package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestTxClockFromRMWRead: now() in a statement after a read-modify-write
// UPDATE of the same transaction is the transaction's start as the
// server gives it, taken from the UPDATE's read (the proxy runs no
// clock query of its own then); after a COMMIT, in the next transaction
// or an implicit one, it is that transaction's.
func TestTxClockFromRMWRead(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec} {
		t.Run(mode.String(), func(t *testing.T) {
			c := p.connect(t, mode)
			mustExec(t, c, "DROP TABLE IF EXISTS acct, hist")
			mustExec(t, c, "CREATE TABLE acct (id int PRIMARY KEY, bal int)")
			mustExec(t, c, "CREATE TABLE hist (id int, at timestamptz)")
			mustExec(t, c, "INSERT INTO acct VALUES (1, 0)")
			var id int
			next := func() int { id++; return id }
			histAt := func(id int) time.Time {
				t.Helper()
				var at time.Time
				if err := c.QueryRow(ctx, "SELECT at FROM hist WHERE id = $1", id).Scan(&at); err != nil {
					t.Fatalf("hist %d: %v", id, err)
				}
				return at
			}
			serverNow := func() time.Time {
				t.Helper()
				var now time.Time
				if err := c.QueryRow(ctx, "SELECT transaction_timestamp()").Scan(&now); err != nil {
					t.Fatal(err)
				}
				return now
			}

			// In a block, three times: the time read with the UPDATE.
			for range 3 {
				mustExec(t, c, "BEGIN")
				mustExec(t, c, "UPDATE acct SET bal = bal + $1 WHERE id = $2", 1, 1)
				n := next()
				mustExec(t, c, "INSERT INTO hist VALUES ($1, now())", n)
				want := serverNow()
				mustExec(t, c, "COMMIT")
				if got := histAt(n); !got.Equal(want) {
					t.Errorf("now() after an UPDATE in a block: %v, want the transaction's %v", got, want)
				}
			}

			// The next transaction's time is its own.
			mustExec(t, c, "BEGIN")
			mustExec(t, c, "UPDATE acct SET bal = bal + $1 WHERE id = $2", 1, 1)
			first := serverNow()
			mustExec(t, c, "COMMIT")
			mustExec(t, c, "BEGIN")
			mustExec(t, c, "SELECT pg_sleep(0.002)")
			n := next()
			mustExec(t, c, "INSERT INTO hist VALUES ($1, now())", n)
			want := serverNow()
			mustExec(t, c, "COMMIT")
			if got := histAt(n); !got.Equal(want) || !got.After(first) {
				t.Errorf("now() in the transaction after one with an UPDATE: %v, want %v (after %v)", got, want, first)
			}

			// So is an implicit transaction's after an UPDATE outside a block.
			mustExec(t, c, "UPDATE acct SET bal = bal + $1 WHERE id = $2", 1, 1)
			var after time.Time
			if err := c.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&after); err != nil {
				t.Fatal(err)
			}
			mustExec(t, c, "SELECT pg_sleep(0.002)")
			n = next()
			mustExec(t, c, "INSERT INTO hist VALUES ($1, now())", n)
			if got := histAt(n); !got.After(after) {
				t.Errorf("now() of an INSERT after an UPDATE outside a block: %v, not after %v", got, after)
			}

			if mode == pgx.QueryExecModeSimpleProtocol {
				return
			}
			// A COMMIT and BEGIN sent in one batch before the INSERT,
			// unanswered when the INSERT is bound.
			mustExec(t, c, "BEGIN")
			mustExec(t, c, "UPDATE acct SET bal = bal + $1 WHERE id = $2", 1, 1)
			n = next()
			b := &pgx.Batch{}
			b.Queue("COMMIT")
			b.Queue("BEGIN")
			b.Queue("SELECT pg_sleep(0.002)")
			b.Queue("INSERT INTO hist VALUES ($1, now())", n)
			b.Queue("SELECT transaction_timestamp()")
			br := c.SendBatch(ctx, b)
			for range 4 {
				if _, err := br.Exec(); err != nil {
					t.Fatal(err)
				}
			}
			if err := br.QueryRow().Scan(&want); err != nil {
				t.Fatal(err)
			}
			if err := br.Close(); err != nil {
				t.Fatal(err)
			}
			mustExec(t, c, "COMMIT")
			if got := histAt(n); !got.Equal(want) {
				t.Errorf("now() after a COMMIT and BEGIN in the same batch: %v, want %v", got, want)
			}
		})
	}

	// No clock query ran on its own: it would be among the session's
	// prepared statements (prepared at its second run).
	c := p.connect(t, pgx.QueryExecModeCacheStatement)
	mustExec(t, c, "CREATE TABLE IF NOT EXISTS hist2 (id int, at timestamptz)")
	for i := range 3 {
		mustExec(t, c, "BEGIN")
		mustExec(t, c, "UPDATE acct SET bal = bal + $1 WHERE id = $2", 1, 1)
		mustExec(t, c, "INSERT INTO hist2 VALUES ($1, now())", i)
		mustExec(t, c, "COMMIT")
	}
	rows, err := c.Query(ctx, "SELECT statement FROM pg_prepared_statements", pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	sqls, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range sqls {
		if strings.HasPrefix(sql, "SELECT (extract(epoch FROM transaction_timestamp())") {
			t.Errorf("the proxy read the clock on its own after the UPDATE's read: %s", sql)
		}
	}
}

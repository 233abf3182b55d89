package wire_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/wire"
)

// versioned plans "SELECT which" as SELECT <epoch>, counts the result
// rewriters that learned their types from a Describe, and refuses
// everything while its epoch is odd and above 10.
type versioned struct {
	epoch     *atomic.Uint64
	described *atomic.Int64
}

func (v versioned) PlanEpoch() uint64 { return v.epoch.Load() }

func (v versioned) Query(string) (*wire.QueryPlan, error) { return nil, nil }

func (v versioned) Parse(name, sql string, oids []uint32) (*wire.Statement, error) {
	e := v.epoch.Load()
	if e > 10 && e%2 == 1 {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: "toy: not at an odd epoch"}
	}
	if !strings.Contains(sql, "which") {
		return nil, nil
	}
	return &wire.Statement{SQL: fmt.Sprintf("SELECT %d::int8 AS which", e), Results: func([]int16) wire.ResultRewriter {
		return describedCounter{v.described}
	}}, nil
}

type describedCounter struct{ n *atomic.Int64 }

func (d describedCounter) RowDescription(*pgproto3.RowDescription) error { d.n.Add(1); return nil }
func (d describedCounter) DataRow(*pgproto3.DataRow) error               { return nil }

// TestStaleStatementsArePlannedAgain: a prepared statement whose plan went
// stale (the Interceptor's epoch moved) is planned again and replaced on
// the server before its next Bind, with no help from the client (DESIGN
// §13: clients never have to prepare again); a refusal of the new plan is
// the Bind's error, and the session goes on.
func TestStaleStatementsArePlannedAgain(t *testing.T) {
	var epoch atomic.Uint64
	var described atomic.Int64
	epoch.Store(2)
	p := startProxy(t, func(c *wire.Config) {
		c.Interceptors = func(context.Context, wire.SessionInfo) (wire.Interceptor, error) {
			return versioned{&epoch, &described}, nil
		}
	})
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec} {
		t.Run(mode.String(), func(t *testing.T) {
			epoch.Store(2)
			c := p.connectMode(t, "tester", mode)
			which := func() (int64, error) {
				var n int64
				err := c.QueryRow(ctx, "SELECT which").Scan(&n)
				return n, err
			}
			prev := uint64(0)
			for _, e := range []uint64{2, 2, 4, 6, 6} {
				epoch.Store(e)
				before := described.Load()
				got, err := which()
				if err != nil || got != int64(e) {
					t.Fatalf("epoch %d: got %d, %v", e, got, err)
				}
				if e != prev && described.Load() == before {
					t.Fatalf("epoch %d: the new plan's rewriter never learned its row type", e)
				}
				prev = e
			}
			epoch.Store(13)
			if _, err := which(); err == nil || !strings.Contains(err.Error(), "toy: not at an odd epoch") {
				t.Fatalf("refused plan: %v", err)
			}
			epoch.Store(14)
			if got, err := which(); err != nil || got != 14 {
				t.Fatalf("after a refusal: got %d, %v", got, err)
			}
			var one int
			if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("session after re-plans: %v", err)
			}
		})
	}
}

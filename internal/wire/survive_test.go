package wire_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/wire"
)

// failing fails (or panics in) the rewriting of statements marked
// /*fail:WHERE*/ or /*panic:WHERE*/, where WHERE is one of rowdesc,
// row, release, tag, params, plan: the rewriter or the planner breaks at
// that point.
type failing struct{}

var errRewrite = &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: "toy: value out of range in a result"}

func failMode(sql string) (mode, where string) {
	for _, m := range []string{"fail", "panic"} {
		if i := strings.Index(sql, "/*"+m+":"); i >= 0 {
			rest := sql[i+len(m)+3:]
			return m, rest[:strings.Index(rest, "*/")]
		}
	}
	return "", ""
}

func breakAt(mode string) error {
	if mode == "panic" {
		var m map[string]int
		m["x"]++ // a real runtime panic: assignment to a nil map
	}
	return errRewrite
}

type breaking struct {
	mode, where string
	rows        int
}

func (b *breaking) RowDescription(*pgproto3.RowDescription) error {
	if b.where == "rowdesc" {
		return breakAt(b.mode)
	}
	return nil
}

func (b *breaking) DataRow(*pgproto3.DataRow) error {
	b.rows++
	if b.where == "row" && b.rows == 2 {
		return breakAt(b.mode)
	}
	if b.where == "release" {
		return wire.ErrSkipRow
	}
	return nil
}

func (b *breaking) Release(atEnd bool) ([]*pgproto3.DataRow, error) {
	if b.where == "release" && atEnd {
		return nil, breakAt(b.mode)
	}
	return nil, nil
}

func (b *breaking) CommandTag(tag []byte) []byte {
	if b.where == "tag" {
		_ = breakAt("panic")
	}
	return tag
}

func (failing) Query(sql string) (*wire.QueryPlan, error) {
	mode, where := failMode(sql)
	if mode == "" {
		return nil, nil
	}
	if where == "plan" {
		return nil, breakAt(mode)
	}
	return &wire.QueryPlan{SQL: sql, Results: []wire.ResultRewriter{&breaking{mode: mode, where: where}}}, nil
}

func (failing) Parse(name, sql string, oids []uint32) (*wire.Statement, error) {
	mode, where := failMode(sql)
	if mode == "" {
		return nil, nil
	}
	if where == "plan" {
		return nil, breakAt(mode)
	}
	st := &wire.Statement{SQL: sql, ParamOIDs: oids,
		Results: func([]int16) wire.ResultRewriter { return &breaking{mode: mode, where: where} }}
	if where == "params" {
		st.DescribeParams = func(*pgproto3.ParameterDescription) error { return breakAt(mode) }
	}
	return st, nil
}

// TestStatementFailuresKeepTheSession: a failure or a panic anywhere in
// planning or rewriting a result is an ERROR of that statement; the session
// goes on (SELECT 1 works), inside a transaction block the block fails as
// in PostgreSQL (25P02 until ROLLBACK), and other sessions never notice.
func TestStatementFailuresKeepTheSession(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, func(c *wire.Config) {
		c.Interceptors = func(context.Context, wire.SessionInfo) (wire.Interceptor, error) { return failing{}, nil }
	})
	bystander := p.connect(t)
	defer bystander.Close(ctx)
	modes := map[string]pgx.QueryExecMode{"simple": pgx.QueryExecModeSimpleProtocol, "extended": pgx.QueryExecModeExec, "describe": pgx.QueryExecModeDescribeExec}
	for name, mode := range modes {
		for _, how := range []string{"fail", "panic"} {
			for _, where := range []string{"plan", "rowdesc", "row", "release", "tag", "params"} {
				if where == "params" && name != "describe" { // only a Describe asks for parameter types
					continue
				}
				t.Run(name+"/"+how+"/"+where, func(t *testing.T) {
					c := p.connectMode(t, "app", mode)
					sql := "SELECT g /*" + how + ":" + where + "*/ FROM generate_series(1, 5) g WHERE g > $1"
					want := "22003"
					if how == "panic" || where == "tag" {
						want = "XX000"
					}
					check := func(err error) {
						t.Helper()
						var pe *pgconn.PgError
						if !errors.As(err, &pe) || pe.Code != want {
							t.Fatalf("statement: %v, want SQLSTATE %s", err, want)
						}
					}
					one := func(c *pgx.Conn) {
						t.Helper()
						var n int
						if err := c.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil || n != 1 {
							t.Fatalf("SELECT 1 afterwards: %d %v", n, err)
						}
					}
					rows, _ := c.Query(ctx, sql, 0)
					for rows.Next() {
					}
					check(rows.Err())
					one(c)

					// In a transaction block: the block fails, as it would
					// in PostgreSQL, and ROLLBACK recovers it.
					tx, err := c.Begin(ctx)
					if err != nil {
						t.Fatal(err)
					}
					rows, _ = tx.Query(ctx, sql, 0)
					for rows.Next() {
					}
					check(rows.Err())
					var pe *pgconn.PgError
					if _, err := tx.Exec(ctx, "SELECT 1"); !errors.As(err, &pe) || pe.Code != "25P02" {
						t.Fatalf("statement after the failure in the block: %v, want 25P02", err)
					}
					if err := tx.Rollback(ctx); err != nil {
						t.Fatal(err)
					}
					one(c)
					one(bystander)
				})
			}
		}
	}
}

// TestMaxClientConns: clients beyond the limit get FATAL 53300 (as from
// PostgreSQL's max_connections) without a backend connection; a slot
// freed is usable again.
func TestMaxClientConns(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, func(c *wire.Config) { c.MaxClientConns = 2 })
	a, b := p.connect(t), p.connect(t)
	defer b.Close(ctx)
	_, err := pgx.Connect(ctx, p.url("app"))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" {
		t.Fatalf("third client: %v, want 53300", err)
	}
	a.Close(ctx)
	var c *pgx.Conn
	for i := 0; ; i++ { // the proxy notices a's departure asynchronously
		if c, err = pgx.Connect(ctx, p.url("app")); err == nil || i == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("client after one left: %v", err)
	}
	c.Close(ctx)
}

package wire_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/wire"
)

// heldInterceptor runs, for "/*held: SQL*/ rest", SQL first with
// ExecQuery held in the client's transaction, and replaces the comment
// by the first value it returned (quoted). Its PlanEpoch is epoch.
type heldInterceptor struct {
	info  wire.SessionInfo
	epoch *atomic.Uint64
}

func (h *heldInterceptor) Query(sql string) (*wire.QueryPlan, error) {
	const open = "/*held:"
	i := strings.Index(sql, open)
	if i < 0 {
		return nil, nil
	}
	j := strings.Index(sql, "*/")
	var c collect
	if err := h.info.ExecQuery(wire.SideQuery{SQL: sql[i+len(open) : j], Hold: true}, &c); err != nil {
		return nil, err
	}
	v := "none"
	if len(c.rows) > 0 {
		v = c.rows[0][0]
	}
	return &wire.QueryPlan{SQL: sql[:i] + "'" + v + "'" + sql[j+2:]}, nil
}

// Parse, for "SQL /*held: SIDE*/", runs SIDE held at each Bind and binds
// its first value as the first parameter.
func (h *heldInterceptor) Parse(_, sql string, oids []uint32) (*wire.Statement, error) {
	const open = "/*held:"
	i := strings.Index(sql, open)
	if i < 0 {
		return nil, nil
	}
	j := strings.Index(sql, "*/")
	side := sql[i+len(open) : j]
	return &wire.Statement{SQL: sql[:i] + sql[j+2:], ParamOIDs: oids, Bind: func(b *pgproto3.Bind) error {
		var c collect
		if err := h.info.ExecQuery(wire.SideQuery{SQL: side, Hold: true}, &c); err != nil {
			return err
		}
		if len(c.rows) > 0 && len(b.Parameters) > 0 {
			b.Parameters[0] = []byte(c.rows[0][0])
			if len(b.ParameterFormatCodes) > 0 {
				b.ParameterFormatCodes = []int16{0}
			}
		}
		return nil
	}}, nil
}

func (h *heldInterceptor) PlanEpoch() uint64 { return h.epoch.Load() }

// TestSideStatementsStayPrepared: a statement the proxy runs again and
// again is parsed once more on the server connection, kept, and bound
// after that;
// the client's DISCARD ALL and DEALLOCATE ALL, a failure of the
// statement and a new plan epoch leave the session in step.
func TestSideStatementsStayPrepared(t *testing.T) {
	var epoch atomic.Uint64
	p := startProxy(t, func(c *wire.Config) {
		c.Interceptors = func(_ context.Context, info wire.SessionInfo) (wire.Interceptor, error) {
			return &heldInterceptor{info: info, epoch: &epoch}, nil
		}
	})
	ctx := context.Background()
	conn := p.connect(t)
	run := func(sql, want string) {
		t.Helper()
		var got string
		if err := conn.QueryRow(ctx, sql, pgx.QueryExecModeSimpleProtocol).Scan(&got); err != nil || got != want {
			t.Fatalf("%s: got %q, %v; want %q", sql, got, err, want)
		}
	}
	// The proxy's statements are the session's prepared ones: the
	// client sees them in pg_prepared_statements.
	prepared := func() string {
		t.Helper()
		var names string
		if err := conn.QueryRow(ctx, "SELECT coalesce(string_agg(name, ',' ORDER BY name), '') FROM pg_prepared_statements WHERE name LIKE 'pgonion%'", pgx.QueryExecModeSimpleProtocol).Scan(&names); err != nil {
			t.Fatal(err)
		}
		return names
	}
	for range 3 {
		run("SELECT /*held: SELECT 40 + 2*/::text", "42")
	}
	if got := prepared(); got != "pgonion_side_1" {
		t.Fatalf("prepared after three runs of one statement: %q, want pgonion_side_1", got)
	}
	run("SELECT /*held: SELECT 'other'*/::text", "other")
	if got := prepared(); got != "pgonion_side_1" {
		t.Fatalf("prepared after a statement ran once: %q, want only pgonion_side_1", got)
	}
	run("SELECT /*held: SELECT 'other'*/::text", "other")
	if got := prepared(); got != "pgonion_side_1,pgonion_side_2" {
		t.Fatalf("prepared after a second statement: %q", got)
	}

	// DISCARD ALL and DEALLOCATE ALL close them: prepared again.
	for _, reset := range []string{"DISCARD ALL", "DEALLOCATE ALL"} {
		if _, err := conn.Exec(ctx, reset, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
		run("SELECT /*held: SELECT 40 + 2*/::text", "42")
		if got := prepared(); !strings.HasPrefix(got, "pgonion_side_") || strings.Contains(got, ",") {
			t.Fatalf("after %s: prepared %q, want one", reset, got)
		}
	}

	// A statement that fails once it is bound stays prepared; one that
	// fails to parse is not kept.
	for range 2 {
		_, err := conn.Exec(ctx, "SELECT /*held: SELECT 1/(random() * 0)::int*/", pgx.QueryExecModeSimpleProtocol)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22012" {
			t.Fatalf("got %v, want 22012", err)
		}
		_, err = conn.Exec(ctx, "SELECT /*held: SELEC 1*/", pgx.QueryExecModeSimpleProtocol)
		if !errors.As(err, &pe) || pe.Code != "42601" {
			t.Fatalf("got %v, want 42601", err)
		}
	}
	// Statements run once (not kept) that fail once bound leave the
	// next one able to run.
	for i := range 3 {
		_, err := conn.Exec(ctx, fmt.Sprintf("SELECT /*held: SELECT %d/(random() * 0)::int*/", i), pgx.QueryExecModeSimpleProtocol)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22012" {
			t.Fatalf("one-off %d: got %v, want 22012", i, err)
		}
	}
	run("SELECT /*held: SELECT 'once'*/::text", "once")
	before := prepared()
	if strings.Count(before, ",") != 1 {
		t.Fatalf("prepared after the failures: %q, want two (42 and the division)", before)
	}

	// A new plan epoch closes them all: the next one is a new name, the
	// old ones are gone.
	epoch.Add(1)
	run("SELECT /*held: SELECT 40 + 2*/::text", "42")
	after := prepared()
	if strings.Contains(after, ",") || strings.Contains(before, after) {
		t.Fatalf("after a new epoch: prepared %q (before %q), want one new", after, before)
	}

	// In a transaction block, and after its failure and rollback.
	if _, err := conn.Exec(ctx, "BEGIN", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	run("SELECT /*held: SELECT 40 + 2*/::text", "42")
	if _, err := conn.Exec(ctx, "SELECT /*held: SELECT 1/(random() * 0)::int*/", pgx.QueryExecModeSimpleProtocol); err == nil {
		t.Fatal("the division did not fail")
	}
	if _, err := conn.Exec(ctx, "ROLLBACK", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		run("SELECT /*held: SELECT 40 + 2*/::text", "42")
	}
}

// writeCounter counts the writes to a connection.
type writeCounter struct {
	net.Conn
	n *atomic.Int64
}

func (w writeCounter) Write(b []byte) (int, error) {
	w.n.Add(1)
	return w.Conn.Write(b)
}

// TestHeldStatementAloneIsOneWrite: a held statement with nothing of
// the client's unanswered before it reaches the server in one write,
// with no Flush round trip of its own ahead of it; the client's Query
// is the second write.
func TestHeldStatementAloneIsOneWrite(t *testing.T) {
	var epoch atomic.Uint64
	var writes atomic.Int64
	p := startProxy(t, func(c *wire.Config) {
		c.Interceptors = func(_ context.Context, info wire.SessionInfo) (wire.Interceptor, error) {
			return &heldInterceptor{info: info, epoch: &epoch}, nil
		}
		dial := c.Backend.DialFunc
		c.Backend.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return writeCounter{Conn: conn, n: &writes}, nil
		}
	})
	ctx := context.Background()
	conn := p.connect(t)
	runs := func(mode pgx.QueryExecMode, sql string, want string) {
		t.Helper()
		// The side statement is prepared on the server by the second
		// run, the client's unnamed one too.
		for i := range 4 {
			before := writes.Load()
			var got string
			if err := conn.QueryRow(ctx, sql, mode, "arg").Scan(&got); err != nil || got != "42" {
				t.Fatalf("%v run %d: got %q, %v", mode, i, got, err)
			}
			if n := writes.Load() - before; i >= 2 && n != 2 {
				t.Fatalf("%v run %d: %d writes to the server, want 2 (%s)", mode, i, n, want)
			}
		}
	}
	runs(pgx.QueryExecModeSimpleProtocol, "SELECT /*held: SELECT 40 + 2*/::text WHERE $1::text IS NOT NULL", "the held statement, the Query")
	runs(pgx.QueryExecModeExec, "SELECT $1::text /*held: SELECT 40 + 2*/", "the empty Parse and the held statement, the rest")

	// Behind a statement of the cycle that fails, the held statement
	// waits for its answer and is not run; the session goes on.
	b := &pgx.Batch{}
	b.Queue("SELECT 1 / $1::int", 0)
	b.Queue("SELECT $1::text /*held: SELECT 40 + 2*/", "arg")
	err := conn.SendBatch(ctx, b).Close()
	if sqlState(err) != "22012" {
		t.Fatalf("batch with a failing statement first: %v, want 22012", err)
	}
	runs(pgx.QueryExecModeExec, "SELECT $1::text /*held: SELECT 40 + 2*/", "after the failed batch")
}

package wire_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/wire"
)

// sideInterceptor runs, for a statement "/*side: SQL*/ rest", SQL first
// with Exec ("/*side: SQL|arg*/": with arg as its binary $1) and replaces the /*side...*/ comment by the first value SQL
// returned (quoted), or refuses the statement with Exec's error.
type sideInterceptor struct {
	info   wire.SessionInfo
	parsed *parseRecord // nil: not recorded
}

// parseRecord is Exec's error in each Parse, by statement name.
type parseRecord struct {
	mu   sync.Mutex
	errs map[string]error
}

type collect struct {
	rows [][]string
	cols int
}

func (c *collect) RowDescription(rd *pgproto3.RowDescription) error {
	c.cols = len(rd.Fields)
	return nil
}

func (c *collect) DataRow(row *pgproto3.DataRow) error {
	var r []string
	for _, v := range row.Values {
		r = append(r, string(v))
	}
	c.rows = append(c.rows, r)
	row.Values[0] = []byte("rewritten rows must not reach the client")
	return nil
}

func (s *sideInterceptor) Query(sql string) (*wire.QueryPlan, error) {
	const open = "/*side:"
	i := strings.Index(sql, open)
	if i < 0 {
		return nil, nil
	}
	j := strings.Index(sql, "*/")
	side, arg, withArg := strings.Cut(sql[i+len(open):j], "|")
	var args [][]byte
	if withArg {
		args = [][]byte{[]byte(arg)}
	}
	var c collect
	if err := s.info.Exec(side, &c, args...); err != nil {
		return nil, err
	}
	v := "none"
	if len(c.rows) > 0 {
		v = c.rows[0][0]
	}
	return &wire.QueryPlan{SQL: sql[:i] + "'" + v + "'" + sql[j+2:]}, nil
}

// Parse runs the side statement of "/*side: SQL*/" too, and records
// Exec's error by statement name.
func (s *sideInterceptor) Parse(name, sql string, _ []uint32) (*wire.Statement, error) {
	const open = "/*side:"
	i := strings.Index(sql, open)
	if i < 0 {
		return nil, nil
	}
	j := strings.Index(sql, "*/")
	var c collect
	err := s.info.Exec(sql[i+len(open):j], &c)
	if rec := s.parsed; rec != nil {
		rec.mu.Lock()
		rec.errs[name] = err
		rec.mu.Unlock()
	}
	return nil, nil
}

// TestExecInParse: a Parse that begins a request cycle may run a
// statement ahead; one after other unsynced messages may not (it would
// end the client's implicit transaction), and the session stays in step.
func TestExecInParse(t *testing.T) {
	rec := &parseRecord{errs: map[string]error{}}
	p := startProxy(t, func(c *wire.Config) {
		c.Interceptors = func(_ context.Context, info wire.SessionInfo) (wire.Interceptor, error) {
			return &sideInterceptor{info: info, parsed: rec}, nil
		}
	})
	ctx := context.Background()
	conn := p.connect(t)
	pl := conn.PgConn().StartPipeline(ctx)
	pl.SendPrepare("first", "SELECT /*side: SELECT 1*/ 1", nil)
	pl.SendPrepare("second", "SELECT /*side: SELECT 2*/ 2", nil)
	if err := pl.Sync(); err != nil {
		t.Fatal(err)
	}
	for {
		res, err := pl.GetResults()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := res.(*pgconn.PipelineSync); ok {
			break
		}
	}
	if err := pl.Close(); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	first, second := rec.errs["first"], rec.errs["second"]
	rec.mu.Unlock()
	if first != nil || !errors.Is(second, wire.ErrExecUnavailable) {
		t.Fatalf("Exec in the first Parse of a cycle: %v (want nil); in the second: %v (want ErrExecUnavailable)", first, second)
	}
	var got int
	if err := conn.QueryRow(ctx, "SELECT 40 + 2").Scan(&got); err != nil || got != 42 {
		t.Fatalf("after: %d %v", got, err)
	}
}

func TestExecRunsAheadInTheClientsTransaction(t *testing.T) {
	p := startProxy(t, func(c *wire.Config) {
		c.Interceptors = func(_ context.Context, info wire.SessionInfo) (wire.Interceptor, error) {
			return &sideInterceptor{info: info}, nil
		}
	})
	ctx := context.Background()
	conn := p.connect(t)
	var got string
	if err := conn.QueryRow(ctx, "SELECT /*side: SELECT 40 + 2*/::text", pgx.QueryExecModeSimpleProtocol).Scan(&got); err != nil || got != "42" {
		t.Fatalf("got %q, %v; want 42", got, err)
	}
	// The side statement sees the client's uncommitted work, in its
	// transaction.
	for _, sql := range []string{"BEGIN", "CREATE TEMP TABLE side_t (v text)", "INSERT INTO side_t VALUES ('inside')"} {
		if _, err := conn.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.QueryRow(ctx, "SELECT /*side: SELECT v FROM side_t*/::text", pgx.QueryExecModeSimpleProtocol).Scan(&got); err != nil || got != "inside" {
		t.Fatalf("got %q, %v; want inside", got, err)
	}
	// A failing side statement fails the client's statement with the
	// server's error, and the transaction with it.
	_, err := conn.Exec(ctx, "SELECT /*side: SELECT 1/0*/", pgx.QueryExecModeSimpleProtocol)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22012" {
		t.Fatalf("got %v, want division by zero (22012)", err)
	}
	_, err = conn.Exec(ctx, "SELECT 1", pgx.QueryExecModeSimpleProtocol)
	if !errors.As(err, &pe) || pe.Code != "25P02" {
		t.Fatalf("after the failure got %v, want 25P02 (transaction aborted)", err)
	}
	if _, err := conn.Exec(ctx, "ROLLBACK", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	if status := conn.PgConn().TxStatus(); status != 'I' {
		t.Fatalf("transaction status %c after ROLLBACK, want I", status)
	}
	// Many in a row, with the session still in step.
	for i := range 50 {
		if err := conn.QueryRow(ctx, "SELECT /*side: SELECT repeat('x', 3)*/::text", pgx.QueryExecModeSimpleProtocol).Scan(&got); err != nil || got != "xxx" {
			t.Fatalf("round %d: got %q, %v", i, got, err)
		}
	}
}

// TestExecWithParameters: a side statement with binary parameters (the
// extended protocol), with and without result rows, and one that fails
// at Parse, all in the client's transaction and in step.
func TestExecWithParameters(t *testing.T) {
	p := startProxy(t, func(c *wire.Config) {
		c.Interceptors = func(_ context.Context, info wire.SessionInfo) (wire.Interceptor, error) {
			return &sideInterceptor{info: info}, nil
		}
	})
	ctx := context.Background()
	conn := p.connect(t)
	q := func(sql string) (string, error) {
		var got string
		err := conn.QueryRow(ctx, sql, pgx.QueryExecModeSimpleProtocol).Scan(&got)
		return got, err
	}
	if got, err := q("SELECT /*side: SELECT encode($1::bytea, 'hex')|a'b*/::text"); err != nil || got != "612762" {
		t.Fatalf("got %q, %v; want 612762", got, err)
	}
	for _, sql := range []string{"BEGIN", "CREATE TEMP TABLE side_p (v bytea)"} {
		if _, err := conn.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := q("SELECT /*side: INSERT INTO side_p VALUES ($1::bytea)|key*/::text"); err != nil || got != "none" {
		t.Fatalf("side INSERT: got %q, %v; want none (no rows)", got, err)
	}
	if got, err := q("SELECT /*side: SELECT convert_from(v, 'UTF8') FROM side_p*/::text"); err != nil || got != "key" {
		t.Fatalf("got %q, %v; want key", got, err)
	}
	_, err := q("SELECT /*side: SELEC $1|x*/::text")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42601" {
		t.Fatalf("got %v, want a syntax error (42601)", err)
	}
	if _, err := conn.Exec(ctx, "ROLLBACK", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if got, err := q("SELECT /*side: SELECT length($1::bytea)|abc*/::text"); err != nil || got != "3" {
			t.Fatalf("round %d: got %q, %v", i, got, err)
		}
	}
}

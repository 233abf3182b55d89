package wire_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/wire"
)

// toyInterceptor exercises the seam: it refuses statements containing
// "forbidden", upper-cases the text results and column names of statements
// marked /*upper*/, refuses a Bind whose parameter is "refuse-me", and shows
// text parameters as varchar.
type toyInterceptor struct{}

var errForbidden = &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: `toy: construct "forbidden" is not supported on column x`}

func (toyInterceptor) Query(sql string) (*wire.QueryPlan, error) {
	if strings.Contains(sql, "forbidden") {
		return nil, errForbidden
	}
	if strings.Contains(sql, "/*copyupper*/") {
		return &wire.QueryPlan{SQL: sql, CopyIn: &upperCopy{}}, nil
	}
	if strings.HasPrefix(sql, "CREATE TABLE") && strings.Contains(sql, "/*as-do*/") {
		// Run the DDL as a DO block, and report it as the client's.
		return &wire.QueryPlan{SQL: "DO $x$ BEGIN EXECUTE " + quoteLiteral(sql) + "; END $x$", Results: []wire.ResultRewriter{retag{"CREATE TABLE"}}}, nil
	}
	if strings.Contains(sql, "/*reverse*/") {
		return &wire.QueryPlan{SQL: sql, Results: []wire.ResultRewriter{&reverse{}}}, nil
	}
	if b, ok := strings.CutPrefix(sql, "/*bound*/ "); ok {
		// "/*bound*/ SQL@@p1@@p2": SQL in the extended protocol, with p1
		// and p2 as text parameters; results as text, upper-cased.
		parts := strings.Split(b, "@@")
		bound := &wire.Bound{}
		for _, p := range parts[1:] {
			bound.ParamFormats = append(bound.ParamFormats, 0)
			bound.Params = append(bound.Params, []byte(p))
		}
		return &wire.QueryPlan{SQL: parts[0], Results: []wire.ResultRewriter{upper{}}, Bound: bound}, nil
	}
	if !strings.Contains(sql, "/*upper*/") {
		return nil, nil
	}
	n := strings.Count(sql, ";") + 1
	plan := &wire.QueryPlan{SQL: sql}
	for range n {
		plan.Results = append(plan.Results, upper{})
	}
	return plan, nil
}

func (toyInterceptor) Parse(name, sql string, oids []uint32) (*wire.Statement, error) {
	if strings.Contains(sql, "forbidden") {
		return nil, errForbidden
	}
	if strings.Contains(sql, "/*copyupper*/") {
		return &wire.Statement{SQL: sql, CopyIn: func() wire.CopyInRewriter { return &upperCopy{} }}, nil
	}
	if strings.Contains(sql, "/*reverse*/") {
		return &wire.Statement{SQL: sql, ParamOIDs: oids, Results: func([]int16) wire.ResultRewriter { return &reverse{} }}, nil
	}
	if !strings.Contains(sql, "/*upper*/") {
		return nil, nil
	}
	return &wire.Statement{
		SQL: sql, ParamOIDs: oids,
		Bind: func(b *pgproto3.Bind) error {
			for _, p := range b.Parameters {
				if string(p) == "refuse-me" {
					return &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: "toy: parameter refused"}
				}
			}
			return nil
		},
		DescribeParams: func(pd *pgproto3.ParameterDescription) error {
			for i, o := range pd.ParameterOIDs {
				if o == 25 {
					pd.ParameterOIDs[i] = 1043
				}
			}
			return nil
		},
		Results: func([]int16) wire.ResultRewriter { return upper{} },
	}, nil
}

type upper struct{}

func (upper) RowDescription(rd *pgproto3.RowDescription) error {
	for i := range rd.Fields {
		rd.Fields[i].Name = bytes.ToUpper(rd.Fields[i].Name)
	}
	return nil
}

func (upper) DataRow(row *pgproto3.DataRow) error {
	for i, v := range row.Values {
		if v != nil {
			row.Values[i] = bytes.ToUpper(v)
		}
	}
	return nil
}

// upperCopy upper-cases COPY text data line by line (lines may be split
// across CopyData messages) and refuses a line containing "refuse".
type upperCopy struct{ partial []byte }

func (u *upperCopy) CopyInResponse(r *pgproto3.CopyInResponse) error { return nil }

// upperCopyCalls counts upperCopy's Data calls, in every test.
var upperCopyCalls atomic.Int64

func (u *upperCopy) Data(dst, src []byte) ([]byte, error) {
	upperCopyCalls.Add(1)
	u.partial = append(u.partial, src...)
	i := bytes.LastIndexByte(u.partial, '\n')
	if i < 0 {
		return dst, nil
	}
	lines := u.partial[:i+1]
	if bytes.Contains(lines, []byte("refuse")) {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: "toy: copy data refused"}
	}
	dst = append(dst, bytes.ToUpper(lines)...)
	u.partial = append(u.partial[:0], u.partial[i+1:]...)
	return dst, nil
}

func (u *upperCopy) Done(dst []byte) ([]byte, error) {
	if bytes.Contains(u.partial, []byte("refuse")) {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: "toy: copy data refused"}
	}
	return append(dst, bytes.ToUpper(u.partial)...), nil
}

// reverse holds every row (a wire.RowReleaser) and releases them in
// reverse order at the end, except that it lets the row "7" go at once.
type reverse struct{ held []*pgproto3.DataRow }

func (*reverse) RowDescription(*pgproto3.RowDescription) error { return nil }

func (r *reverse) DataRow(row *pgproto3.DataRow) error {
	if string(row.Values[0]) == "7" {
		return nil
	}
	vals := make([][]byte, len(row.Values))
	for i, v := range row.Values {
		vals[i] = bytes.Clone(v)
	}
	r.held = append(r.held, &pgproto3.DataRow{Values: vals})
	return wire.ErrSkipRow
}

func (r *reverse) Release(atEnd bool) ([]*pgproto3.DataRow, error) {
	if !atEnd {
		return nil, nil
	}
	if len(r.held) > 0 && string(r.held[0].Values[0]) == "fail" {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "22012", Message: "toy: cannot complete"}
	}
	slices.Reverse(r.held)
	out := r.held
	r.held = nil
	return out, nil
}

// retag reports a fixed command tag.
type retag struct{ tag string }

func (retag) RowDescription(*pgproto3.RowDescription) error { return nil }
func (retag) DataRow(*pgproto3.DataRow) error               { return nil }
func (r retag) CommandTag([]byte) []byte                    { return []byte(r.tag) }

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func startToyProxy(t *testing.T) *testProxy {
	return startProxy(t, func(c *wire.Config) {
		c.Interceptors = func(context.Context, wire.SessionInfo) (wire.Interceptor, error) { return toyInterceptor{}, nil }
	})
}

func TestInterceptorRewritesResultsInEveryMode(t *testing.T) {
	ctx := context.Background()
	p := startToyProxy(t)
	c := p.connect(t)
	for _, mode := range execModes {
		rows, err := c.Query(ctx, "SELECT 'abc'::text AS v, $1::text AS w /*upper*/", mode, "xyz")
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		var v, w string
		for rows.Next() {
			if err := rows.Scan(&v, &w); err != nil {
				t.Fatalf("%v: %v", mode, err)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		names := []string{string(rows.FieldDescriptions()[0].Name), string(rows.FieldDescriptions()[1].Name)}
		if v != "ABC" || w != "XYZ" || names[0] != "V" || names[1] != "W" {
			t.Fatalf("%v: got %q %q columns %v", mode, v, w, names)
		}
		// Unmarked statements pass through untouched.
		var plain string
		if err := c.QueryRow(ctx, "SELECT 'abc'::text", mode).Scan(&plain); err != nil || plain != "abc" {
			t.Fatalf("%v: plain query gave %q %v", mode, plain, err)
		}
	}
	// Multi-statement simple query: each statement's rewriter applies.
	mrr := c.PgConn().Exec(ctx, "SELECT 'a' AS x /*upper*/; SELECT 'b' AS y")
	res, err := mrr.ReadAll()
	if err != nil || len(res) != 2 || string(res[0].Rows[0][0]) != "A" || string(res[1].Rows[0][0]) != "B" {
		t.Fatalf("multi-statement results %v %v", res, err)
	}
}

// TestBoundQuery: a Query the Interceptor sends in the extended protocol
// (QueryPlan.Bound) is answered to the client as its Query: rows,
// statements without rows, errors, and the session goes on.
func TestBoundQuery(t *testing.T) {
	ctx := context.Background()
	p := startToyProxy(t)
	c := p.connect(t).PgConn()
	for _, q := range []struct {
		sql, tag string
		rows     []string
		err      string
	}{
		{sql: "/*bound*/ SELECT $1::text || $2::text AS v@@ab@@cd", tag: "SELECT 1", rows: []string{"ABCD"}},
		{sql: "/*bound*/ SELECT g::text AS v FROM generate_series(1, $1::int) g@@3", tag: "SELECT 3", rows: []string{"1", "2", "3"}},
		{sql: "/*bound*/ CREATE TEMP TABLE bound_t (a int)", tag: "CREATE TABLE"},
		{sql: "/*bound*/ INSERT INTO bound_t VALUES ($1::int), ($2::int)@@7@@8", tag: "INSERT 0 2"},
		{sql: "/*bound*/ SELECT 1 / $1::int AS v@@0", err: "22012"},
		{sql: "/*bound*/ SELECT sum(a)::text AS v FROM bound_t", tag: "SELECT 1", rows: []string{"15"}},
	} {
		res, err := c.Exec(ctx, q.sql).ReadAll()
		if q.err != "" {
			if sqlState(err) != q.err {
				t.Fatalf("%s: got %v, want SQLSTATE %s", q.sql, err, q.err)
			}
			continue
		}
		if err != nil || len(res) != 1 {
			t.Fatalf("%s: %d results, %v", q.sql, len(res), err)
		}
		var rows []string
		for _, r := range res[0].Rows {
			rows = append(rows, string(r[0]))
		}
		if res[0].CommandTag.String() != q.tag || !slices.Equal(rows, q.rows) {
			t.Fatalf("%s: got %q %q, want %q %q", q.sql, res[0].CommandTag, rows, q.tag, q.rows)
		}
		if q.rows != nil && string(res[0].FieldDescriptions[0].Name) != "V" {
			t.Fatalf("%s: column %q, want it rewritten to V", q.sql, res[0].FieldDescriptions[0].Name)
		}
	}
	// The client sees a Query's messages, none of the extended protocol's.
	query := rawQuerier(t, p)
	for sql, want := range map[string]string{
		"/*bound*/ SELECT $1::text AS v@@ab":                       "TDCZ",
		"/*bound*/ CREATE TEMP TABLE bound_u (a int)":              "CZ",
		"/*bound*/ SELECT 1 / $1::int AS v@@0":                     "EZ",
		"/*bound*/ SELECT g FROM generate_series(1, $1::int) g@@2": "TDDCZ",
	} {
		var got []byte
		for _, m := range query(sql) {
			got = append(got, msgType(m))
		}
		if string(got) != want {
			t.Errorf("%s: the client got %s, want %s", sql, got, want)
		}
	}
	// From its second run a bound Query's statement stays prepared; a
	// failed Parse or execution does not break the next run.
	for i := range 4 {
		for _, q := range []struct{ sql, want string }{
			{"/*bound*/ SELECT $1::text || 'x' AS v@@a", "AX"},
			{"/*bound*/ SELECT 1 / $1::int AS v@@0", "22012"},
			{"/*bound*/ SELECT nosuch + $1::int AS v@@0", "42703"},
			// Slower than slowAfter twice in a row: planned for its
			// values at each run from the third.
			{"/*bound*/ SELECT pg_sleep(0.02)::text || $1::text AS v@@s", "S"},
		} {
			res, err := c.Exec(ctx, q.sql).ReadAll()
			got := sqlState(err)
			if err == nil {
				got = string(res[0].Rows[0][0])
			}
			if got != q.want {
				t.Fatalf("run %d of %s: got %q (%v), want %q", i+1, q.sql, got, err, q.want)
			}
		}
	}
	// Prepared at the second run: the two that parse, and the slow one,
	// bound that once only.
	res, err := c.Exec(ctx, "SELECT string_agg(CASE WHEN statement LIKE '%pg_sleep%' THEN 'slow run ' || (generic_plans + custom_plans) ELSE 'fast' END, ',' ORDER BY statement LIKE '%pg_sleep%', name) FROM pg_prepared_statements WHERE name LIKE 'pgonion_side_%'").ReadAll()
	if err != nil || len(res) != 1 || len(res[0].Rows) != 1 {
		t.Fatalf("statements prepared for bound queries: %v", err)
	}
	if got := string(res[0].Rows[0][0]); got != "fast,fast,slow run 1" {
		t.Fatalf("statements prepared for bound queries: %s, want fast,fast,slow run 1", got)
	}
	// In a transaction block, a failure fails the block as a Query's would.
	if _, err := c.Exec(ctx, "BEGIN").ReadAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "/*bound*/ SELECT 1 / $1::int AS v@@0").ReadAll(); sqlState(err) != "22012" {
		t.Fatalf("in a block: %v", err)
	}
	if c.TxStatus() != 'E' {
		t.Fatalf("transaction status %c after a failure in a block, want E", c.TxStatus())
	}
	if _, err := c.Exec(ctx, "ROLLBACK").ReadAll(); err != nil {
		t.Fatal(err)
	}
}

// rawFrontend connects to p as a raw frontend, past its startup; until
// reads messages (ParameterStatus skipped) up to the first that stop
// accepts, included.
func rawFrontend(t *testing.T, p *testProxy) (fe *pgproto3.Frontend, until func(stop func(pgproto3.BackendMessage) bool) []pgproto3.BackendMessage) {
	t.Helper()
	conn, err := net.Dial("tcp", p.addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	fe = pgproto3.NewFrontend(conn, conn)
	until = func(stop func(pgproto3.BackendMessage) bool) []pgproto3.BackendMessage {
		t.Helper()
		var got []pgproto3.BackendMessage
		for {
			m, err := fe.Receive()
			if err != nil {
				t.Fatalf("after %T...: %v", got, err)
			}
			if _, ok := m.(*pgproto3.ParameterStatus); ok {
				continue
			}
			got = append(got, m)
			if stop(m) {
				return got
			}
		}
	}
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "t", "database": p.backend.Database}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	until(isReady)
	return fe, until
}

// isReady accepts a ReadyForQuery.
func isReady(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.ReadyForQuery); return ok }

// rawQuerier connects to p and returns a function that sends a Query
// and returns the messages of its answer, ReadyForQuery included.
func rawQuerier(t *testing.T, p *testProxy) func(sql string) []pgproto3.BackendMessage {
	fe, until := rawFrontend(t, p)
	return func(sql string) []pgproto3.BackendMessage {
		t.Helper()
		fe.Send(&pgproto3.Query{String: sql})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		return until(isReady)
	}
}

// msgType is the type byte of a backend message.
func msgType(m pgproto3.BackendMessage) byte {
	b, _ := m.Encode(nil)
	return b[0]
}

func TestInterceptorDescribeParams(t *testing.T) {
	ctx := context.Background()
	p := startToyProxy(t)
	sd, err := p.connect(t).Prepare(ctx, "s1", "SELECT $1::text /*upper*/")
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.ParamOIDs) != 1 || sd.ParamOIDs[0] != 1043 {
		t.Fatalf("parameter types %v, want [1043]", sd.ParamOIDs)
	}
	if len(sd.Fields) != 1 || string(sd.Fields[0].Name) != "TEXT" {
		t.Fatalf("fields %v", sd.Fields)
	}
}

func TestInterceptorRefusals(t *testing.T) {
	ctx := context.Background()
	p := startToyProxy(t)
	c := p.connect(t)
	for _, mode := range execModes {
		_, err := c.Exec(ctx, "SELECT 'forbidden'", mode)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "0A000" || pe.Message != errForbidden.Message {
			t.Fatalf("%v: refusal gave %v", mode, err)
		}
		var one int
		if err := c.QueryRow(ctx, "SELECT 1", mode).Scan(&one); err != nil {
			t.Fatalf("%v: session unusable after refusal: %v", mode, err)
		}
	}
	// Bind refusal (extended protocol only: simple mode inlines parameters).
	for _, mode := range execModes[:4] {
		_, err := c.Exec(ctx, "SELECT $1::text /*upper*/", mode, "refuse-me")
		if sqlState(err) != "0A000" || !strings.Contains(err.Error(), "parameter refused") {
			t.Fatalf("%v: bind refusal gave %v", mode, err)
		}
		var s string
		if err := c.QueryRow(ctx, "SELECT $1::text /*upper*/", mode, "ok").Scan(&s); err != nil || s != "OK" {
			t.Fatalf("%v: after bind refusal: %q %v", mode, s, err)
		}
	}
}

// TestRefusalTransactionSemantics: a refused statement aborts the
// transaction it is in, exactly as a failing statement would.
func TestRefusalTransactionSemantics(t *testing.T) {
	ctx := context.Background()
	p := startToyProxy(t)
	c := p.connect(t)
	if _, err := c.Exec(ctx, "CREATE TABLE r (v int)"); err != nil {
		t.Fatal(err)
	}
	// Implicit transaction of a pipelined batch.
	b := &pgx.Batch{}
	b.Queue("INSERT INTO r VALUES (1)")
	b.Queue("SELECT 'forbidden'")
	b.Queue("INSERT INTO r VALUES (2)")
	if err := c.SendBatch(ctx, b).Close(); sqlState(err) != "0A000" {
		t.Fatalf("batch error %v", err)
	}
	// Explicit transaction.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO r VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 'forbidden'"); sqlState(err) != "0A000" {
		t.Fatalf("refusal in transaction: %v", err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO r VALUES (4)"); sqlState(err) != "25P02" {
		t.Fatalf("after refusal the transaction should be aborted, got %v", err)
	}
	_ = tx.Rollback(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM r").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows survived (%v), want 0", n, err)
	}
}

// TestInterceptorPipeline interleaves rewritten and plain statements in one
// pipelined batch, so each answer must be matched to its statement.
func TestInterceptorPipeline(t *testing.T) {
	ctx := context.Background()
	p := startToyProxy(t)
	c := p.connect(t)
	b := &pgx.Batch{}
	want := []string{}
	for i := range 50 {
		if i%3 == 0 {
			b.Queue("SELECT 'row' || $1::text /*upper*/", itoa(i))
			want = append(want, "ROW"+itoa(i))
		} else {
			b.Queue("SELECT 'row' || $1::text", itoa(i))
			want = append(want, "row"+itoa(i))
		}
	}
	br := c.SendBatch(ctx, b)
	for i, w := range want {
		var got string
		if err := br.QueryRow().Scan(&got); err != nil || got != w {
			t.Fatalf("statement %d: %q %v, want %q", i, got, err, w)
		}
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestInterceptorCopyIn(t *testing.T) {
	ctx := context.Background()
	p := startToyProxy(t)
	c := p.connect(t)
	if _, err := c.Exec(ctx, "CREATE TABLE cp (v text)"); err != nil {
		t.Fatal(err)
	}
	// Rows split at odd places across CopyData messages.
	data := strings.Repeat("abc\ndef\n", 3000) + "last"
	tag, err := c.PgConn().CopyFrom(ctx, &chunked{data: []byte(data), n: 7}, "COPY cp FROM STDIN /*copyupper*/")
	if err != nil || tag.RowsAffected() != 6001 {
		t.Fatalf("copy: %v %v", tag, err)
	}
	var n int
	var distinct string
	if err := c.QueryRow(ctx, "SELECT count(*), string_agg(DISTINCT v, ',' ORDER BY v) FROM cp").Scan(&n, &distinct); err != nil || n != 6001 || distinct != "ABC,DEF,LAST" {
		t.Fatalf("stored %d rows %q, %v", n, distinct, err)
	}
	// A refused row: nothing of the COPY is stored, the client sees the refusal.
	_, err = c.PgConn().CopyFrom(ctx, strings.NewReader("x\ny\nrefuse\nz\n"), "COPY cp FROM STDIN /*copyupper*/")
	if sqlState(err) != "0A000" || !strings.Contains(err.Error(), "copy data refused") {
		t.Fatalf("refused copy gave %v", err)
	}
	if err := c.QueryRow(ctx, "SELECT count(*) FROM cp").Scan(&n); err != nil || n != 6001 {
		t.Fatalf("after refused copy: %d rows, %v", n, err)
	}
}

// chunked reads data n bytes at a time.
type chunked struct {
	data []byte
	n    int
}

func (c *chunked) Read(b []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(c.n, len(b), len(c.data))
	copy(b, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

// TestExtendedCopyWithSyncs sends COPY through the extended protocol the way
// libpq's PQexecParams does (Parse, Bind, Describe, Execute, Sync, then the
// data, CopyDone, Sync): the server ignores the first Sync, so the proxy
// must match one ReadyForQuery to two Syncs, then keep answering correctly.
func TestExtendedCopyWithSyncs(t *testing.T) {
	ctx := context.Background()
	p := startToyProxy(t)
	if _, err := p.connect(t).Exec(ctx, "CREATE TABLE cp (v text)"); err != nil {
		t.Fatal(err)
	}
	fe, until := rawFrontend(t, p)
	isRFQ := isReady
	for _, sql := range []string{"COPY cp FROM STDIN /*copyupper*/", "COPY cp FROM STDIN"} {
		fe.Send(&pgproto3.Parse{Query: sql})
		fe.Send(&pgproto3.Bind{})
		fe.Send(&pgproto3.Describe{ObjectType: 'P'})
		fe.Send(&pgproto3.Execute{})
		fe.Send(&pgproto3.Sync{})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		until(func(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.CopyInResponse); return ok })
		fe.Send(&pgproto3.CopyData{Data: []byte("one\ntw")})
		fe.Send(&pgproto3.CopyData{Data: []byte("o\n")})
		fe.Send(&pgproto3.CopyDone{})
		fe.Send(&pgproto3.Sync{})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		msgs := until(isRFQ)
		var tag string
		for _, m := range msgs {
			if cc, ok := m.(*pgproto3.CommandComplete); ok {
				tag = string(cc.CommandTag)
			}
		}
		if tag != "COPY 2" {
			t.Fatalf("%s: got %#v", sql, msgs)
		}
	}
	// The session is still in step: a simple query gets its own answer.
	fe.Send(&pgproto3.Query{String: "SELECT string_agg(v, ',' ORDER BY v) FROM cp"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var got string
	for _, m := range until(isRFQ) {
		if dr, ok := m.(*pgproto3.DataRow); ok {
			got = string(dr.Values[0])
		}
	}
	if got != "ONE,TWO,one,two" {
		t.Fatalf("table holds %q", got)
	}
}

// TestCopyDataJoined: CopyData messages that arrive together (a row per
// message, as libpq's PQputline sends them) reach the rewriter as one
// chunk, and every row is stored once, in order.
func TestCopyDataJoined(t *testing.T) {
	ctx := context.Background()
	p := startToyProxy(t)
	if _, err := p.connect(t).Exec(ctx, "CREATE TABLE cpj (n int, v text)"); err != nil {
		t.Fatal(err)
	}
	fe, until := rawFrontend(t, p)
	fe.Send(&pgproto3.Query{String: "COPY cpj FROM STDIN /*copyupper*/"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	until(func(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.CopyInResponse); return ok })
	const rows = 300
	before := upperCopyCalls.Load()
	for i := range rows {
		fe.Send(&pgproto3.CopyData{Data: fmt.Appendf(nil, "%d\trow %d\n", i, i)})
	}
	fe.Send(&pgproto3.CopyDone{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var tag string
	for _, m := range until(isReady) {
		if cc, ok := m.(*pgproto3.CommandComplete); ok {
			tag = string(cc.CommandTag)
		}
	}
	if tag != fmt.Sprint("COPY ", rows) {
		t.Fatalf("command tag %q, want COPY %d", tag, rows)
	}
	if calls := upperCopyCalls.Load() - before; calls >= rows {
		t.Errorf("%d rows sent at once reached the rewriter in %d calls", rows, calls)
	}
	var n, bad int
	err := p.connectDirect(t).QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE v <> 'ROW ' || n) FROM cpj").Scan(&n, &bad)
	if err != nil || n != rows || bad != 0 {
		t.Fatalf("table: %d rows, %d wrong (%v)", n, bad, err)
	}
}

func TestInterceptorCommandTag(t *testing.T) {
	ctx := context.Background()
	p := startToyProxy(t)
	tag, err := p.connect(t).PgConn().Exec(ctx, "CREATE TABLE tagged (v int) /*as-do*/").ReadAll()
	if err != nil || len(tag) != 1 || tag[0].CommandTag.String() != "CREATE TABLE" {
		t.Fatalf("results %v, %v", tag, err)
	}
	var n int
	if err := p.connectDirect(t).QueryRow(ctx, "SELECT count(*) FROM tagged").Scan(&n); err != nil {
		t.Fatalf("the DO block did not create the table: %v", err)
	}
}

func TestInterceptorRowReleaser(t *testing.T) {
	ctx := context.Background()
	p := startToyProxy(t)
	conn := p.connect(t)
	want := []string{"7", "10", "9", "8", "6", "5", "4", "3", "2", "1"}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec, pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec} {
		rows, err := conn.Query(ctx, "SELECT g::text /*reverse*/ FROM generate_series(1, $1::int) g", mode, 10)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%v: rows %v, %v; want %v", mode, got, err, want)
		}
		if tag := rows.CommandTag().String(); tag != "SELECT 10" {
			t.Errorf("%v: tag %q", mode, tag)
		}
	}
	// A failing statement drops the held rows; the session goes on.
	if _, err := conn.Exec(ctx, "SELECT 1/(5-g) /*reverse*/ FROM generate_series(1, 9) g"); err == nil {
		t.Fatal("division by zero did not fail")
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT 3").Scan(&n); err != nil || n != 3 {
		t.Fatalf("after the failure: %d, %v", n, err)
	}
	// An error from Release at the end replaces CommandComplete; the
	// session goes on.
	_, err := conn.Exec(ctx, "SELECT 'fail' /*reverse*/ FROM generate_series(1, 3)")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22012" {
		t.Fatalf("Release error: got %v", err)
	}
	if err := conn.QueryRow(ctx, "SELECT 4").Scan(&n); err != nil || n != 4 {
		t.Fatalf("after the Release error: %d, %v", n, err)
	}
}

// TestUnnamedStaysPrepared: a rewritten statement the client parses as
// its unnamed statement at every execution stays prepared on the server
// from its second Parse, and binds, describes and fails as the client's
// unnamed statement would.
func TestUnnamedStaysPrepared(t *testing.T) {
	ctx := context.Background()
	p := startToyProxy(t)
	c := p.connect(t)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec} {
		for i := range 4 {
			arg := fmt.Sprintf("v%d", i)
			var got string
			if err := c.QueryRow(ctx, "SELECT $1::text || 'x' AS w /*upper*/", mode, arg).Scan(&got); err != nil {
				t.Fatalf("%v run %d: %v", mode, i+1, err)
			}
			if want := strings.ToUpper(arg) + "X"; got != want {
				t.Fatalf("%v run %d: %q, want %q", mode, i+1, got, want)
			}
			// A failing statement and a Query in between leave it usable.
			if _, err := c.Exec(ctx, "SELECT nosuch + $1::int /*upper*/", mode, 1); sqlState(err) != "42703" {
				t.Fatalf("%v run %d: a failing Parse gave %v", mode, i+1, err)
			}
			if _, err := c.Exec(ctx, "SELECT 1 / $1::int /*upper*/", mode, 0); sqlState(err) != "22012" {
				t.Fatalf("%v run %d: a failing execution gave %v", mode, i+1, err)
			}
			if _, err := c.Exec(ctx, "SELECT 1", pgx.QueryExecModeSimpleProtocol); err != nil {
				t.Fatal(err)
			}
		}
	}
	var n int
	for i := range 3 {
		var got string
		if err := c.QueryRow(ctx, "SELECT pg_sleep(0.02)::text || $1::text AS w /*upper*/", pgx.QueryExecModeExec, "s").Scan(&got); err != nil || got != "S" {
			t.Fatalf("slow statement, run %d: %q %v", i+1, got, err)
		}
	}
	// Two fast ones, and the slow one, prepared at its second run after
	// one slow run and bound only then: planned for its values from its
	// third, after two slow runs in a row.
	var slow string
	if err := c.QueryRow(ctx, "SELECT count(*) FILTER (WHERE statement NOT LIKE '%pg_sleep%'), coalesce(string_agg((generic_plans + custom_plans)::text, ',') FILTER (WHERE statement LIKE '%pg_sleep%'), 'none') FROM pg_prepared_statements WHERE name LIKE 'pgonion_side_%'", pgx.QueryExecModeSimpleProtocol).Scan(&n, &slow); err != nil || n != 2 || slow != "1" {
		t.Fatalf("server statements standing for unnamed ones: %d fast, the slow one's runs %s, %v; want 2 and 1", n, slow, err)
	}
}

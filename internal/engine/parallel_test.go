package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/engine"
)

// TestParallelDecryption: a result long enough to be decrypted by
// workers arrives complete and in the server's order, in both
// protocols, as plaintext PostgreSQL returns it; and an Execute with a
// row limit gets exactly its rows before PortalSuspended.
func TestParallelDecryption(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	plainDB := newEncDB(t)
	plain := plainDB.direct(t)
	enc := p.connect(t, pgx.QueryExecModeCacheStatement)
	const rows = 7000
	const ddl = "CREATE TABLE wide (id int, name text, amount numeric(10,2), day date, ok boolean, note varchar(20))"
	mustExec(t, enc, ddl)
	mustExec(t, plain, ddl)
	var data strings.Builder
	for i := range rows {
		note := `\N`
		if i%3 == 0 {
			note = fmt.Sprintf("n%d", i%11)
		}
		fmt.Fprintf(&data, "%d\tname %d\t%d.%02d\t2021-%02d-%02d\t%t\t%s\n", i, i%500, i, i%100, 1+i%12, 1+i%28, i%2 == 0, note)
	}
	for _, c := range []*pgx.Conn{enc, plain} {
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data.String()), "COPY wide FROM STDIN"); err != nil {
			t.Fatal(err)
		}
	}
	const q = "SELECT * FROM wide ORDER BY id"
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		want := orderedRows(t, plain, mode, q)
		before := engine.ParallelBatches()
		c := p.connect(t, mode)
		got := orderedRows(t, c, mode, q)
		if len(got) != len(want) {
			t.Fatalf("%v: %d rows, want %d", mode, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%v: row %d is %s, want %s", mode, i, got[i], want[i])
			}
		}
		if n := engine.ParallelBatches() - before; n == 0 {
			t.Errorf("%v: %d rows were all decrypted as they came, none by workers", mode, rows)
		}
	}

	// COPY TO STDOUT formats the rows the workers decrypted.
	before := engine.ParallelBatches()
	var proxied, direct strings.Builder
	const cq = "COPY (SELECT * FROM wide ORDER BY id) TO STDOUT WITH (FORMAT csv)"
	if _, err := enc.PgConn().CopyTo(ctx, &proxied, cq); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.PgConn().CopyTo(ctx, &direct, cq); err != nil {
		t.Fatal(err)
	}
	if proxied.String() != direct.String() {
		t.Errorf("%s: %d bytes through the proxy, %d directly, different", cq, proxied.Len(), direct.Len())
	}
	if engine.ParallelBatches() == before {
		t.Errorf("%s: no batch was decrypted by workers", cq)
	}

	// Execute with a row limit: each Execute's rows come before its
	// PortalSuspended, the last with its CommandComplete.
	c := p.connect(t, pgx.QueryExecModeCacheStatement)
	hc, err := c.PgConn().Hijack()
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Conn.Close()
	fe := hc.Frontend
	fe.Send(&pgproto3.Parse{Query: "SELECT id FROM wide ORDER BY id"})
	fe.Send(&pgproto3.Bind{ResultFormatCodes: []int16{0}})
	limits := []uint32{2500, 3000, 0}
	for _, n := range limits {
		fe.Send(&pgproto3.Execute{MaxRows: n})
	}
	fe.Send(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	next, got := 0, 0
	for step := 0; ; {
		m, err := fe.Receive()
		if err != nil {
			t.Fatalf("after %d rows: %v", next, err)
		}
		switch m := m.(type) {
		case *pgproto3.DataRow:
			if string(m.Values[0]) != fmt.Sprint(next) {
				t.Fatalf("row %d: id %s", next, m.Values[0])
			}
			next++
			got++
		case *pgproto3.PortalSuspended, *pgproto3.CommandComplete:
			want := int(limits[step])
			if want == 0 {
				want = rows - 5500
			}
			if got != want {
				t.Errorf("Execute %d (limit %d): %d rows, want %d", step, limits[step], got, want)
			}
			if _, done := m.(*pgproto3.CommandComplete); done != (step == len(limits)-1) {
				t.Errorf("Execute %d answered with %T", step, m)
			}
			step, got = step+1, 0
		case *pgproto3.ErrorResponse:
			t.Fatalf("error: %s", m.Message)
		case *pgproto3.ReadyForQuery:
			if next != rows {
				t.Errorf("%d rows in all, want %d", next, rows)
			}
			return
		}
	}
}

// orderedRows returns a query's rows as text, in the order they came.
func orderedRows(t *testing.T, c *pgx.Conn, mode pgx.QueryExecMode, sql string) []string {
	t.Helper()
	rs, err := c.Query(context.Background(), sql, mode)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		vals, err := rs.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%#v", vals))
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestParallelDecryptionBeforeServerError: when the server fails a long
// result part way, the rows it sent before the error reach the client
// before the error, as directly, including those held for the workers.
func TestParallelDecryptionBeforeServerError(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	plainDB := newEncDB(t)
	plain := plainDB.direct(t)
	enc := p.connect(t, pgx.QueryExecModeCacheStatement)
	// id is generated by the server, so stored plain: the server divides
	// by zero at id 6000, after 5,999 rows in the heap's order.
	const ddl = "CREATE TABLE failing (id serial, name text, amount numeric(10,2))"
	for _, c := range []*pgx.Conn{enc, plain} {
		mustExec(t, c, ddl)
		var data strings.Builder
		for i := range 7000 {
			fmt.Fprintf(&data, "name %d\t%d.%02d\n", i%500, i, i%100)
		}
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data.String()), "COPY failing (name, amount) FROM STDIN"); err != nil {
			t.Fatal(err)
		}
	}
	const q = "SELECT name, amount FROM failing WHERE 1 / (6000 - id) >= 0"
	// rowsBefore reads q's rows as they come and returns how many came
	// before the error, and the error's SQLSTATE.
	rowsBefore := func(c *pgx.Conn, simple bool) (int, string) {
		var rr *pgconn.ResultReader
		var mrr *pgconn.MultiResultReader
		if simple {
			mrr = c.PgConn().Exec(ctx, q)
			if !mrr.NextResult() {
				t.Fatalf("%s: no result: %v", q, mrr.Close())
			}
			rr = mrr.ResultReader()
		} else {
			rr = c.PgConn().ExecParams(ctx, q, nil, nil, nil, nil)
		}
		n := 0
		for rr.NextRow() {
			n++
		}
		_, err := rr.Close()
		if mrr != nil {
			if cerr := mrr.Close(); err == nil {
				err = cerr
			}
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: %d rows, then %v; want an error", q, n, err)
		}
		return n, pe.Code
	}
	for _, simple := range []bool{false, true} {
		wantN, wantCode := rowsBefore(plain, simple)
		before := engine.ParallelBatches()
		gotN, gotCode := rowsBefore(p.connect(t, pgx.QueryExecModeCacheStatement), simple)
		if gotN != wantN || gotCode != wantCode {
			t.Errorf("simple protocol %v: %d rows then %s through the proxy, %d rows then %s directly", simple, gotN, gotCode, wantN, wantCode)
		}
		if engine.ParallelBatches() == before {
			t.Errorf("simple protocol %v: no batch was decrypted by workers", simple)
		}
	}
}

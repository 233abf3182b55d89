package wire_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var execModes = []pgx.QueryExecMode{
	pgx.QueryExecModeCacheStatement,
	pgx.QueryExecModeCacheDescribe,
	pgx.QueryExecModeDescribeExec,
	pgx.QueryExecModeExec,
	pgx.QueryExecModeSimpleProtocol,
}

const pgxSchema = `
CREATE TABLE t (
  id int PRIMARY KEY, s smallint, b bigint, n numeric(20,5), f float8, txt text, vc varchar(10),
  ch char(3), ok boolean, d date, ts timestamp, tstz timestamptz, by bytea, j jsonb, arr int[], u uuid);
INSERT INTO t VALUES
  (1, -32768, 9223372036854775807, 12345.6789, 1.5, 'héllo wörld', 'abc', 'x', true, '2024-02-29',
   '2024-02-29 12:34:56.789', '2024-02-29 12:34:56+02', '\x00ff10', '{"a": [1, 2]}', '{1,NULL,3}',
   'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (3, 32767, -9223372036854775808, -0.00001, -0, '', '', '', false, '4713-01-01 BC', '294276-12-31 23:59:59',
   'infinity', '', 'null', '{}', '00000000-0000-0000-0000-000000000000');
`

type pgxQuery struct {
	sql  string
	args []any
}

var pgxQueries = []pgxQuery{
	{"SELECT * FROM t ORDER BY id", nil},
	{"SELECT * FROM t WHERE id = $1", []any{1}},
	{"SELECT id, txt FROM t WHERE txt = $1 OR vc = $2", []any{"héllo wörld", ""}},
	{"SELECT $1::int + $2::int AS sum, $3::text AS t, $4::bytea AS b", []any{2, 40, "x'y", []byte{0, 1, 2}}},
	{"SELECT generate_series(1, 1000) AS g", nil},
	{"SELECT count(*), sum(n), max(ts) FROM t", nil},
	{"SELECT repeat('x', 100000) AS big", nil},
	{"SELECT NULL::int AS n, ''::text AS e", nil},
}

// rowsOf runs q and returns every value of every row (or the error).
func rowsOf(ctx context.Context, c *pgx.Conn, mode pgx.QueryExecMode, q pgxQuery) ([][]any, []string, error) {
	rows, err := c.Query(ctx, q.sql, append([]any{mode}, q.args...)...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var names []string
	for _, fd := range rows.FieldDescriptions() {
		names = append(names, fmt.Sprintf("%s:%d", fd.Name, fd.DataTypeOID))
	}
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return nil, nil, err
		}
		out = append(out, v)
	}
	return out, names, rows.Err()
}

// TestPgxExecModesSameAsDirect runs the same queries directly and through
// the proxy in all five exec modes and compares rows, column names and
// types.
func TestPgxExecModesSameAsDirect(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, nil)
	direct := p.connectDirect(t)
	if _, err := direct.Exec(ctx, pgxSchema); err != nil {
		t.Fatal(err)
	}
	proxied := p.connect(t)
	for _, mode := range execModes {
		for _, q := range pgxQueries {
			t.Run(fmt.Sprintf("%v/%s", mode, q.sql), func(t *testing.T) {
				want, wantNames, err := rowsOf(ctx, direct, mode, q)
				if err != nil {
					t.Fatalf("direct: %v", err)
				}
				got, gotNames, err := rowsOf(ctx, proxied, mode, q)
				if err != nil {
					t.Fatalf("proxy: %v", err)
				}
				if !reflect.DeepEqual(gotNames, wantNames) {
					t.Fatalf("columns %v, want %v", gotNames, wantNames)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("rows differ:\n got %v\nwant %v", got, want)
				}
				if len(want) == 0 {
					t.Fatal("query returned no rows; the comparison proves nothing")
				}
			})
		}
	}
}

// TestPgxErrorsSameAsDirect checks that server errors reach the client
// unchanged and that the session stays usable afterwards, in every mode.
func TestPgxErrorsSameAsDirect(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, nil)
	direct := p.connectDirect(t)
	proxied := p.connect(t)
	for _, mode := range execModes {
		for _, sql := range []string{"SELECT 1/0", "SELECT * FROM no_such_table", "SELEC 1", "SELECT $1::int"} {
			var args []any = []any{mode}
			if sql == "SELECT $1::int" {
				args = append(args, "not a number")
			}
			_, errD := direct.Exec(ctx, sql, args...)
			_, errP := proxied.Exec(ctx, sql, args...)
			var pd, pp *pgconn.PgError
			if errors.As(errD, &pd) != errors.As(errP, &pp) {
				t.Fatalf("%v %q: direct %v, proxy %v", mode, sql, errD, errP)
			}
			if pd != nil && (pd.Code != pp.Code || pd.Message != pp.Message || pd.Position != pp.Position) {
				t.Fatalf("%v %q: direct %+v, proxy %+v", mode, sql, pd, pp)
			}
			if pd == nil && (errD == nil) != (errP == nil) {
				t.Fatalf("%v %q: direct %v, proxy %v", mode, sql, errD, errP)
			}
			var one int
			if err := proxied.QueryRow(ctx, "SELECT 1", mode).Scan(&one); err != nil || one != 1 {
				t.Fatalf("session unusable after %q: %v", sql, err)
			}
		}
	}
}

func TestPgxBatch(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, nil)
	c := p.connect(t)
	if _, err := c.Exec(ctx, "CREATE TABLE b (id int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range execModes {
		c := p.connectMode(t, "tester", mode)
		if _, err := c.Exec(ctx, "TRUNCATE b"); err != nil {
			t.Fatal(err)
		}
		batch := &pgx.Batch{}
		for i := range 100 {
			batch.Queue("INSERT INTO b VALUES ($1, $2)", i, fmt.Sprint("v", i))
		}
		batch.Queue("SELECT count(*), string_agg(v, ',' ORDER BY id) FROM b")
		batch.Queue("SELECT v FROM b WHERE id = $1", 42)
		br := c.SendBatch(ctx, batch)
		for i := range 100 {
			if _, err := br.Exec(); err != nil {
				t.Fatalf("%v: insert %d: %v", mode, i, err)
			}
		}
		var n int
		var all string
		if err := br.QueryRow().Scan(&n, &all); err != nil || n != 100 || len(all) < 100 {
			t.Fatalf("%v: count %d %v", mode, n, err)
		}
		var v string
		if err := br.QueryRow().Scan(&v); err != nil || v != "v42" {
			t.Fatalf("%v: got %q %v", mode, v, err)
		}
		if err := br.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A failing statement in the middle of a batch: PostgreSQL rolls back
	// the whole implicit transaction; so must the proxied session.
	if _, err := c.Exec(ctx, "TRUNCATE b"); err != nil {
		t.Fatal(err)
	}
	batch := &pgx.Batch{}
	batch.Queue("INSERT INTO b VALUES (1, 'a')")
	batch.Queue("INSERT INTO b VALUES (1, 'duplicate')")
	batch.Queue("INSERT INTO b VALUES (2, 'b')")
	if err := c.SendBatch(ctx, batch).Close(); err == nil {
		t.Fatal("duplicate key not reported")
	}
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM b").Scan(&n); err != nil || n != 0 {
		t.Fatalf("after failed batch: %d rows, %v; want 0", n, err)
	}
}

func TestPgxBinaryCopyFrom(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, nil)
	c := p.connect(t)
	if _, err := c.Exec(ctx, "CREATE TABLE cp (id int8, v text, ts timestamptz, b bytea)"); err != nil {
		t.Fatal(err)
	}
	const n = 20000
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(i), fmt.Sprintf("row %d", i), base.Add(time.Duration(i) * time.Second), []byte{byte(i), byte(i >> 8)}}
	}
	got, err := c.CopyFrom(ctx, pgx.Identifier{"cp"}, []string{"id", "v", "ts", "b"}, pgx.CopyFromRows(rows))
	if err != nil || got != n {
		t.Fatalf("CopyFrom = %d, %v", got, err)
	}
	var count, sum int64
	var last string
	err = p.connectDirect(t).QueryRow(ctx, "SELECT count(*), sum(id), max(v) FROM cp").Scan(&count, &sum, &last)
	if err != nil || count != n || sum != n*(n-1)/2 || last != "row 9999" {
		t.Fatalf("server has count=%d sum=%d max=%q err=%v", count, sum, last, err)
	}
}

func TestListenNotify(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := startProxy(t, nil)
	listener, sender := p.connect(t), p.connect(t)
	if _, err := listener.Exec(ctx, "LISTEN chan1"); err != nil {
		t.Fatal(err)
	}
	if _, err := sender.Exec(ctx, "SELECT pg_notify('chan1', 'hello')"); err != nil {
		t.Fatal(err)
	}
	n, err := listener.WaitForNotification(ctx)
	if err != nil || n.Channel != "chan1" || n.Payload != "hello" {
		t.Fatalf("notification %+v, %v", n, err)
	}
}

func TestNoticesRelayed(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, nil)
	var notices []string
	cfg, err := pgx.ParseConfig(p.url("tester"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Severity+": "+n.Message) }
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "DO $$ BEGIN RAISE WARNING 'w1'; RAISE NOTICE 'n2'; END $$"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"WARNING: w1", "NOTICE: n2"}; !reflect.DeepEqual(notices, want) {
		t.Fatalf("notices %v, want %v", notices, want)
	}
}

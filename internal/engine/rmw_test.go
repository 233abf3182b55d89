package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestUpdateExpressions: UPDATE ... SET c = <expression> over encrypted
// columns (Django's F() expressions, bulk_update's CASE), which the proxy
// computes by reading the rows first, leaves the table as plaintext
// PostgreSQL does and fails where it fails (CHECK, length, range), with
// the same command tags; statements in a transaction block and rolled
// back leave nothing.
func TestUpdateExpressions(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	plain := plainConn(t)
	const ddl = `CREATE TABLE upx (id serial PRIMARY KEY, n int CHECK (n >= 0), f float8, name text, price numeric(10,2), tag varchar(5), ok boolean, doc jsonb)`
	mustExec(t, c, ddl)
	mustExec(t, plain, "DROP TABLE IF EXISTS upx")
	mustExec(t, plain, ddl)
	const rows = `INSERT INTO upx (n, f, name, price, tag, ok) VALUES (1, 1.5, 'a', 10.00, 'x', true), (2, -2.25, 'b', 3.33, 'y', false),
		(3, 0, 'bb', 0.01, NULL, NULL), (4, NULL, NULL, NULL, 'w', true), (50, 1e10, 'long name', 99.99, 'v', false)`
	mustExec(t, c, rows)
	mustExec(t, plain, rows)
	for _, s := range []string{
		`UPDATE upx SET n = n * 2 WHERE id <= 3`,
		`UPDATE upx SET f = f + 1.5`,
		`UPDATE upx SET price = price * 1.1 WHERE name = 'b' OR name IS NULL`,
		`UPDATE upx SET n = n - 100 WHERE id = 1`,
		`UPDATE upx SET name = CASE WHEN id = 1 THEN 'x' WHEN id = 2 THEN 'y' ELSE name END WHERE id IN (1, 2)`,
		`UPDATE upx SET n = 42 + 42 WHERE id = 4`,
		`UPDATE upx SET tag = name WHERE id = 5`,
		`UPDATE upx SET tag = name WHERE id = 2`,
		`UPDATE upx SET n = n * 2, name = 'z', ok = true WHERE n > 40`,
		`UPDATE upx SET n = n + 1, f = f * n WHERE name = 'nothing'`,
		`UPDATE upx SET price = price + n, f = -f WHERE price < 50`,
		`UPDATE upx SET n = n * 1000000000 WHERE id = 5`,
		// Assignment casts round: double precision half to even,
		// numeric half away from zero.
		`UPDATE upx SET n = f * 2.5 WHERE f BETWEEN -10 AND 10`,
		`UPDATE upx SET n = price * 1.5 WHERE price < 50`,
		`UPDATE upx SET price = f / 3 WHERE f IS NOT NULL AND f < 1e6`,
		`UPDATE upx SET n = f * 1e10 WHERE f > 0`,
		// Django's F("integer") ** 2, F("float") ** 1.5.
		`UPDATE upx SET n = n ^ 2, f = f ^ 1.5 WHERE f > 0 AND n < 1000`,
		`UPDATE upx SET f = 2 ^ n WHERE id = 3`,
		// Django's bulk_update of a JSONField.
		`UPDATE upx SET doc = CASE WHEN id = 1 THEN '{"b": 1, "a": [1.50]}'::jsonb WHEN id = 2 THEN 'null'::jsonb WHEN id = 3 THEN NULL ELSE doc END WHERE id IN (1, 2, 3)`,
		`UPDATE upx SET doc = CASE WHEN id = 1 THEN doc ELSE '"x"'::jsonb END, name = doc::text WHERE id IN (1, 2)`,
		`UPDATE upx SET doc = '{bad'::jsonb WHERE id = 1`,
	} {
		gt, gerr := c.Exec(ctx, s)
		wt, werr := plain.Exec(ctx, s)
		if pgCode(gerr) != pgCode(werr) || gt.String() != wt.String() {
			t.Errorf("%s: through the proxy %q %v, plaintext %q %v", s, gt, gerr, wt, werr)
		}
		compareTables(t, c, plain, "SELECT * FROM upx ORDER BY id", s)
	}
	// A plain column computed from encrypted ones would store what the
	// server must not see: refused.
	if _, err := c.Exec(ctx, "UPDATE upx SET id = id + n WHERE id = 3"); pgCode(err) != "0A000" {
		t.Errorf("a plain column set from an encrypted one: %v, want 0A000", err)
	}
	if _, err := c.Exec(ctx, "UPDATE upx SET n = n * 2, id = id + n WHERE id = 3"); pgCode(err) != "0A000" {
		t.Errorf("a plain column set from an encrypted one, next to a computed column: %v, want 0A000", err)
	}
	// In a transaction block, rolled back.
	for _, conn := range []*pgx.Conn{c, plain} {
		mustExec(t, conn, "BEGIN")
		mustExec(t, conn, "UPDATE upx SET n = n + id * 3, name = name || 'x' WHERE ok = true")
		mustExec(t, conn, "UPDATE upx SET f = f / 2 WHERE n > 3")
	}
	compareTables(t, c, plain, "SELECT * FROM upx ORDER BY id", "in the transaction")
	for _, conn := range []*pgx.Conn{c, plain} {
		mustExec(t, conn, "ROLLBACK")
	}
	compareTables(t, c, plain, "SELECT * FROM upx ORDER BY id", "after ROLLBACK")
	// The extended protocol: the read runs at Bind, with the client's
	// parameters; outside and inside a transaction block, in a pipeline
	// after another statement of the same cycle (refused then: the read
	// would commit what ran before it), and with a parameter in WHERE.
	x := p.connect(t, pgx.QueryExecModeCacheStatement)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"UPDATE upx SET n = n * $1", []any{2}},
		{"UPDATE upx SET name = upper(name) || $1 WHERE id = $2", []any{"!", 1}},
		{"UPDATE upx SET n = n - $1, f = f + $2 WHERE n > $3", []any{1, 0.5, 2}},
		// By primary key: the row goes to the server as scalars.
		{"UPDATE upx SET n = n + $1, price = price * 2, tag = $2, ok = NOT ok WHERE id = $3", []any{5, "t", 2}},
		{"UPDATE upx AS u SET f = u.f * $1 WHERE $2 = u.id", []any{2.0, 3}},
		{"UPDATE upx SET n = n + 1 WHERE id = $1", []any{999}},
		{"UPDATE upx SET name = NULL || name, doc = doc WHERE id = $1 AND n > 0", []any{4}},
		{"UPDATE upx SET n = n + $1 WHERE id = 5", []any{7}},
		{"UPDATE upx SET tag = name || name WHERE id = $1", []any{5}}, // 22001
		{"UPDATE upx SET n = n - $1 WHERE id = $2", []any{1000, 3}},   // 23514
	} {
		gt, gerr := x.Exec(ctx, q.sql, q.args...)
		wt, werr := plain.Exec(ctx, q.sql, q.args...)
		if pgCode(gerr) != pgCode(werr) || gt.String() != wt.String() {
			t.Errorf("%s: through the proxy %q %v, plaintext %q %v", q.sql, gt, gerr, wt, werr)
		}
		compareTables(t, c, plain, "SELECT * FROM upx ORDER BY id", q.sql)
	}
	for _, conn := range []*pgx.Conn{x, plain} {
		mustExec(t, conn, "BEGIN")
		mustExec(t, conn, "UPDATE upx SET n = n + $1 WHERE id < $2", 10, 3)
		mustExec(t, conn, "UPDATE upx SET n = n * $1 WHERE id >= $2", 3, 3)
		mustExec(t, conn, "COMMIT")
	}
	compareTables(t, c, plain, "SELECT * FROM upx ORDER BY id", "after a transaction block")
	batch := &pgx.Batch{}
	batch.Queue("UPDATE upx SET ok = NOT ok WHERE id = $1", 1)
	batch.Queue("UPDATE upx SET n = n * $1", 5)
	if err := x.SendBatch(ctx, batch).Close(); pgCode(err) != "0A000" {
		t.Errorf("a computed UPDATE after another statement of its request cycle: %v, want 0A000", err)
	}
	compareTables(t, c, plain, "SELECT * FROM upx ORDER BY id", "after the refused batch")
}

// TestUpdateConcurrentRMW: UPDATEs the proxy computes, sent at once on
// one row by several sessions outside transaction blocks (simple and
// extended protocol), serialize as on PostgreSQL: the read's row locks
// last until the write, so none fails with 40001 and none is lost.
func TestUpdateConcurrentRMW(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	mustExec(t, c, "CREATE TABLE ctr (id int PRIMARY KEY, n int)")
	mustExec(t, c, "INSERT INTO ctr VALUES (1, 0), (2, 0)")
	const workers, each = 4, 15
	errs := make(chan error, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		mode := pgx.QueryExecModeSimpleProtocol
		if w%2 == 1 {
			mode = pgx.QueryExecModeCacheStatement
		}
		conn := p.connect(t, mode)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				// abs(n) + 1: no Add onion computes it, the proxy does.
				if _, err := conn.Exec(ctx, "UPDATE ctr SET n = abs(n) + $1 WHERE id = $2", 1, 1); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent computed UPDATE: %v", err)
	}
	var n int
	if err := c.QueryRow(ctx, "SELECT n FROM ctr WHERE id = 1").Scan(&n); err != nil || n != workers*each {
		t.Errorf("after %d concurrent increments: n = %d (%v)", workers*each, n, err)
	}
}

// TestRMWLetsForeignKeyChecksThrough: while a computed UPDATE of a
// parent row's non-key column is open, a child row referencing it can be
// inserted, as in plaintext PostgreSQL (the UPDATE's lock, FOR NO KEY
// UPDATE, and the foreign-key check's, FOR KEY SHARE, do not conflict).
// The same holds for an UPDATE ... FROM, whose join the proxy runs as a
// locking subquery first (rewrite.JoinAsSubquery).
func TestRMWLetsForeignKeyChecksThrough(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	updates := []struct {
		name, sql string
		args      []any
	}{
		{"computed", "UPDATE fkparent SET n = abs(n) + $1 WHERE id = $2", []any{1, 1}},
		{"from", "UPDATE fkparent SET n = n + 1 FROM fkother o WHERE fkparent.id = o.pid AND o.tag = $1", []any{"a"}},
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		for _, u := range updates {
			t.Run(mode.String()+"/"+u.name, func(t *testing.T) {
				a, b := p.connect(t, mode), p.connect(t, mode)
				mustExec(t, a, "DROP TABLE IF EXISTS fkchild, fkparent, fkother")
				mustExec(t, a, "CREATE TABLE fkparent (id int PRIMARY KEY, n int)")
				mustExec(t, a, "CREATE TABLE fkchild (id int, pid int REFERENCES fkparent (id))")
				mustExec(t, a, "CREATE TABLE fkother (pid int REFERENCES fkparent (id), tag text)")
				mustExec(t, a, "INSERT INTO fkparent VALUES (1, 0)")
				mustExec(t, a, "INSERT INTO fkother VALUES (1, 'a')")
				mustExec(t, a, "BEGIN")
				if tag, err := a.Exec(ctx, u.sql, u.args...); err != nil || tag.RowsAffected() != 1 {
					t.Fatalf("%s: %v, %v", u.sql, tag, err)
				}
				bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				if _, err := b.Exec(bctx, "INSERT INTO fkchild VALUES ($1, $2)", 1, 1); err != nil {
					t.Fatalf("INSERT of a child while its parent's UPDATE is open: %v", err)
				}
				mustExec(t, a, "COMMIT")
				var n, children int
				if err := a.QueryRow(ctx, "SELECT n, (SELECT count(*) FROM fkchild WHERE pid = 1) FROM fkparent WHERE id = 1").Scan(&n, &children); err != nil || n != 1 || children != 1 {
					t.Errorf("after the UPDATE and the INSERT: n = %d, children %d (%v)", n, children, err)
				}
			})
		}
	}
}

// TestRMWGenericPlan: the UPDATE a prepared read-modify-write binds is
// one the server plans once (a generic plan) rather than at every
// execution. By primary key its row arrives as scalar parameters; by any
// other condition its rows arrive as arrays, whose length the planner
// would otherwise guess (migrations/0023_row_numbers.sql, 0024). The
// proxy's own read stays prepared too (wire's side statements).
func TestRMWGenericPlan(t *testing.T) {
	for _, tc := range []struct {
		name, ddl, prefix string
	}{
		{"by primary key", "CREATE TABLE gen (id int PRIMARY KEY, n int)", "UPDATE gen SET"},
		{"by other columns", "CREATE TABLE gen (id int, n int)", "WITH pgonion_v"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := newEncDB(t)
			p := startProxy(t, db, nil)
			c := p.connect(t, pgx.QueryExecModeCacheStatement)
			mustExec(t, c, tc.ddl)
			mustExec(t, c, "INSERT INTO gen SELECT i, 0 FROM generate_series(1, 20) i")
			const runs = 12
			for i := range runs {
				tag, err := c.Exec(ctx, "UPDATE gen SET n = abs(n) + $1 WHERE id = $2", 1, 1+i%3)
				if err != nil || tag.RowsAffected() != 1 {
					t.Fatalf("run %d: %v, %v", i, tag, err)
				}
			}
			// No row: the UPDATE matches none.
			if tag, err := c.Exec(ctx, "UPDATE gen SET n = abs(n) + $1 WHERE id = $2", 1, 99); err != nil || tag.RowsAffected() != 0 {
				t.Fatalf("UPDATE of no row: %v, %v", tag, err)
			}
			var n int
			if err := c.QueryRow(ctx, "SELECT sum(n) FROM gen").Scan(&n); err != nil || n != runs {
				t.Fatalf("sum after %d increments: %d, %v", runs, n, err)
			}
			// The session's prepared statements on the server, the
			// client's and the proxy's.
			rows, err := c.Query(ctx, "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements", pgx.QueryExecModeSimpleProtocol)
			if err != nil {
				t.Fatal(err)
			}
			found := 0
			for rows.Next() {
				var sql string
				var generic, custom int64
				if err := rows.Scan(&sql, &generic, &custom); err != nil {
					t.Fatal(err)
				}
				switch {
				case strings.HasPrefix(sql, tc.prefix):
					found++
					// PostgreSQL plans the first five executions for
					// their parameters, then compares.
					if generic < runs-5 {
						t.Errorf("the UPDATE was planned %d times for its parameters, generically %d times, in %d runs", custom, generic, runs+1)
					}
				case strings.Contains(sql, "FOR NO KEY UPDATE OF gen"):
					found++
					// Prepared the second time it ran.
					if generic+custom != runs {
						t.Errorf("the read ran %d times as one prepared statement, want %d", generic+custom, runs)
					}
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if found != 2 {
				t.Errorf("found %d of the UPDATE (%s...) and its read among the prepared statements, want both", found, tc.prefix)
			}
		})
	}
}

// TestPreparedNameReused: a statement deallocated by SQL and prepared
// again under its name (psycopg's DEALLOCATE) runs as the new one.
func TestPreparedNameReused(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	mustExec(t, c, "CREATE TABLE pa (id int, a text)")
	mustExec(t, c, "CREATE TABLE pb (id int, b int, c text)")
	mustExec(t, c, "INSERT INTO pa VALUES (1, 'one'), (2, 'two')")
	mustExec(t, c, "INSERT INTO pb VALUES (1, 10, 'ten'), (2, 20, 'twenty')")
	pc := c.PgConn()
	for i, q := range []struct{ sql, want string }{
		{"SELECT a FROM pa WHERE a = $1", "two"},
		{"SELECT c FROM pb WHERE b > $1 ORDER BY b LIMIT 1", "twenty"},
		{"SELECT c || '!' FROM pb WHERE c = $1", "two!"},
	} {
		if i > 0 {
			if err := pc.Exec(ctx, "DEALLOCATE s").Close(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := pc.Prepare(ctx, "s", q.sql, nil); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
		arg := map[int]string{0: "two", 1: "15", 2: "two"}[i]
		if i == 2 {
			mustExec(t, c, "UPDATE pb SET c = 'two' WHERE id = 2")
		}
		res := pc.ExecPrepared(ctx, "s", [][]byte{[]byte(arg)}, nil, nil).Read()
		if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) != q.want {
			t.Errorf("%s prepared as s after DEALLOCATE: %v %q, want %q", q.sql, res.Err, res.Rows, q.want)
		}
	}
}

// TestHeldReadAfterFailedParse: when the server rejects the client's
// Parse of an UPDATE the proxy computes, sent with its Bind and Execute
// in one request cycle (as psycopg and pgx send an unnamed statement),
// the read the Bind would run ahead is not sent into the failed cycle,
// where it would never be answered: the client gets the server's error.
func TestHeldReadAfterFailedParse(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	mustExec(t, c, "CREATE TABLE hr (id serial, n int)")
	mustExec(t, c, "INSERT INTO hr (n) VALUES (5)")
	for _, sql := range []string{
		"UPDATE hr SET n = n * $1, id = nosuch + 0 WHERE id = $2", // the server's UPDATE fails at Parse
		"UPDATE hr SET n = n * $1 WHERE nosuch = $2",              // the read fails
		"UPDATE hr SET n = n * $1 WHERE id = $2::nosuchtype",
	} {
		tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		res := c.PgConn().ExecParams(tctx, sql, [][]byte{[]byte("2"), []byte("1")}, nil, nil, nil).Read()
		timedOut := tctx.Err() != nil
		cancel()
		if code := pgCode(res.Err); (code != "42703" && code != "42704") || timedOut {
			t.Errorf("%s: %v, want the server's error", sql, res.Err)
		}
		if err := c.Ping(ctx); err != nil {
			t.Fatalf("the session after %s: %v", sql, err)
		}
	}
	if got := queryStrings(t, c, "SELECT n FROM hr"); len(got) != 1 || got[0][0] != "5" {
		t.Errorf("after the failed UPDATEs: %v", got)
	}
}

// compareTables fails unless q returns the same rows through both.
func compareTables(t *testing.T, enc, plain *pgx.Conn, q, stage string) {
	t.Helper()
	got, want := collectAll(t, enc, q), collectAll(t, plain, q)
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows through the proxy, %d plaintext", stage, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: row %d through the proxy %s, plaintext %s", stage, i, got[i], want[i])
		}
	}
}

// TestDMLWithSubqueries: DELETE and UPDATE filtered by subqueries over
// other tables with encrypted columns (Django's deletes and updates of
// related rows) run as on plaintext PostgreSQL: the proxy evaluates the
// subqueries first, in the simple protocol, then the statement names its
// table alone.
func TestDMLWithSubqueries(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	plain := plainConn(t)
	for _, conn := range []*pgx.Conn{c, plain} {
		for _, s := range []string{
			"DROP TABLE IF EXISTS sq_b, sq_a",
			"CREATE TABLE sq_a (id serial PRIMARY KEY, n int, name text)",
			"CREATE TABLE sq_b (id serial PRIMARY KEY, a_id int REFERENCES sq_a (id), tag text, qty int)",
			"INSERT INTO sq_a (n, name) VALUES (1, 'x'), (2, 'y'), (3, 'z'), (4, 'y')",
			"INSERT INTO sq_b (a_id, tag, qty) VALUES (1, 'p', 10), (2, 'q', 20), (3, 'r', 30), (4, 's', 40), (2, 't', 50)",
		} {
			mustExec(t, conn, s)
		}
	}
	for _, s := range []string{
		`UPDATE sq_b SET tag = 'u' WHERE a_id IN (SELECT U0.id FROM sq_a U0 WHERE U0.name = 'y')`,
		`UPDATE sq_b SET qty = qty * 2 WHERE a_id IN (SELECT id FROM sq_a WHERE n >= 3) AND tag <> 'u'`,
		`DELETE FROM sq_b WHERE a_id IN (SELECT U0.id FROM sq_a U0 WHERE U0.n = 1)`,
		`DELETE FROM sq_b WHERE qty > (SELECT max(n) * 10 FROM sq_a)`,
		`DELETE FROM sq_b WHERE EXISTS (SELECT 1 FROM sq_a WHERE name = 'nobody')`,
		`UPDATE sq_b SET tag = 'j' FROM sq_a a WHERE sq_b.a_id = a.id AND a.n > 2`,
		`UPDATE sq_b b SET qty = b.qty * 2 FROM sq_a WHERE b.a_id = sq_a.id AND sq_a.name = 'y'`,
		`DELETE FROM sq_b USING sq_a WHERE sq_b.a_id = sq_a.id AND sq_a.name = 'z'`,
	} {
		gt, gerr := c.Exec(ctx, s)
		wt, werr := plain.Exec(ctx, s)
		if gerr != nil || werr != nil || gt.String() != wt.String() {
			t.Errorf("%s: through the proxy %q %v, plaintext %q %v", s, gt, gerr, wt, werr)
		}
		compareTables(t, c, plain, "SELECT * FROM sq_b ORDER BY id", s)
	}
	// The extended protocol (Django with server-side binding): the
	// subqueries run at each Bind with the client's parameters, their
	// results bound as parameters of a statement parsed once; outside
	// and inside a transaction block, prepared and executed twice.
	x := p.connect(t, pgx.QueryExecModeCacheStatement)
	for _, conn := range []*pgx.Conn{c, plain} {
		mustExec(t, conn, "INSERT INTO sq_b (a_id, tag, qty) VALUES (1, 'p', 11), (2, 'q', 21), (3, 'r', 31), (4, 's', 41), (2, 't', 51), (3, 'v\"w', 61)")
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE sq_b SET tag = $1 WHERE a_id IN (SELECT U0.id FROM sq_a U0 WHERE U0.name = $2)`, []any{"e1", "y"}},
		{`UPDATE sq_b SET tag = $1 WHERE a_id IN (SELECT U0.id FROM sq_a U0 WHERE U0.name = $2)`, []any{"e2", "z"}},
		{`UPDATE sq_b SET tag = $1 WHERE a_id NOT IN (SELECT id FROM sq_a WHERE n >= $2) AND tag <> $3`, []any{"e3", 3, "e1"}},
		{`DELETE FROM sq_b WHERE a_id IN (SELECT U0.id FROM sq_a U0 WHERE U0.name = $1 AND U0.n > $2)`, []any{"y", 3}},
		{`DELETE FROM sq_b WHERE qty > (SELECT max(n) * $1 FROM sq_a WHERE name <> $2)`, []any{15, "q"}},
		{`DELETE FROM sq_b WHERE EXISTS (SELECT 1 FROM sq_a WHERE name = $1) AND tag = $2`, []any{"x", "e2"}},
		{`DELETE FROM sq_b WHERE a_id IN (SELECT U0.id FROM sq_a U0 WHERE U0.name = $1)`, []any{"nobody"}},
		// DELETE ... USING and UPDATE ... FROM: the join as a subquery.
		{`UPDATE sq_b SET tag = $1 FROM sq_a a WHERE sq_b.a_id = a.id AND a.n > $2`, []any{"j1", 2}},
		{`UPDATE sq_b b SET qty = b.qty * $1 FROM sq_a WHERE b.a_id = sq_a.id AND sq_a.name = $2`, []any{3, "z"}},
		{`DELETE FROM sq_b USING sq_a WHERE sq_b.a_id = sq_a.id AND sq_a.name = $1 AND sq_b.qty > $2`, []any{"z", 40}},
	} {
		for _, conn := range []*pgx.Conn{x, plain} {
			mustExec(t, conn, "BEGIN")
			mustExec(t, conn, q.sql, q.args...)
			mustExec(t, conn, "COMMIT")
		}
		compareTables(t, c, plain, "SELECT * FROM sq_b ORDER BY id", q.sql)
		gt, gerr := x.Exec(ctx, q.sql, q.args...)
		wt, werr := plain.Exec(ctx, q.sql, q.args...)
		if gerr != nil || werr != nil || gt.String() != wt.String() {
			t.Errorf("%s: through the proxy %q %v, plaintext %q %v", q.sql, gt, gerr, wt, werr)
		}
		compareTables(t, c, plain, "SELECT * FROM sq_b ORDER BY id", q.sql)
	}
	// A value read from the joined table: refused.
	if _, err := c.Exec(ctx, `UPDATE sq_b SET tag = sq_a.name FROM sq_a WHERE sq_b.a_id = sq_a.id`); pgCode(err) != "0A000" {
		t.Errorf("UPDATE ... FROM setting a value of the joined table: %v, want 0A000", err)
	}
	// A subquery's decrypted result compared with an encrypted column:
	// the proxy encrypts it again (= ANY of DET ciphertexts).
	q := `DELETE FROM sq_b WHERE tag IN (SELECT name FROM sq_a WHERE n = $1)`
	gt, gerr := x.Exec(ctx, q, 2)
	wt, werr := plain.Exec(ctx, q, 2)
	if gerr != nil || werr != nil || gt.String() != wt.String() {
		t.Errorf("%s: through the proxy %q %v, plaintext %q %v", q, gt, gerr, wt, werr)
	}
	compareTables(t, c, plain, "SELECT * FROM sq_b ORDER BY id", q)
	// Compared with a plain column, it would reach the server as a
	// parameter in plaintext: refused.
	if _, err := x.Exec(ctx, `DELETE FROM sq_b WHERE a_id IN (SELECT n FROM sq_a WHERE name = $1)`, "x"); pgCode(err) != "0A000" {
		t.Errorf("a decrypted subquery result compared with a plain column: %v, want 0A000", err)
	}
}

// TestInsertSelect: INSERT ... SELECT from plain and encrypted tables
// (the proxy runs the SELECT first and inserts its rows as VALUES),
// with ON CONFLICT, RETURNING, no rows, and inside a transaction block,
// stores and returns what plaintext PostgreSQL does; a value of another
// type for an encrypted column is refused, not misread.
func TestInsertSelect(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	plain := plainConn(t)
	mustExec(t, plain, "DROP TABLE IF EXISTS is_src, is_dst, is_plain")
	for _, conn := range []*pgx.Conn{c, plain} {
		mustExec(t, conn, "CREATE TABLE is_src (id int PRIMARY KEY, n int, name text, d date)")
		mustExec(t, conn, "CREATE TABLE is_dst (id int PRIMARY KEY, n bigint, name varchar(5), d date, note text)")
		mustExec(t, conn, "INSERT INTO is_src VALUES (1, 10, 'a', '2020-01-01'), (2, 20, 'bb', NULL), (3, NULL, 'toolong', '2021-02-03'), (4, 40, NULL, '2022-12-31')")
	}
	for _, conn := range []*pgx.Conn{db.direct(t), plain} {
		mustExec(t, conn, "CREATE TABLE is_plain (k int, label text)")
		mustExec(t, conn, "INSERT INTO is_plain VALUES (100, 'p1'), (101, 'p2'), (102, NULL)")
	}
	for _, s := range []string{
		`INSERT INTO is_dst (id, n, name, d) SELECT id, n, name, d FROM is_src WHERE id <= 2`,
		`INSERT INTO is_dst SELECT id + 10, n, name, d FROM is_src WHERE n > 15 ORDER BY id LIMIT 1`,
		`INSERT INTO is_dst (id, name, note) SELECT k, label, 'from plain' FROM is_plain`,
		`INSERT INTO is_dst (id, name) SELECT id, name FROM is_src WHERE id = 3`,
		`INSERT INTO is_dst (id, n) SELECT id, n FROM is_src ON CONFLICT (id) DO NOTHING RETURNING id, n`,
		`INSERT INTO is_dst (id, n) SELECT id, n FROM is_src WHERE false RETURNING id, n, name`,
		`INSERT INTO is_dst (id, n, d) SELECT k + 100, k, '2024-05-06'::date FROM is_plain WHERE label = 'p2' RETURNING *`,
	} {
		got, gerr := queryResult(ctx, c, s)
		want, werr := queryResult(ctx, plain, s)
		if pgCode(gerr) != pgCode(werr) || got != want {
			t.Errorf("%s:\nthrough the proxy %q %v\nplaintext %q %v", s, got, gerr, want, werr)
		}
		compareTables(t, c, plain, "SELECT * FROM is_dst ORDER BY id", s)
	}
	for _, conn := range []*pgx.Conn{c, plain} {
		mustExec(t, conn, "BEGIN")
		mustExec(t, conn, "INSERT INTO is_src VALUES (9, 90, 'new', NULL)")
		mustExec(t, conn, "INSERT INTO is_dst (id, n, name) SELECT id, n, name FROM is_src WHERE id = 9")
	}
	compareTables(t, c, plain, "SELECT * FROM is_dst ORDER BY id", "in a transaction, from its own write")
	for _, conn := range []*pgx.Conn{c, plain} {
		mustExec(t, conn, "ROLLBACK")
	}
	compareTables(t, c, plain, "SELECT * FROM is_dst ORDER BY id", "after ROLLBACK")
	// A date for an encrypted text column, or text (an untyped literal
	// looks the same) for an encrypted date column: refused (the proxy
	// would read the text, the server would cast or refuse).
	for _, s := range []string{
		"INSERT INTO is_dst (id, name) SELECT id + 50, d FROM is_src WHERE id = 1",
		"INSERT INTO is_dst (id, d) SELECT 60, '2024-05-06'",
	} {
		if _, err := c.Exec(ctx, s); pgCode(err) != "0A000" {
			t.Errorf("%s: %v, want 0A000", s, err)
		}
	}
}

// queryResult runs sql as a simple query and returns its command tag
// and rows as text.
func queryResult(ctx context.Context, conn *pgx.Conn, sql string) (string, error) {
	return queryResultArgs(ctx, conn, sql, pgx.QueryExecModeSimpleProtocol)
}

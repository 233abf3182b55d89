package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestDefaultExpressions: DEFAULT expressions of encrypted columns
// (now(), statement_timestamp(), CURRENT_DATE, gen_random_uuid(), a
// constant expression) are computed by the proxy as PostgreSQL computes
// them: now() is the server's transaction start, the same for every row
// of a transaction, in both protocols; uuids differ per row and per
// execution of a prepared statement; ALTER COLUMN SET/DROP DEFAULT
// applies to later rows.
func TestDefaultExpressions(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	x := p.connect(t, pgx.QueryExecModeCacheStatement)
	for _, conn := range []*pgx.Conn{c, x} {
		mustExec(t, conn, "SET TIME ZONE 'Pacific/Kiritimati'") // UTC+14: the date differs from UTC's
	}
	mustExec(t, c, `CREATE TABLE dx (id serial PRIMARY KEY, n int DEFAULT 7, created timestamptz DEFAULT now(),
		stamp timestamptz DEFAULT statement_timestamp(), day date DEFAULT CURRENT_DATE, local timestamp DEFAULT LOCALTIMESTAMP(0),
		u uuid DEFAULT gen_random_uuid(), label text DEFAULT lower('ABC') || '-x')`)

	// In a transaction block: every row's now() is the block's.
	var txNow time.Time
	var today string
	mustExec(t, c, "BEGIN")
	if err := c.QueryRow(ctx, "SELECT now(), CURRENT_DATE::text").Scan(&txNow, &today); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "INSERT INTO dx (n) VALUES (1), (2)")
	mustExec(t, c, "INSERT INTO dx (n, label) VALUES (3, DEFAULT)")
	mustExec(t, c, "COMMIT")
	mustExec(t, x, "BEGIN")
	var xNow time.Time
	if err := x.QueryRow(ctx, "SELECT now()").Scan(&xNow); err != nil {
		t.Fatal(err)
	}
	mustExec(t, x, "INSERT INTO dx (n) VALUES ($1)", 4)
	mustExec(t, x, "INSERT INTO dx (n) VALUES ($1)", 5)
	mustExec(t, x, "COMMIT")
	type row struct {
		n              int
		created, stamp time.Time
		day, local, u  string
		label          *string
	}
	read := func(where string) []row {
		t.Helper()
		rows, err := c.Query(ctx, "SELECT n, created, stamp, day::text, local::text, u::text, label FROM dx WHERE "+where+" ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			err := r.Scan(&x.n, &x.created, &x.stamp, &x.day, &x.local, &x.u, &x.label)
			return x, err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	uuids := map[string]bool{}
	for _, r := range read("n <= 5") {
		want := txNow
		if r.n >= 4 {
			want = xNow
		}
		if !r.created.Equal(want) {
			t.Errorf("row %d: created %v, want the transaction's now() %v", r.n, r.created, want)
		}
		if r.stamp.Before(want) || r.stamp.After(want.Add(time.Minute)) {
			t.Errorf("row %d: statement_timestamp() %v, transaction start %v", r.n, r.stamp, want)
		}
		if r.day != today {
			t.Errorf("row %d: CURRENT_DATE %s, the server's %s", r.n, r.day, today)
		}
		if wantLocal := want.In(mustZone(t, "Pacific/Kiritimati")).Round(time.Second).Format("2006-01-02 15:04:05"); r.local != wantLocal {
			t.Errorf("row %d: LOCALTIMESTAMP(0) %s, want %s", r.n, r.local, wantLocal)
		}
		if r.label == nil || *r.label != "abc-x" {
			t.Errorf("row %d: label %v, want abc-x", r.n, r.label)
		}
		if uuids[r.u] || len(r.u) != 36 || r.u[14] != '4' {
			t.Errorf("row %d: gen_random_uuid() %s repeated or not version 4", r.n, r.u)
		}
		uuids[r.u] = true
	}

	// Outside a block: the INSERT's own transaction, between the times
	// around it; a prepared INSERT computes them at each execution.
	var before, after time.Time
	if err := c.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&before); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "INSERT INTO dx (n) VALUES (10)")
	mustExec(t, x, "INSERT INTO dx (n) VALUES ($1)", 11)
	time.Sleep(10 * time.Millisecond)
	mustExec(t, x, "INSERT INTO dx (n) VALUES ($1)", 12)
	mustExec(t, x, "INSERT INTO dx (n) SELECT * FROM UNNEST($1::int[])", []int32{13, 14})
	if err := c.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&after); err != nil {
		t.Fatal(err)
	}
	rs := read("n >= 10")
	if len(rs) != 5 {
		t.Fatalf("%d rows, want 5", len(rs))
	}
	for i, r := range rs {
		if r.created.Before(before) || r.created.After(after) {
			t.Errorf("row %d: now() %v outside [%v, %v]", r.n, r.created, before, after)
		}
		if i > 0 && r.n != 14 && !r.created.After(rs[i-1].created) {
			t.Errorf("row %d: now() %v not after the previous statement's %v", r.n, r.created, rs[i-1].created)
		}
		if uuids[r.u] {
			t.Errorf("row %d: uuid %s repeated", r.n, r.u)
		}
		uuids[r.u] = true
	}
	if !rs[3].created.Equal(rs[4].created) {
		t.Errorf("one bulk INSERT's rows: now() %v and %v", rs[3].created, rs[4].created)
	}

	// DEFAULT in UPDATE, ALTER COLUMN SET/DROP DEFAULT.
	mustExec(t, c, "UPDATE dx SET label = 'changed' WHERE n = 10")
	mustExec(t, c, "UPDATE dx SET label = DEFAULT WHERE n = 10")
	mustExec(t, c, "ALTER TABLE dx ALTER COLUMN label SET DEFAULT upper('q') || $$'s$$")
	mustExec(t, c, "INSERT INTO dx (n) VALUES (20)")
	mustExec(t, c, "ALTER TABLE dx ALTER COLUMN label DROP DEFAULT")
	mustExec(t, x, "INSERT INTO dx (n) VALUES ($1)", 21)
	got := queryStrings(t, c, "SELECT n, label FROM dx WHERE n IN (10, 20, 21) ORDER BY n")
	want := [][]string{{"10", "abc-x"}, {"20", "Q's"}, {"21", "<nil>"}}
	if len(got) != len(want) || got[0][1] != want[0][1] || got[1][1] != want[1][1] || got[2][1] != want[2][1] {
		t.Errorf("after UPDATE SET DEFAULT and ALTER COLUMN SET/DROP DEFAULT: %v, want %v", got, want)
	}

	// now() in an UPDATE the proxy computes, in a transaction block.
	for _, conn := range []*pgx.Conn{c, x} {
		mustExec(t, conn, "BEGIN")
		var now time.Time
		if err := conn.QueryRow(ctx, "SELECT now()").Scan(&now); err != nil {
			t.Fatal(err)
		}
		mustExec(t, conn, "UPDATE dx SET n = n * 2, stamp = now() WHERE n = $1", 11)
		var stamp time.Time
		if err := conn.QueryRow(ctx, "SELECT stamp FROM dx WHERE n = 22").Scan(&stamp); err != nil || !stamp.Equal(now) {
			t.Errorf("UPDATE SET stamp = now(): %v (%v), want %v", stamp, err, now)
		}
		mustExec(t, conn, "ROLLBACK")
	}

	// now() in a WHERE the proxy computes (split execution reads the
	// server's time before the statement runs), in both protocols.
	var total int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM dx").Scan(&total); err != nil {
		t.Fatal(err)
	}
	for _, conn := range []*pgx.Conn{c, x} {
		for q, want := range map[string]int{
			"SELECT count(*) FROM dx WHERE created <= now()":                              total,
			"SELECT count(*) FROM dx WHERE created > now() - interval '1 hour'":           total,
			"SELECT count(*) FROM dx WHERE created > now() + interval '1 day'":            0,
			"SELECT count(*) FROM dx WHERE day BETWEEN CURRENT_DATE - 1 AND CURRENT_DATE": total,
		} {
			var n int
			if err := conn.QueryRow(ctx, q).Scan(&n); err != nil || n != want {
				t.Errorf("%s: %d (%v), want %d", q, n, err, want)
			}
		}
	}

	// What the proxy cannot compute is refused when the table is made.
	for _, ddl := range []string{
		"CREATE TABLE dbad (a text DEFAULT current_user)",
		"CREATE TABLE dbad (a text DEFAULT no_such_function())",
		"CREATE TABLE dbad (a timetz DEFAULT current_time)",
	} {
		if _, err := c.Exec(ctx, ddl); pgCode(err) != "0A000" {
			t.Errorf("%s: %v, want 0A000", ddl, err)
		}
	}
	// In a pipeline after another statement, the proxy cannot read the
	// server's transaction time first: refused, never guessed.
	batch := &pgx.Batch{}
	batch.Queue("INSERT INTO dx (n) VALUES ($1)", 30)
	batch.Queue("INSERT INTO dx (n) VALUES ($1)", 31)
	if err := x.SendBatch(ctx, batch).Close(); pgCode(err) != "0A000" {
		t.Errorf("a second INSERT computing now() in one request cycle: %v, want 0A000", err)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

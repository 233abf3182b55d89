package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// peelPolicy keeps id plain (so tests can name rows) and gives every other
// column the default policy: encrypted with every onion of its type, each
// at RND until a query needs it peeled. Columns secret and secret_day are
// sensitive.
func peelPolicy(table, column string) rewrite.ColumnPolicy {
	switch column {
	case "id":
		return rewrite.ColumnPolicy{Policy: catalog.Plain}
	case "secret", "secret_day":
		return rewrite.ColumnPolicy{Policy: catalog.Sensitive}
	}
	return rewrite.ColumnPolicy{Policy: catalog.Encrypted}
}

const peelDDL = "CREATE TABLE items (id int, name text, day date, secret text, secret_day date)"

// peelLoad creates items through the proxy and a plaintext copy,
// plain_items, directly on the server, and loads the same n rows into both
// (COPY). Names repeat every 200 rows and days every 1000.
func peelLoad(t *testing.T, db *encDB, enc *pgx.Conn, n int) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	direct := db.direct(t)
	mustExec(t, enc, peelDDL)
	mustExec(t, direct, strings.Replace(peelDDL, "items", "plain_items", 1))
	var b strings.Builder
	day0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		day := day0.AddDate(0, 0, i%1000).Format("2006-01-02")
		fmt.Fprintf(&b, "%d\tname-%03d\t%s\tsecret %d\t%s\n", i, i%200, day, i%7, day)
	}
	if _, err := enc.PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY items FROM STDIN"); err != nil {
		t.Fatalf("COPY through the proxy: %v", err)
	}
	if _, err := direct.PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY plain_items FROM STDIN"); err != nil {
		t.Fatalf("COPY directly: %v", err)
	}
	return direct
}

// peelIDs runs a query returning ids and returns them sorted.
func peelIDs(ctx context.Context, conn *pgx.Conn, sql string, args ...any) ([]int, error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	return ids, nil
}

// peelSame runs sql through the proxy on items and directly on
// plain_items, and fails unless both return the same ids (and at least
// one).
func peelSame(t *testing.T, enc, direct *pgx.Conn, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	got, err := peelIDs(ctx, enc, sql, args...)
	if err != nil {
		t.Fatalf("through the proxy: %s %v: %v", sql, args, err)
	}
	want, err := peelIDs(ctx, direct, strings.ReplaceAll(sql, "FROM items", "FROM plain_items"), args...)
	if err != nil {
		t.Fatalf("directly: %s %v: %v", sql, args, err)
	}
	if len(want) == 0 {
		t.Fatalf("%s %v: the plaintext answer is empty: a useless check", sql, args)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s %v: through the proxy %d ids %v..., want %d ids %v...", sql, args, len(got), head(got), len(want), head(want))
	}
}

func head(ids []int) []int { return ids[:min(len(ids), 10)] }

// peelLayer reads the recorded layer of an onion from the catalog on the
// server.
func peelLayer(t *testing.T, direct *pgx.Conn, table, column, kind string) string {
	t.Helper()
	var layer *string
	err := direct.QueryRow(context.Background(), `SELECT c.onions->>$3 FROM pgonion.columns c JOIN pgonion.tables t USING (table_id)
		WHERE t.table_name = $1 AND c.column_name = $2`, table, column, kind).Scan(&layer)
	if err != nil {
		t.Fatalf("layer of %s.%s %s: %v", table, column, kind, err)
	}
	if layer == nil {
		return ""
	}
	return *layer
}

// peelDistinct returns how many distinct non-NULL cells a physical column
// of items holds on the server: as many as rows at RND (every cell has its
// own salt), as many as distinct values once peeled to DET.
func peelDistinct(t *testing.T, direct *pgx.Conn, cell string) int {
	t.Helper()
	var n int
	if err := direct.QueryRow(context.Background(), "SELECT count(DISTINCT "+pgx.Identifier{cell}.Sanitize()+") FROM items").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPeelOnDemand: an equality query peels the column's Eq onion to DET,
// a range query its Ord onion to OPE, once each; both answer as on the
// plaintext table; a prepared INSERT planned before the peels writes rows
// at the layers current when it runs.
func TestPeelOnDemand(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, peelPolicy)
	enc := p.connect(t, pgx.QueryExecModeCacheStatement)
	const rows = 3000
	direct := peelLoad(t, db, enc, rows)
	for _, o := range []struct{ col, kind string }{{"name", "eq"}, {"day", "eq"}, {"day", "ord"}} {
		if l := peelLayer(t, direct, "items", o.col, o.kind); l != "rnd" {
			t.Fatalf("%s %s onion at %q after the load, want rnd", o.col, o.kind, l)
		}
	}
	if n := peelDistinct(t, direct, "name__eq"); n != rows {
		t.Fatalf("%d distinct Eq cells of name at RND, want %d", n, rows)
	}
	// Prepared before any peel, executed after each.
	ins := p.connect(t, pgx.QueryExecModeCacheStatement)
	const insSQL = "INSERT INTO items (id, name, day, secret, secret_day) VALUES ($1, $2, $3, $4, $3)"
	if _, err := ins.Prepare(ctx, "ins", insSQL); err != nil {
		t.Fatal(err)
	}
	insert := func(id int, name string, day time.Time) {
		t.Helper()
		if _, err := ins.Exec(ctx, "ins", id, name, day, "s"); err != nil {
			t.Fatalf("prepared INSERT after the peel: %v", err)
		}
		mustExec(t, direct, strings.Replace(insSQL, "items", "plain_items", 1), id, name, day, "s")
	}
	// Reads, a count and DISTINCT need no peel.
	var n int
	if err := enc.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&n); err != nil || n != rows {
		t.Fatalf("count: %d %v", n, err)
	}
	if p.eng.Peels() != 0 {
		t.Fatalf("%d peels before any query needed one", p.eng.Peels())
	}

	// Equality: the Eq onion of name goes to DET, once.
	start := time.Now()
	peelSame(t, enc, direct, "SELECT id FROM items WHERE name = $1", "name-042")
	t.Logf("first equality query (with the peel of %d rows): %v", rows, time.Since(start).Round(time.Millisecond))
	if p.eng.Peels() != 1 {
		t.Fatalf("%d peels after the equality query, want 1", p.eng.Peels())
	}
	if l := peelLayer(t, direct, "items", "name", "eq"); l != "det" {
		t.Fatalf("Eq onion of name at %q, want det", l)
	}
	if n := peelDistinct(t, direct, "name__eq"); n != 200 {
		t.Fatalf("%d distinct Eq cells of name at DET, want 200 (one per value)", n)
	}
	for _, o := range []struct{ col, kind string }{{"day", "eq"}, {"day", "ord"}} {
		if l := peelLayer(t, direct, "items", o.col, o.kind); l != "rnd" {
			t.Fatalf("%s %s onion at %q: peeled although no query needed it", o.col, o.kind, l)
		}
	}
	simple := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	peelSame(t, simple, direct, "SELECT id FROM items WHERE name = 'name-007'")
	peelSame(t, enc, direct, "SELECT id FROM items WHERE name IN ('name-001', 'name-199') OR name = $1", "name-100")
	if p.eng.Peels() != 1 {
		t.Fatalf("%d peels after more equality queries, want still 1", p.eng.Peels())
	}
	// The INSERT prepared at RND writes a DET cell now.
	day := time.Date(2031, 5, 6, 0, 0, 0, 0, time.UTC)
	insert(rows, "fresh after eq", day)
	peelSame(t, enc, direct, "SELECT id FROM items WHERE name = $1", "fresh after eq")
	peelSame(t, simple, direct, "SELECT id FROM items WHERE name = 'fresh after eq'")

	// Range: the Ord onion of day goes to OPE, once.
	start = time.Now()
	peelSame(t, enc, direct, "SELECT id FROM items WHERE day < $1", time.Date(2020, 3, 1, 0, 0, 0, 0, time.UTC))
	t.Logf("first range query (with the peel): %v", time.Since(start).Round(time.Millisecond))
	if p.eng.Peels() != 2 {
		t.Fatalf("%d peels after the range query, want 2", p.eng.Peels())
	}
	if l := peelLayer(t, direct, "items", "day", "ord"); l != "ope" {
		t.Fatalf("Ord onion of day at %q, want ope", l)
	}
	if l := peelLayer(t, direct, "items", "day", "eq"); l != "rnd" {
		t.Fatalf("Eq onion of day at %q: peeled by a range query", l)
	}
	if n := peelDistinct(t, direct, "day__ord"); n != 1001 {
		t.Fatalf("%d distinct Ord cells of day at OPE, want 1001 (one per value)", n)
	}
	peelSame(t, simple, direct, "SELECT id FROM items WHERE day BETWEEN '2022-01-01' AND '2022-02-01'")
	peelSame(t, enc, direct, "SELECT id FROM items WHERE day >= $1", time.Date(2022, 9, 1, 0, 0, 0, 0, time.UTC))
	if p.eng.Peels() != 2 {
		t.Fatalf("%d peels after more range queries, want still 2", p.eng.Peels())
	}
	// Rows written before (fresh after eq) and after the Ord peel, by the
	// INSERT prepared before both.
	insert(rows+1, "fresh after ord", day.AddDate(0, 0, 1))
	peelSame(t, enc, direct, "SELECT id FROM items WHERE day > $1", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	peelSame(t, enc, direct, "SELECT id FROM items WHERE name = $1", "fresh after ord")
	peelSame(t, enc, direct, "SELECT id FROM items WHERE name = $1 AND day >= $2", "fresh after eq", day)

	// Ranges on text (by default a text column has no Ord onion) are
	// computed by the proxy on decrypted values: nothing is peeled.
	peelSame(t, enc, direct, "SELECT id FROM items WHERE name >= $1 AND name < $2", "name-010", "name-020")
	if p.eng.Peels() != 2 {
		t.Fatalf("%d peels after a range on text, want still 2", p.eng.Peels())
	}
	// The Eq onion of day, after its Ord onion.
	peelSame(t, enc, direct, "SELECT id FROM items WHERE day = $1 OR day = '2031-05-07'", time.Date(2021, 2, 3, 0, 0, 0, 0, time.UTC))
	if p.eng.Peels() != 3 || peelLayer(t, direct, "items", "day", "eq") != "det" {
		t.Fatalf("after an equality query on day: %d peels, Eq onion at %q", p.eng.Peels(), peelLayer(t, direct, "items", "day", "eq"))
	}
	// Every row still reads back.
	var mismatched int
	if err := direct.QueryRow(ctx, "SELECT count(*) FROM plain_items").Scan(&n); err != nil {
		t.Fatal(err)
	}
	got, err := enc.Query(ctx, "SELECT id, name, day FROM items")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name string
		day  time.Time
	}
	all := map[int]row{}
	for got.Next() {
		var id int
		var r row
		if err := got.Scan(&id, &r.name, &r.day); err != nil {
			t.Fatal(err)
		}
		all[id] = r
	}
	if got.Err() != nil || len(all) != n {
		t.Fatalf("read %d rows back, want %d: %v", len(all), n, got.Err())
	}
	want, err := direct.Query(ctx, "SELECT id, name, day FROM plain_items")
	if err != nil {
		t.Fatal(err)
	}
	for want.Next() {
		var id int
		var r row
		if err := want.Scan(&id, &r.name, &r.day); err != nil {
			t.Fatal(err)
		}
		if all[id] != r {
			mismatched++
		}
	}
	if mismatched != 0 {
		t.Fatalf("%d rows read back differ from the plaintext", mismatched)
	}
}

// TestPeelTwoProxies: two proxies run a query needing the same peel at the
// same moment: one peels, the other waits for it and finds the work done.
func TestPeelTwoProxies(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	a := startProxy(t, db, peelPolicy)
	b := startProxy(t, db, peelPolicy)
	ca := a.connect(t, pgx.QueryExecModeCacheStatement)
	cb := b.connect(t, pgx.QueryExecModeSimpleProtocol)
	const rows = 20000
	direct := peelLoad(t, db, ca, rows)
	// Each proxy learns of the table (and its layers) before the race.
	for _, c := range []*pgx.Conn{ca, cb} {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&n); err != nil || n != rows {
			t.Fatalf("count: %d %v", n, err)
		}
	}
	for _, q := range []struct{ col, kind, layer, sql, want string }{
		{"name", "eq", "det", "SELECT id FROM items WHERE name = 'name-123'", ""},
		{"day", "ord", "ope", "SELECT id FROM items WHERE day < '2020-02-01'", ""},
	} {
		before := a.eng.Peels() + b.eng.Peels()
		want, err := peelIDs(ctx, direct, strings.Replace(q.sql, "items", "plain_items", 1))
		if err != nil || len(want) == 0 {
			t.Fatalf("plaintext %s: %d ids %v", q.sql, len(want), err)
		}
		barrier := make(chan struct{})
		var wg sync.WaitGroup
		got := make([][]int, 2)
		errs := make([]error, 2)
		took := make([]time.Duration, 2)
		for i, c := range []*pgx.Conn{ca, cb} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-barrier
				start := time.Now()
				qctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				got[i], errs[i] = peelIDs(qctx, c, q.sql)
				took[i] = time.Since(start)
			}()
		}
		close(barrier)
		wg.Wait()
		for i := range got {
			if errs[i] != nil {
				t.Fatalf("proxy %d: %s: %v", i, q.sql, errs[i])
			}
			if !slices.Equal(got[i], want) {
				t.Fatalf("proxy %d: %s: %d ids, want %d", i, q.sql, len(got[i]), len(want))
			}
		}
		t.Logf("%s: answered in %v and %v", q.sql, took[0].Round(time.Millisecond), took[1].Round(time.Millisecond))
		if n := a.eng.Peels() + b.eng.Peels() - before; n != 1 {
			t.Fatalf("%s: %d peels by the two proxies (a %d, b %d), want exactly 1", q.sql, n, a.eng.Peels(), b.eng.Peels())
		}
		if l := peelLayer(t, direct, "items", q.col, q.kind); l != q.layer {
			t.Fatalf("%s %s onion at %q, want %s", q.col, q.kind, l, q.layer)
		}
		cell := q.col + "__" + q.kind
		if n := peelDistinct(t, direct, cell); n != map[string]int{"name": 200, "day": 1000}[q.col] {
			t.Fatalf("%d distinct cells in %s after the peel", n, cell)
		}
	}
	// Rows each proxy writes now are found by the other.
	mustExec(t, ca, "INSERT INTO items VALUES ($1, $2, $3, $4, $3)", rows, "from a", time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC), "s")
	mustExec(t, cb, "INSERT INTO items VALUES (20001, 'from b', '2019-01-02', 's', '2019-01-02')")
	mustExec(t, direct, "INSERT INTO plain_items VALUES (20000, 'from a', '2019-01-01', 's', '2019-01-01'), (20001, 'from b', '2019-01-02', 's', '2019-01-02')")
	for _, c := range []*pgx.Conn{ca, cb} {
		peelSame(t, c, direct, "SELECT id FROM items WHERE name = 'from a' OR name = 'from b'")
		peelSame(t, c, direct, "SELECT id FROM items WHERE day < '2019-12-31'")
	}
}

// TestPeelSensitiveRefused: a query needing an onion of a sensitive column
// below RND is refused, and nothing on the server changes.
func TestPeelSensitiveRefused(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, peelPolicy)
	enc := p.connect(t, pgx.QueryExecModeCacheStatement)
	simple := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	direct := peelLoad(t, db, enc, 500)
	fingerprint := func() string {
		t.Helper()
		var s string
		if err := direct.QueryRow(ctx, `SELECT md5(string_agg(i::text, '|' ORDER BY i::text)) || md5(string_agg(c::text, '|' ORDER BY c.column_name))
			FROM items i, pgonion.columns c`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := fingerprint()
	onions := peelLayer(t, direct, "items", "secret", "eq")
	// With constants, the proxy checks the condition itself on decrypted
	// rows (split execution): answered, and nothing is peeled.
	for _, sql := range []string{
		"SELECT id FROM items WHERE secret = 'secret 3'",
		"SELECT id FROM items WHERE secret_day < '2020-03-01'",
		"SELECT id FROM items WHERE secret IN ('secret 1', 'secret 2', 'secret 201')",
		"SELECT id FROM items ORDER BY secret_day, id",
		"SELECT id FROM items WHERE secret_day BETWEEN '2020-01-01' AND '2020-02-01' ORDER BY id",
	} {
		peelSame(t, simple, direct, sql)
	}
	// With parameters too (bound at each Bind), in the proxy.
	peelSame(t, enc, direct, "SELECT id FROM items WHERE secret = $1", "secret 3")
	peelSame(t, enc, direct, "SELECT id FROM items WHERE secret_day = $1", time.Date(2020, 3, 1, 0, 0, 0, 0, time.UTC))
	// Grouping on a sensitive column runs in the proxy (split
	// execution): answered, without any peel.
	rows, err := simple.Query(ctx, "SELECT secret, count(*) FROM items GROUP BY secret")
	if err != nil {
		t.Fatal(err)
	}
	groups := 0
	for rows.Next() {
		groups++
	}
	if rows.Close(); rows.Err() != nil || groups == 0 {
		t.Fatalf("GROUP BY secret: %d groups, %v", groups, rows.Err())
	}
	if p.eng.Peels() != 0 {
		t.Fatalf("%d peels", p.eng.Peels())
	}
	if after := fingerprint(); after != before {
		t.Fatal("the refused queries changed the table or the catalog on the server")
	}
	if l := peelLayer(t, direct, "items", "secret", "eq"); l != onions {
		t.Fatalf("Eq onion of the sensitive column went from %q to %q", onions, l)
	}
	// The session is still usable, and the column still reads back.
	var s string
	if err := enc.QueryRow(ctx, "SELECT secret FROM items WHERE id = 3").Scan(&s); err != nil || s != "secret 3" {
		t.Fatalf("read after the refusals: %q %v", s, err)
	}
}

func asPgError(err error, pe **pgconn.PgError) bool {
	for err != nil {
		if e, ok := err.(*pgconn.PgError); ok {
			*pe = e
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// TestPeelLockedByOwnTransaction: a transaction that wrote to the table
// holds a lock the peel needs. A prepared statement parsed at the start
// of a request cycle peels in that transaction, as a simple query does;
// one parsed after other unsynced messages cannot (the proxy would end
// the client's implicit transaction), so it fails with 55P03 and a hint
// at once (the proxy sees the session's lock in pg_locks) instead of
// waiting out the peel's lock timeout (10 s), and aborts the
// transaction; once the transaction ends, the query works.
func TestPeelLockedByOwnTransaction(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, peelPolicy)
	direct := peelLoad(t, db, p.connect(t, pgx.QueryExecModeSimpleProtocol), 300)
	enc := p.connect(t, pgx.QueryExecModeCacheStatement)
	peels := p.eng.Peels()
	mustExec(t, enc, "BEGIN")
	mustExec(t, enc, "INSERT INTO items VALUES ($1, $2, $3, $4, $3)", 1000, "name-003", time.Date(2020, 1, 4, 0, 0, 0, 0, time.UTC), "s")
	got, err := peelIDs(ctx, enc, "SELECT id FROM items WHERE name = $1", "name-003")
	if err != nil || !slices.Equal(got, []int{3, 203, 1000}) {
		t.Fatalf("prepared at the start of a cycle, in the transaction: %v %v, want [3 203 1000]", got, err)
	}
	if p.eng.Peels() != peels+1 {
		t.Fatalf("%d peels, want 1", p.eng.Peels()-peels)
	}
	// Parsed behind an unsynced statement: refused at once.
	pl := enc.PgConn().StartPipeline(ctx)
	pl.SendQueryParams("SELECT 1", nil, nil, nil, nil)
	pl.SendPrepare("by_day", "SELECT id FROM items WHERE day = $1", nil)
	if err := pl.Sync(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var perr error
	for {
		res, err := pl.GetResults()
		if err != nil {
			perr = err
			continue
		}
		if rr, ok := res.(*pgconn.ResultReader); ok {
			rr.Read()
		}
		if _, ok := res.(*pgconn.PipelineSync); ok {
			break
		}
	}
	took := time.Since(start)
	_ = pl.Close()
	var pe *pgconn.PgError
	if !asPgError(perr, &pe) || pe.Code != "55P03" || !strings.Contains(pe.Hint, "commit") {
		t.Fatalf("a peel needed by a Parse behind other messages, in a transaction that wrote to the table: %v (after %v), want SQLSTATE 55P03 with a hint", perr, took)
	}
	if took > 5*time.Second {
		t.Fatalf("the refusal took %v, not at once", took)
	}
	if l := peelLayer(t, direct, "items", "day", "eq"); l != "rnd" {
		t.Fatalf("Eq onion of day at %q after the refusal", l)
	}
	if _, err := enc.Exec(ctx, "SELECT 1"); pgCode(err) != "25P02" {
		t.Fatalf("statement after the refusal: %v, want 25P02 (transaction aborted)", err)
	}
	mustExec(t, enc, "ROLLBACK")
	var n int
	if err := direct.QueryRow(ctx, "SELECT count(*) FROM items WHERE id = 1000").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the aborted transaction's row: %d %v", n, err)
	}
	if l := peelLayer(t, direct, "items", "name", "eq"); l != "rnd" {
		t.Fatalf("Eq onion of name at %q after ROLLBACK, want rnd (the peel rolled back)", l)
	}
	peelSame(t, enc, direct, "SELECT id FROM items WHERE name = $1", "name-003")
	peelSame(t, enc, direct, "SELECT id FROM items WHERE day = $1", time.Date(2020, 1, 4, 0, 0, 0, 0, time.UTC))
	if p.eng.Peels() != peels+3 || peelLayer(t, direct, "items", "day", "eq") != "det" {
		t.Fatalf("after ROLLBACK: %d peels, Eq onion of day at %q", p.eng.Peels()-peels, peelLayer(t, direct, "items", "day", "eq"))
	}
}

// TestPeelInOwnTransaction: in the simple protocol a query needing a peel
// inside a transaction that wrote to the table (every ORM test and
// request runs in one) peels in that transaction. The query sees the
// transaction's own rows; the peel commits or rolls back with the
// transaction; until then other sessions see the old layer, and their
// writes through the proxy wait, then are stored at the layer the
// transaction left. A REPEATABLE READ transaction peels in itself too
// (a peel committed after its snapshot would be invisible to it).
func TestPeelInOwnTransaction(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, peelPolicy)
	direct := peelLoad(t, db, p.connect(t, pgx.QueryExecModeSimpleProtocol), 300)
	day := func(i int) time.Time { return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i) }
	insert := func(conn *pgx.Conn, id int, name string, d time.Time) error {
		_, err := conn.Exec(ctx, "INSERT INTO items VALUES ($1, $2, $3, $4, $3)", id, name, d, "s")
		return err
	}
	for _, tc := range []struct {
		end, col string
		value    any
	}{
		{"COMMIT", "name", "name-003"},
		{"ROLLBACK", "day", day(5)},
	} {
		t.Run(tc.end+"_"+tc.col, func(t *testing.T) {
			enc := p.connect(t, pgx.QueryExecModeSimpleProtocol)
			other := p.connect(t, pgx.QueryExecModeSimpleProtocol)
			peels := p.eng.Peels()
			before := peelLayer(t, direct, "items", tc.col, "eq")
			q := "SELECT id FROM items WHERE " + tc.col + " = $1"
			mustExec(t, enc, "BEGIN")
			if err := insert(enc, 1000, "name-003", day(5)); err != nil {
				t.Fatal(err)
			}
			mustExec(t, direct, "INSERT INTO plain_items VALUES (1000, 'name-003', '2020-01-06', 's', '2020-01-06')")
			got, err := peelIDs(ctx, enc, q, tc.value)
			if err != nil {
				t.Fatalf("%s in a transaction that wrote to the table: %v", q, err)
			}
			want, _ := peelIDs(ctx, direct, strings.Replace(q, "items", "plain_items", 1), tc.value)
			if tc.end == "ROLLBACK" {
				mustExec(t, direct, "DELETE FROM plain_items WHERE id = 1000")
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s in the transaction: %v, want %v", q, got, want)
			}
			// The transaction's own writes after the peel pass the gate
			// it holds, at the new layer.
			if err := insert(enc, 1001, "name-003", day(5)); err != nil {
				t.Fatalf("write after the peel in the same transaction: %v", err)
			}
			if got, err := peelIDs(ctx, enc, q, tc.value); err != nil || !slices.Contains(got, 1001) {
				t.Fatalf("%s after writing row 1001 in the transaction: %v %v", q, got, err)
			}
			mustExec(t, direct, "INSERT INTO plain_items VALUES (1001, 'name-003', '2020-01-06', 's', '2020-01-06')")
			if tc.end == "ROLLBACK" {
				mustExec(t, direct, "DELETE FROM plain_items WHERE id = 1001")
			}
			if l := peelLayer(t, direct, "items", tc.col, "eq"); l != before {
				t.Fatalf("another session sees the Eq onion of %s at %q before the transaction ended, want %q", tc.col, l, before)
			}
			// Another session's write waits for the transaction, then is
			// stored at the layer it left.
			written := make(chan error, 1)
			name, _ := tc.value.(string)
			if name == "" {
				name = "name-050"
			}
			go func() { written <- insert(other, 2000, name, day(5)) }()
			select {
			case err := <-written:
				t.Fatalf("another session's write did not wait for the peeling transaction: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			mustExec(t, enc, tc.end)
			if err := <-written; err != nil {
				t.Fatalf("another session's write after %s: %v", tc.end, err)
			}
			mustExec(t, direct, "INSERT INTO plain_items VALUES (2000, $1, '2020-01-06', 's', '2020-01-06')", name)
			wantLayer, wantPeels := "det", peels+1
			if tc.end == "ROLLBACK" {
				wantLayer = before
			}
			if l := peelLayer(t, direct, "items", tc.col, "eq"); l != wantLayer || p.eng.Peels() != wantPeels {
				t.Fatalf("after %s: Eq onion of %s at %q, %d peels; want %q, 1", tc.end, tc.col, l, p.eng.Peels()-peels, wantLayer)
			}
			peelSame(t, enc, direct, q, tc.value)
			peelSame(t, other, direct, q, tc.value)
			mustExec(t, enc, "DELETE FROM items WHERE id IN (1000, 1001, 2000)")
			mustExec(t, direct, "DELETE FROM plain_items WHERE id IN (1000, 1001, 2000)")
		})
	}
	t.Run("CreatedInTransaction", func(t *testing.T) {
		// An ORM's test: the table, its rows and the query in one
		// transaction; nobody else can see the table to peel it.
		enc := p.connect(t, pgx.QueryExecModeSimpleProtocol)
		mustExec(t, enc, "BEGIN")
		mustExec(t, enc, "CREATE TABLE fresh (id int, tag text)")
		mustExec(t, enc, "INSERT INTO fresh VALUES (1, 'a'), (2, 'b'), (3, 'a')")
		got, err := peelIDs(ctx, enc, "SELECT id FROM fresh WHERE tag = $1", "a")
		if err != nil || !slices.Equal(got, []int{1, 3}) {
			t.Fatalf("query over a table created in the transaction: %v %v, want [1 3]", got, err)
		}
		mustExec(t, enc, "COMMIT")
		if got, err := peelIDs(ctx, enc, "SELECT id FROM fresh WHERE tag = $1", "b"); err != nil || !slices.Equal(got, []int{2}) {
			t.Fatalf("after COMMIT: %v %v, want [2]", got, err)
		}
		if l := peelLayer(t, direct, "fresh", "tag", "eq"); l != "det" {
			t.Fatalf("Eq onion of fresh.tag at %q after COMMIT", l)
		}
	})
	t.Run("Savepoints", func(t *testing.T) {
		// Django runs each test in a savepoint of its class's
		// transaction and rolls back to it: the peel is undone with
		// it, and the next query must see the old layer again.
		enc := p.connect(t, pgx.QueryExecModeSimpleProtocol)
		mustExec(t, enc, "CREATE TABLE sp (id int, tag text, day date)")
		mustExec(t, direct, "CREATE TABLE plain_sp (id int, tag text, day date)")
		rows := "VALUES (1, 'a', '2020-03-01'), (2, 'b', '2020-01-01'), (3, 'a', '2020-02-01'), (4, 'c', '2019-12-31')"
		mustExec(t, direct, "INSERT INTO plain_sp "+rows)
		same := func(q string, args ...any) {
			t.Helper()
			got, err := peelIDs(ctx, enc, q, args...)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			want, err := peelIDs(ctx, direct, strings.Replace(q, " sp", " plain_sp", 1), args...)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: through the proxy %v, want %v", q, got, want)
			}
		}
		ordered := func() {
			t.Helper()
			var got []int
			rows, err := enc.Query(ctx, "SELECT id FROM sp ORDER BY day")
			if err == nil {
				got, err = pgx.CollectRows(rows, pgx.RowTo[int])
			}
			if err != nil || !slices.Equal(got, []int{4, 2, 3, 1}) {
				t.Fatalf("ORDER BY day: %v %v, want [4 2 3 1]", got, err)
			}
		}
		mustExec(t, enc, "BEGIN")
		mustExec(t, enc, "INSERT INTO sp "+rows)
		for round := range 3 {
			mustExec(t, enc, `SAVEPOINT "s1_x1"`)
			same("SELECT id FROM sp WHERE tag = $1", "a")
			ordered()
			mustExec(t, enc, "SAVEPOINT inner_sp")
			same("SELECT id FROM sp WHERE tag = $1", "b")
			if round == 2 {
				mustExec(t, enc, "RELEASE SAVEPOINT inner_sp")
				mustExec(t, enc, `RELEASE SAVEPOINT "s1_x1"`)
				break
			}
			mustExec(t, enc, `ROLLBACK TO SAVEPOINT "s1_x1"`)
			if l := peelLayer(t, direct, "sp", "tag", "eq"); l != "" && l != "rnd" {
				t.Fatalf("round %d: Eq onion of sp.tag at %q", round, l)
			}
			ordered()
			same("SELECT id FROM sp WHERE tag = $1", "c")
			mustExec(t, enc, `ROLLBACK TO SAVEPOINT "s1_x1"`)
			mustExec(t, enc, `RELEASE SAVEPOINT "s1_x1"`)
		}
		mustExec(t, enc, "COMMIT")
		if l := peelLayer(t, direct, "sp", "tag", "eq"); l != "det" {
			t.Fatalf("Eq onion of sp.tag at %q after COMMIT", l)
		}
		ordered()
		same("SELECT id FROM sp WHERE tag = $1", "a")
		other := p.connect(t, pgx.QueryExecModeCacheStatement)
		if got, err := peelIDs(ctx, other, "SELECT id FROM sp WHERE day > $1", day(30)); err != nil || !slices.Equal(got, []int{1, 3}) {
			t.Fatalf("another session after COMMIT: %v %v", got, err)
		}
	})
	t.Run("RepeatableRead", func(t *testing.T) {
		enc := p.connect(t, pgx.QueryExecModeSimpleProtocol)
		mustExec(t, enc, "BEGIN ISOLATION LEVEL REPEATABLE READ")
		mustExec(t, enc, "SELECT count(*) FROM items")
		peelSame(t, enc, direct, "SELECT id FROM items WHERE day < $1", day(20))
		mustExec(t, enc, "COMMIT")
		if l := peelLayer(t, direct, "items", "day", "ord"); l != "ope" {
			t.Fatalf("Ord onion of day at %q after the transaction committed", l)
		}
		peelSame(t, enc, direct, "SELECT id FROM items WHERE day < $1", day(20))
	})
}

// TestPeelConcurrentWriter: statements that write to the table while a
// peel runs wait for the peel's table lock (SHARE ROW EXCLUSIVE); once they
// run, after the peel committed, the cells they write must be at the new
// layer, or queries using the onion miss those rows for good. The writers
// use the same proxy as the query that peels, so its catalog copy is never
// behind; each writes one row with its own id, and the test reports which
// ones the equality (or range) query misses afterwards.
//
// The proxy encrypts a statement's values when it plans it (simple
// protocol), at Bind (extended protocol) or as the COPY data arrives, that
// is before the statement reaches the server: the write gate (gate.go)
// makes those wait for the peel and read the layers after it.
func TestPeelConcurrentWriter(t *testing.T) {
	for _, tc := range []struct {
		kind, col, query, layer string
		arg                     any
	}{
		{"eq", "name", "SELECT id FROM items WHERE name = $1", "det", "written during the peel"},
		{"ord", "day", "SELECT id FROM items WHERE day > $1", "ope", time.Date(2039, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			peelConcurrentWriter(t, tc.kind, tc.col, tc.query, tc.layer, tc.arg)
		})
	}
}

func peelConcurrentWriter(t *testing.T, kind, col, query, layer string, arg any) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, peelPolicy)
	peeler := p.connect(t, pgx.QueryExecModeCacheStatement)
	const rows = 50000
	direct := peelLoad(t, db, peeler, rows)
	const ins = "INSERT INTO items VALUES ($1, $2, $3, $4, $3)"
	day := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	writers := []struct {
		name string
		mode pgx.QueryExecMode
		id   int
		run  func(c *pgx.Conn, id int) error
	}{
		{"INSERT, extended protocol, prepared before the peel", pgx.QueryExecModeCacheStatement, rows, func(c *pgx.Conn, id int) error {
			_, err := c.Exec(ctx, "before", id, "written during the peel", day, "s")
			return err
		}},
		{"INSERT, extended protocol, parsed during the peel", pgx.QueryExecModeCacheStatement, rows + 1, func(c *pgx.Conn, id int) error {
			_, err := c.Exec(ctx, ins, id, "written during the peel", day, "s")
			return err
		}},
		{"INSERT, simple protocol", pgx.QueryExecModeSimpleProtocol, rows + 2, func(c *pgx.Conn, id int) error {
			_, err := c.Exec(ctx, fmt.Sprintf("INSERT INTO items VALUES (%d, 'written during the peel', '2040-01-01', 's', '2040-01-01')", id))
			return err
		}},
		{"UPDATE, simple protocol", pgx.QueryExecModeSimpleProtocol, 7, func(c *pgx.Conn, id int) error {
			_, err := c.Exec(ctx, fmt.Sprintf("UPDATE items SET name = 'written during the peel', day = '2040-01-01' WHERE id = %d", id))
			return err
		}},
		{"COPY", pgx.QueryExecModeCacheStatement, rows + 3, func(c *pgx.Conn, id int) error {
			_, err := c.PgConn().CopyFrom(ctx, strings.NewReader(fmt.Sprintf("%d\twritten during the peel\t2040-01-01\ts\t2040-01-01\n", id)), "COPY items FROM STDIN")
			return err
		}},
	}
	conns := make([]*pgx.Conn, len(writers))
	for i, w := range writers {
		conns[i] = p.connect(t, w.mode)
		// The session knows the table before the peel starts.
		var n int
		if err := conns[i].QueryRow(ctx, "SELECT count(*) FROM items WHERE id = 0").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := conns[i].Prepare(ctx, "before", ins); err != nil {
				t.Fatal(err)
			}
		}
		if w.id == 7 {
			mustExec(t, direct, "UPDATE plain_items SET name = 'written during the peel', day = '2040-01-01' WHERE id = 7")
		} else {
			mustExec(t, direct, "INSERT INTO plain_items VALUES ($1, 'written during the peel', '2040-01-01', 's', '2040-01-01')", w.id)
		}
	}

	peeled := make(chan error, 1)
	go func() {
		_, err := peelIDs(ctx, peeler, query, arg)
		peeled <- err
	}()
	// Once the peel's UPDATE runs, the writers start; each must wait for
	// the peel (in the proxy, or for its table lock on the server).
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := direct.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE '%decrypt_iv(%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) || len(peeled) > 0 {
			t.Fatal("the peel's UPDATE was never seen running")
		}
		time.Sleep(time.Millisecond)
	}
	type result struct{ err error }
	results := make(chan result, len(writers))
	for i, w := range writers {
		go func() {
			err := w.run(conns[i], w.id)
			if err != nil {
				err = fmt.Errorf("%s: %w", w.name, err)
			}
			results <- result{err}
		}()
	}
	// The writers' statements reach the proxy within milliseconds; if the
	// peel's UPDATE still runs after that, they overlapped it.
	time.Sleep(20 * time.Millisecond)
	var running int
	if err := direct.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE '%decrypt_iv(%'").Scan(&running); err != nil {
		t.Fatal(err)
	}
	early := len(results)
	if err := <-peeled; err != nil {
		t.Fatal(err)
	}
	for range writers {
		if r := <-results; r.err != nil {
			t.Fatal(r.err)
		}
	}
	if running == 0 {
		t.Fatal("the peel ended before the writers were under way: the test did not exercise the race")
	}
	t.Logf("%d of %d writers finished while the peel's UPDATE ran (want 0: they wait)", early, len(writers))
	if p.eng.Peels() != 1 || peelLayer(t, direct, "items", col, kind) != layer {
		t.Fatalf("%d peels, %s onion of %s at %q", p.eng.Peels(), kind, col, peelLayer(t, direct, "items", col, kind))
	}
	got, err := peelIDs(ctx, peeler, query, arg)
	if err != nil {
		t.Fatal(err)
	}
	var missed []string
	for _, w := range writers {
		if _, ok := slices.BinarySearch(got, w.id); !ok {
			missed = append(missed, w.name)
		}
	}
	if len(missed) > 0 {
		t.Errorf("BUG: rows written while the peel ran, by statements that waited for its table lock, were written at RND into the %s onion recorded at %s: %q misses the rows of %s", kind, layer, query, strings.Join(missed, "; "))
	}
	// At the inner layer, equal values have equal cells: one distinct
	// cell per distinct value (200 names or 1000 days, and the written one).
	want := map[string]int{"name": 201, "day": 1001}[col]
	if n := peelDistinct(t, direct, col+"__"+kind); n != want {
		t.Errorf("BUG: %d distinct cells in %s__%s after the peel and the writes, want %d: rows written during the peel hold RND cells", n, col, kind, want)
	}
	peelSame(t, peeler, direct, query, arg)
}

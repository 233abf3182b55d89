package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/embedpg"
	"github.com/pgonion/pgonion/internal/engine"
	"github.com/pgonion/pgonion/internal/keyring"
	"github.com/pgonion/pgonion/internal/recrypt"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// adoptPolicy keeps acct.id plain and encrypts the rest.
func adoptPolicy(table, column string) rewrite.ColumnPolicy {
	switch column {
	case "id":
		return rewrite.ColumnPolicy{Policy: catalog.Plain}
	case "balance":
		// No Add onion: a Paillier encryption per row would make the
		// test slow without testing more of the rewriter.
		return rewrite.ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq", "ord"}}
	}
	return engine.DefaultPolicy(table, column)
}

const adoptDDL = "CREATE TABLE %s (id int PRIMARY KEY, owner text NOT NULL, balance numeric(12,2), born date, note varchar(20))"

// adoptQueries run through the proxy on acct and directly on acct_plain
// (the same rows, never adopted): before, during and after each rewrite
// the answers must be the same.
var adoptQueries = []string{
	"SELECT id, owner, balance, born, note FROM %s",
	"SELECT * FROM %s WHERE id = 7",
	"SELECT id FROM %s WHERE owner = 'owner-17'",
	"SELECT id, note FROM %s WHERE note IS NULL",
	"SELECT count(*), count(note), sum(balance) FROM %s",
	"SELECT id FROM %s WHERE born > '2021-06-01'",
}

// newRewriter is a Rewriter on its own connection to db.
func newRewriter(t *testing.T, db *encDB) *recrypt.Rewriter {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	ring, err := keyring.New(db.store)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := catalog.MACGeneration(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	macKey, err := ring.MACKey(gen)
	if err != nil {
		t.Fatal(err)
	}
	k := recrypt.Keys{MACKey: macKey, Ring: ring, Generation: gen}
	return &recrypt.Rewriter{Conn: conn, Keys: k, BatchBlocks: 2}
}

// TestAdoptAndRollBack adopts a plaintext table created directly on the
// server (encrypts its columns in place) while the application writes
// through the proxy, scrubs the plaintext, then decrypts it back, and
// checks the answers against a plaintext copy at every stage.
func TestAdoptAndRollBack(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	direct := db.direct(t)
	for _, name := range []string{"acct", "acct_plain"} {
		mustExec(t, direct, fmt.Sprintf(adoptDDL, name))
		mustExec(t, direct, fmt.Sprintf(`INSERT INTO %s SELECT i, 'owner-' || (i %% 50), (i * 7 %% 1000) / 4.0,
			date '2020-01-01' + i %% 900, CASE WHEN i %% 5 = 0 THEN NULL ELSE 'canary' || i END FROM generate_series(1, 3000) i`, name))
	}
	p := startProxy(t, db, adoptPolicy)
	app := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	// A second proxy of the database reads along.
	prepared := startProxy(t, db, adoptPolicy).connect(t, pgx.QueryExecModeCacheStatement)
	same := func(stage string) {
		t.Helper()
		for _, q := range adoptQueries {
			for _, c := range []*pgx.Conn{app, prepared} {
				mode := c.Config().DefaultQueryExecMode
				got, gerr := runSorted(ctx, c, mode, fmt.Sprintf(q, "acct"), nil)
				want, werr := runSorted(ctx, direct, mode, fmt.Sprintf(q, "acct_plain"), nil)
				if gerr != nil || werr != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: %s (%v):\n got %s %v\nwant %s %v", stage, q, mode, rowDiff(got, want), gerr, rowDiff(want, got), werr)
				}
			}
		}
	}
	writes := 0
	write := func() {
		t.Helper()
		writes++
		i := writes * 37
		for _, s := range []string{
			"UPDATE %s SET owner = 'moved-%d', note = NULL WHERE id = %d",
			"INSERT INTO %s VALUES (%d + 5000, 'new-owner', 1.25, '2024-02-29', 'fresh')",
			"DELETE FROM %s WHERE id = %d + 100",
		} {
			n := strings.Count(s, "%d")
			args := []any{"acct"}
			for range n {
				args = append(args, i)
			}
			mustExec(t, app, fmt.Sprintf(s, args...))
			args[0] = "acct_plain"
			mustExec(t, direct, fmt.Sprintf(s, args...))
		}
	}
	same("before")

	// Adopt, writing and comparing at every batch.
	rw := newRewriter(t, db)
	batches := 0
	rw.AfterBatch = func(recrypt.Progress) error {
		batches++
		write()
		if batches%5 == 1 {
			same(fmt.Sprintf("during adoption, batch %d", batches))
		}
		return nil
	}
	plan, err := rw.EncryptColumns(ctx, "public", "acct", nil, adoptPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Register || len(plan.Columns) != 4 || batches < 5 {
		t.Fatalf("plan %+v after %d batches: want the table registered and 4 columns in several batches", plan, batches)
	}
	same("after adoption")
	logicalSchema(t, app, direct, "after adoption")
	write()
	same("after adoption and writes")
	var plaintextCells int
	if err := direct.QueryRow(ctx, "SELECT count(*) FROM acct WHERE owner__eq IS NULL OR balance__eq IS NULL AND balance__plaintext IS NOT NULL").Scan(&plaintextCells); err != nil {
		t.Fatal(err)
	}
	if plaintextCells != 0 {
		t.Fatalf("%d rows without their encrypted cells after the cutover", plaintextCells)
	}
	// Running it again does nothing.
	if plan, err := rw.EncryptColumns(ctx, "public", "acct", nil, adoptPolicy); err != nil || len(plan.Columns) != 0 {
		t.Fatalf("second run: %+v %v", plan, err)
	}

	// The final step: no plaintext left in a dump.
	dropped, err := rw.Scrub(ctx, "public", "acct")
	if err != nil || len(dropped) != 4 {
		t.Fatalf("scrub: %v %v", dropped, err)
	}
	if dump := pgDump(t, db.dsn, "acct"); strings.Contains(dump, "canary") || strings.Contains(dump, "owner-17") {
		t.Fatal("pg_dump of the adopted table holds plaintext")
	}
	same("after the scrub")

	// Roll back: plaintext again, same answers, the table plain.
	batches = 0
	if _, err := rw.DecryptColumns(ctx, "public", "acct", nil); err != nil {
		t.Fatal(err)
	}
	if batches < 5 {
		t.Fatalf("decrypted in %d batches", batches)
	}
	same("after decryption")
	logicalSchema(t, app, direct, "after decryption")
	var twins int
	if err := direct.QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relname = 'acct' AND relnamespace = to_regnamespace('pgonion_l_public')").Scan(&twins); err != nil || twins != 0 {
		t.Fatalf("the twin of a table plain again is left: %d %v", twins, err)
	}
	var salt int
	if err := direct.QueryRow(ctx, "SELECT count(*) FROM pg_attribute WHERE attrelid = 'acct'::regclass AND attname LIKE '%\\_\\_%' AND NOT attisdropped").Scan(&salt); err != nil || salt != 0 {
		t.Fatalf("physical onion columns left after decryption: %d %v", salt, err)
	}
	// Running it again does nothing (a killed run may have finished).
	if plan, err := rw.DecryptColumns(ctx, "public", "acct", nil); err != nil || len(plan.Columns) != 0 {
		t.Fatalf("second decryption: %+v %v", plan, err)
	}
	got, _ := runSorted(ctx, direct, pgx.QueryExecModeSimpleProtocol, "SELECT * FROM acct", nil)
	want, _ := runSorted(ctx, direct, pgx.QueryExecModeSimpleProtocol, "SELECT * FROM acct_plain", nil)
	if !reflect.DeepEqual(got, want) {
		t.Fatal("after decryption the server's rows differ from the plaintext copy")
	}
}

// logicalSchema checks that reflection of acct through the proxy (by
// name, as ORMs do, and psql's \d by OID) shows the columns, types,
// defaults and indexes of acct_plain, its never-adopted copy.
func logicalSchema(t *testing.T, app, direct *pgx.Conn, stage string) {
	t.Helper()
	for _, q := range []string{
		`SELECT column_name, data_type, is_nullable, column_default, character_maximum_length FROM information_schema.columns WHERE table_name = '%s' ORDER BY ordinal_position`,
		`SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
			WHERE c.relname = '%s' AND pg_table_is_visible(c.oid) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
		`SELECT replace(i.relname, '%[1]s', 'T'), ix.indisprimary, regexp_replace(pg_get_indexdef(ix.indexrelid), '^.* USING ', '') FROM pg_index ix
			JOIN pg_class i ON i.oid = ix.indexrelid WHERE ix.indrelid = '%[1]s'::regclass ORDER BY 1`,
	} {
		got, gerr := rowsText(app, fmt.Sprintf(q, "acct"))
		want, werr := rowsText(direct, fmt.Sprintf(q, "acct_plain"))
		if gerr != nil || werr != nil || got != want {
			t.Fatalf("%s: %s\nthrough the proxy (%v):\n%s\nplaintext copy (%v):\n%s", stage, q, gerr, got, werr, want)
		}
	}
}

// TestAdoptLeavesNoPlaintext: after the final step of an adoption,
// neither pg_dump nor the WAL written from then on (full-page images
// included, on a cluster that writes them, as production servers do)
// holds plaintext of the adopted columns, and the server log (every
// statement logged) shows none from the adoption on; the WAL the final
// step itself wrote does, which shows the WAL check can see it.
func TestAdoptLeavesNoPlaintext(t *testing.T) {
	ctx := context.Background()
	db, cl := newClusterDB(t, map[string]string{"full_page_writes": "on", "log_statement": "all"})
	direct := db.direct(t)
	mustExec(t, direct, fmt.Sprintf(adoptDDL, "acct"))
	mustExec(t, direct, `INSERT INTO acct SELECT i, 'canary-owner-' || i, i, date '2020-01-01' + i, 'canary-note-' || i FROM generate_series(1, 3000) i`)
	// The server log from here on: the rewriter's statements and the
	// application's carry ciphertexts only.
	logFrom, err := os.Stat(cl.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, db, adoptPolicy)
	app := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	rw := newRewriter(t, db)
	if _, err := rw.EncryptColumns(ctx, "public", "acct", nil, adoptPolicy); err != nil {
		t.Fatal(err)
	}
	lsn := func() string {
		var l string
		if err := direct.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	mustExec(t, direct, "CHECKPOINT")
	beforeScrub := lsn()
	if _, err := rw.Scrub(ctx, "public", "acct"); err != nil {
		t.Fatal(err)
	}
	if wal := walSince(t, direct, beforeScrub); !strings.Contains(wal, "canary-note-1") {
		t.Fatal("the WAL of the final step holds no plaintext: the WAL check cannot see it")
	}
	mustExec(t, direct, "CHECKPOINT")
	afterScrub := lsn()
	mustExec(t, app, "UPDATE acct SET note = 'rewritten' WHERE id % 2 = 0")
	mustExec(t, app, "INSERT INTO acct VALUES (9001, 'someone', 1.5, '2024-01-01', 'new')")
	mustExec(t, app, "DELETE FROM acct WHERE id % 7 = 0")
	mustExec(t, direct, "VACUUM acct")
	if wal := walSince(t, direct, afterScrub); strings.Contains(wal, "canary") {
		t.Fatal("the WAL written after the final step holds plaintext of the adopted columns")
	}
	if dump := pgDump(t, db.dsn, "acct"); strings.Contains(dump, "canary") {
		t.Fatal("pg_dump of the adopted table holds plaintext")
	}
	log, err := os.ReadFile(cl.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	log = log[logFrom.Size():]
	if !strings.Contains(string(log), "UPDATE acct SET note") {
		t.Fatal("the server log does not show the application's statements: is log_statement in effect?")
	}
	if strings.Contains(string(log), "canary") {
		t.Fatal("the server log holds plaintext of the adopted columns")
	}
	var n int
	if err := app.QueryRow(ctx, "SELECT count(*) FROM acct WHERE note = 'rewritten'").Scan(&n); err != nil || n == 0 {
		t.Fatalf("the adopted table through the proxy: %d %v", n, err)
	}
}

// pgDump returns pg_dump's output for one table of the database of dsn.
func pgDump(t *testing.T, dsn, table string) string {
	t.Helper()
	bin := "pg_dump"
	if dir, err := embedpg.FindBinDir(); err == nil {
		bin = dir + "/pg_dump"
	}
	out, err := exec.Command(bin, "--dbname="+dsn, "--table="+table, "--data-only").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("pg_dump: %v: %s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return string(out)
}

// rowDiff shows the first row of a that b does not have, and a's length.
func rowDiff(a, b []string) string {
	for i, x := range a {
		if i >= len(b) || b[i] != x {
			return fmt.Sprintf("row %d of %d: %s", i, len(a), x)
		}
	}
	return fmt.Sprintf("%d rows", len(a))
}

// TestAdoptRefusalsAndAbort: what cannot be adopted in place is refused
// with the reason; a dry run changes nothing; only one rewrite of a table
// runs at a time; an interrupted adoption can be undone, leaving the
// table as it was.
func TestAdoptRefusalsAndAbort(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	direct := db.direct(t)
	mustExec(t, direct, fmt.Sprintf(adoptDDL, "acct"))
	mustExec(t, direct, `INSERT INTO acct SELECT i, 'owner-' || i, i, date '2020-01-01' + i, 'n' || i FROM generate_series(1, 2000) i`)
	mustExec(t, direct, "CREATE INDEX acct_note ON acct (lower(note))")
	mustExec(t, direct, "ALTER TABLE acct ADD CONSTRAINT acct_born_recent CHECK (born > '1900-01-01')")
	shape := func() string {
		var s string
		if err := direct.QueryRow(ctx, `SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'acct'::regclass AND attnum > 0 AND NOT attisdropped`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := direct.QueryRow(ctx, "SELECT count(*) FROM pgonion.tables WHERE table_name = 'acct'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s (in the catalog: %d)", s, n)
	}
	before := shape()
	rw := newRewriter(t, db)

	_, err := rw.EncryptColumns(ctx, "public", "acct", []string{"note"}, adoptPolicy)
	if err == nil || !strings.Contains(err.Error(), "index acct_note") || !strings.Contains(err.Error(), "expressions") {
		t.Fatalf("column with an expression index: %v", err)
	}
	_, err = rw.EncryptColumns(ctx, "public", "acct", []string{"born"}, adoptPolicy)
	if err == nil || !strings.Contains(err.Error(), "acct_born_recent") {
		t.Fatalf("column with a CHECK constraint: %v", err)
	}
	mustExec(t, direct, "ALTER TABLE acct DROP CONSTRAINT acct_born_recent")
	rw.DryRun = true
	plan, err := rw.EncryptColumns(ctx, "public", "acct", []string{"owner", "born"}, adoptPolicy)
	if err != nil || len(plan.Columns) != 2 || !plan.Register {
		t.Fatalf("dry run: %+v %v", plan, err)
	}
	if got := shape(); got != before {
		t.Fatalf("a dry run changed the table: %s, was %s", got, before)
	}
	rw.DryRun = false

	stop := errors.New("stopped")
	rw.AfterBatch = func(p recrypt.Progress) error {
		// Meanwhile another rewriter is turned away.
		other := newRewriter(t, db)
		if _, err := other.EncryptColumns(ctx, "public", "acct", []string{"owner"}, adoptPolicy); !errors.Is(err, recrypt.ErrBusy) {
			t.Errorf("a second rewriter: %v, want ErrBusy", err)
		}
		return stop
	}
	if _, err := rw.EncryptColumns(ctx, "public", "acct", []string{"owner", "born"}, adoptPolicy); !errors.Is(err, stop) {
		t.Fatalf("stopped adoption: %v", err)
	}
	if got := shape(); got == before {
		t.Fatal("the stopped adoption left no shadow columns to undo")
	}
	rw.AfterBatch = nil
	aborted, err := rw.Abort(ctx, "public", "acct", nil)
	if err != nil || len(aborted) != 2 {
		t.Fatalf("abort: %v %v", aborted, err)
	}
	if got := shape(); got != before {
		t.Fatalf("after the abort the table is %s, was %s", got, before)
	}
}

// walSince returns the bytes of the WAL written from lsn to now, as the
// segment files hold them (full-page images and tuple data included), or
// skips the check when the server's files are not on this machine.
func walSince(t *testing.T, direct *pgx.Conn, lsn string) string {
	t.Helper()
	ctx := context.Background()
	var dataDir, end string
	var segSize, tli int64
	if err := direct.QueryRow(ctx, `SELECT current_setting('data_directory'), pg_current_wal_insert_lsn()::text,
		pg_size_bytes(current_setting('wal_segment_size')), (SELECT timeline_id FROM pg_control_checkpoint())`).Scan(&dataDir, &end, &segSize, &tli); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dataDir + "/pg_wal"); err != nil {
		t.Logf("WAL check skipped: %v", err)
		return ""
	}
	abs := func(l string) int64 {
		var hi, lo int64
		if _, err := fmt.Sscanf(l, "%X/%X", &hi, &lo); err != nil {
			t.Fatal(err)
		}
		return hi<<32 | lo
	}
	from, to := abs(lsn), abs(end)
	perID := int64(0x100000000) / segSize
	var all []byte
	for seg := from / segSize; seg <= to/segSize; seg++ {
		name := fmt.Sprintf("%s/pg_wal/%08X%08X%08X", dataDir, tli, seg/perID, seg%perID)
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("reading WAL segment: %v", err)
		}
		lo, hi := int64(0), int64(len(b))
		if seg == from/segSize {
			lo = from % segSize
		}
		if seg == to/segSize {
			hi = to % segSize
		}
		all = append(all, b[lo:hi]...)
	}
	t.Logf("WAL from %s to %s: %d bytes checked", lsn, end, len(all))
	return string(all)
}

// TestRotateAndReshape re-encrypts columns of a table created through the
// proxy while the application writes: under fresh keys (a peeled onion
// starts at RND again; an incremented column is whole again), then with
// an onion added; the answers stay those of a plaintext copy throughout.
func TestRotateAndReshape(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	direct := db.direct(t)
	policy := func(table, column string) rewrite.ColumnPolicy {
		switch column {
		case "id":
			return rewrite.ColumnPolicy{Policy: catalog.Plain}
		case "bal":
			return rewrite.ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq", "ord", "add"}}
		case "note":
			return rewrite.ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq"}}
		}
		return rewrite.ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq", "ord"}}
	}
	p := startProxy(t, db, policy)
	app := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	prepared := p.connect(t, pgx.QueryExecModeCacheStatement)
	const ddl = "CREATE TABLE %s (id int PRIMARY KEY, owner text, bal int, note text)"
	mustExec(t, app, fmt.Sprintf(ddl, "rot"))
	mustExec(t, direct, fmt.Sprintf(ddl, "rot_plain"))
	var values []string
	for i := 1; i <= 600; i++ {
		values = append(values, fmt.Sprintf("(%d, 'owner-%d', %d, 'note-%d')", i, i%30, i%100, i))
	}
	mustExec(t, app, "INSERT INTO rot VALUES "+strings.Join(values, ", "))
	mustExec(t, direct, "INSERT INTO rot_plain VALUES "+strings.Join(values, ", "))
	both := func(sql string) {
		t.Helper()
		mustExec(t, app, fmt.Sprintf(sql, "rot"))
		mustExec(t, direct, fmt.Sprintf(sql, "rot_plain"))
	}
	queries := []string{
		"SELECT id, owner, bal, note FROM %s",
		"SELECT id FROM %s WHERE owner = 'owner-7'",
		"SELECT sum(bal), count(note) FROM %s",
	}
	same := func(stage string, qs ...string) {
		t.Helper()
		for _, q := range append(queries, qs...) {
			for _, c := range []*pgx.Conn{app, prepared} {
				mode := c.Config().DefaultQueryExecMode
				got, gerr := runSorted(ctx, c, mode, fmt.Sprintf(q, "rot"), nil)
				want, werr := runSorted(ctx, direct, mode, fmt.Sprintf(q, "rot_plain"), nil)
				if gerr != nil || werr != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: %s (%v):\n got %s %v\nwant %s %v", stage, q, mode, rowDiff(got, want), gerr, rowDiff(want, got), werr)
				}
			}
		}
	}
	column := func(name string) catalog.Column {
		t.Helper()
		snap, err := catalog.Load(ctx, direct, mustMACKey(t, db))
		if err != nil {
			t.Fatal(err)
		}
		return *snap.Table("public", "rot").Column(name)
	}
	same("before") // peels owner's Eq onion to DET
	both("UPDATE %s SET bal = bal + 5 WHERE id <= 10")
	if c := column("owner"); c.Onions["eq"] != "det" || column("bal").Incremented != true {
		t.Fatalf("before the rotation: owner %v, bal incremented %v", c.Onions, column("bal").Incremented)
	}
	var cellBefore []byte
	if err := direct.QueryRow(ctx, "SELECT owner__eq::text::bytea FROM rot WHERE id = 1").Scan(&cellBefore); err != nil {
		t.Fatal(err)
	}

	rw := newRewriter(t, db)
	writes := 0
	rw.AfterBatch = func(recrypt.Progress) error {
		writes++
		both(fmt.Sprintf("UPDATE %%s SET owner = 'moved-%d', note = NULL WHERE id = %d", writes, 100+writes))
		both(fmt.Sprintf("INSERT INTO %%s VALUES (%d, 'new', 1, 'fresh')", 5000+writes))
		same(fmt.Sprintf("during the rotation, batch %d", writes))
		return nil
	}
	plan, err := rw.RotateColumns(ctx, "public", "rot", nil)
	if err != nil || len(plan.Columns) != 3 || writes < 3 {
		t.Fatalf("rotation: %+v %v (%d batches)", plan, err, writes)
	}
	for _, name := range []string{"owner", "bal", "note"} {
		if c := column(name); c.KeyVersion != 1 || c.Incremented || c.Onions["eq"] != "rnd" {
			t.Fatalf("after the rotation %s: key version %d, incremented %v, onions %v", name, c.KeyVersion, c.Incremented, c.Onions)
		}
	}
	var cellAfter []byte
	if err := direct.QueryRow(ctx, "SELECT owner__eq::text::bytea FROM rot WHERE id = 1").Scan(&cellAfter); err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(cellBefore, cellAfter) {
		t.Fatal("the rotation left owner's cell as it was")
	}
	// bal was incremented: whole again, it can be compared.
	same("after the rotation", "SELECT id FROM %s WHERE bal = 15")

	// Add the Ord onion to note.
	to := column("note")
	to.Capabilities = []string{"eq", "ord"}
	to.Onions = map[string]string{"eq": "rnd", "ord": "rnd"}
	if _, err := rw.ReshapeColumn(ctx, "public", "rot", "note", to); err != nil {
		t.Fatal(err)
	}
	if c := column("note"); c.Onions["ord"] != "rnd" {
		t.Fatalf("after the reshape note has onions %v", c.Onions)
	}
	same("after adding an onion", "SELECT id FROM %s WHERE note < 'note-2'")
}

func mustMACKey(t *testing.T, db *encDB) []byte {
	t.Helper()
	k, err := catalog.MACKey(db.store.Deriver())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestRekeyIntoJoinGroup moves an encrypted column into a join group
// after its table was created (re-encrypting it under the group's keys),
// after which the server evaluates the join, as it does for columns
// declared in the group from the start.
func TestRekeyIntoJoinGroup(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	direct := db.direct(t)
	policy := func(table, column string) rewrite.ColumnPolicy {
		switch {
		case column == "id":
			return rewrite.ColumnPolicy{Policy: catalog.Plain}
		case table == "public.cust" && column == "k":
			return rewrite.ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq"}, JoinGroup: "custkey"}
		}
		return rewrite.ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq"}}
	}
	p := startProxy(t, db, policy)
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	for _, conn := range []*pgx.Conn{c, direct} {
		sfx := map[*pgx.Conn]string{c: "", direct: "_plain"}[conn]
		mustExec(t, conn, fmt.Sprintf("CREATE TABLE cust%s (id int, k int, name text)", sfx))
		mustExec(t, conn, fmt.Sprintf("CREATE TABLE ord%s (id int, k int)", sfx))
		mustExec(t, conn, fmt.Sprintf("INSERT INTO cust%s VALUES (1, 10, 'ann'), (2, 20, 'bob'), (3, 30, 'cy')", sfx))
		mustExec(t, conn, fmt.Sprintf("INSERT INTO ord%s VALUES (100, 10), (101, 10), (102, 30), (103, 40)", sfx))
	}
	const join = "SELECT o.id, c.name FROM ord%s o JOIN cust%s c ON o.k = c.k"
	// Inside a transaction block the proxy does not re-key on demand.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, fmt.Sprintf(join, "", ""))
	_ = tx.Rollback(ctx)
	if pgCode(err) != "0A000" || !strings.Contains(err.Error(), "join") {
		t.Fatalf("join across keys before the re-key: %v, want 0A000 naming the join", err)
	}
	snap, err := catalog.Load(ctx, direct, mustMACKey(t, db))
	if err != nil {
		t.Fatal(err)
	}
	if p.eng.Rekeys() != 0 {
		t.Fatal("re-keyed on demand inside a transaction block")
	}
	cur := *snap.Table("public", "ord").Column("k")
	to, err := recrypt.Target("public", "ord", cur, func(string, string) rewrite.ColumnPolicy {
		return rewrite.ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq"}, JoinGroup: "custkey"}
	})
	if err != nil {
		t.Fatal(err)
	}
	to.Format = snap.Table("public", "cust").Column("k").Format
	if _, err := newRewriter(t, db).ReshapeColumn(ctx, "public", "ord", "k", to); err != nil {
		t.Fatal(err)
	}
	got, gerr := runSorted(ctx, c, pgx.QueryExecModeSimpleProtocol, fmt.Sprintf(join, "", ""), nil)
	want, werr := runSorted(ctx, direct, pgx.QueryExecModeSimpleProtocol, fmt.Sprintf(join, "_plain", "_plain"), nil)
	if gerr != nil || werr != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("join after the re-key:\n got %v %v\nwant %v %v", got, gerr, want, werr)
	}

	// Rotating the group's keys: one table at a time, the join refused in
	// between (never answered wrongly), whole again at the end.
	rw := newRewriter(t, db)
	if _, err := rw.RotateColumns(ctx, "public", "cust", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, fmt.Sprintf(join, "", "")); pgCode(err) != "0A000" || !strings.Contains(err.Error(), "at different keys") {
		t.Fatalf("join with the group rotated in one table: %v, want 0A000 naming the key versions", err)
	}
	if _, err := rw.RotateColumns(ctx, "public", "ord", nil); err != nil {
		t.Fatal(err)
	}
	got, gerr = runSorted(ctx, c, pgx.QueryExecModeSimpleProtocol, fmt.Sprintf(join, "", ""), nil)
	if gerr != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("join after rotating the group:\n got %v %v\nwant %v", got, gerr, want)
	}
	var versions string
	if err := direct.QueryRow(ctx, `SELECT string_agg(t.table_name || '.' || c.column_name || '=' || c.group_key_version || '/' || c.key_version, ',' ORDER BY t.table_name)
		FROM pgonion.columns c JOIN pgonion.tables t USING (table_id) WHERE c.join_group = 'custkey'`).Scan(&versions); err != nil || versions != "cust.k=1/1,ord.k=1/1" {
		t.Fatalf("group and column key versions after the rotation: %q (%v)", versions, err)
	}
}

package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// TestOldFormatColumnsKeepWorking: columns recorded with an older cell
// format (1: AES-SIV in every Eq onion; 2: compact Eq cells, all cells
// bytea) are still written, read, compared and peeled in their format,
// and a column added later to their join group gets their format too, so
// that the join compares ciphertexts of one format; other new columns get
// the latest format (uuid cells).
func TestOldFormatColumnsKeepWorking(t *testing.T) {
	for _, tc := range []struct {
		format   int
		rnd, det int // Eq cell lengths of the integer, numeric and date columns
	}{
		{1, 32, 24}, // AES-SIV of an 8-byte integer form, in CBC with padding
		{2, 16, 16}, // one AES block at either layer
	} {
		t.Run(fmt.Sprint("format ", tc.format), func(t *testing.T) {
			testOldFormat(t, tc.format, tc.rnd, tc.det)
		})
	}
}

func testOldFormat(t *testing.T, format, rndLen, detLen int) {
	ctx := context.Background()
	db := newEncDB(t)
	policy := func(table, column string) rewrite.ColumnPolicy {
		pol := rewrite.ColumnPolicy{Policy: catalog.Encrypted}
		if column == "k" {
			pol.JoinGroup = "k"
		}
		return pol
	}
	mustExec(t, startProxy(t, db, policy).connect(t, pgx.QueryExecModeSimpleProtocol),
		"CREATE TABLE legacy (k int, amount numeric(10,2), day date, note text)")

	// Record the columns as an older proxy did: its format, and bytea
	// cells on the server.
	direct := db.direct(t)
	macKey, err := catalog.MACKey(db.store.Deriver())
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Load(ctx, direct, macKey)
	if err != nil {
		t.Fatal(err)
	}
	tbl := snap.Table("public", "legacy")
	for i := range tbl.Columns {
		tbl.Columns[i].Format = format
	}
	tx, err := direct.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.UpdateTable(ctx, tx, macKey, tbl); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'legacy' AND data_type = 'uuid'")
	if err != nil {
		t.Fatal(err)
	}
	uuids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range uuids {
		if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE legacy ALTER COLUMN %s TYPE bytea USING uuid_send(%s)", c, c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	conn := startProxy(t, db, policy).connect(t, pgx.QueryExecModeCacheStatement)
	mustExec(t, conn, "INSERT INTO legacy VALUES (1, 1.50, '2024-01-01', 'a'), (2, 2.25, '2024-01-02', 'b'), (3, 1.50, '2024-01-03', NULL)")
	mustExec(t, conn, "CREATE TABLE fresh (k bigint, v int)")
	mustExec(t, conn, "INSERT INTO fresh VALUES (1, 10), (3, 30), (4, 40)")

	cellLen := func(table, cell string) int {
		t.Helper()
		var n int
		if err := direct.QueryRow(ctx, "SELECT max(octet_length("+cell+")) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, cell := range []string{"k__eq", "amount__eq", "day__eq"} {
		if n := cellLen("legacy", cell); n != rndLen {
			t.Errorf("legacy.%s: %d-byte cells, want %d (format %d)", cell, n, rndLen, format)
		}
	}
	if n := cellLen("fresh", "k__eq"); n != rndLen {
		t.Errorf("fresh.k (join group of format %d): %d-byte cells, want %d", format, n, rndLen)
	}
	if n := cellLen("fresh", "uuid_send(v__eq)"); n != 16 {
		t.Errorf("fresh.v: %d-byte cells, want 16 (uuid)", n)
	}

	type row struct {
		K      int
		Amount float64
		V      int
	}
	rows, err = conn.Query(ctx, "SELECT l.k, l.amount, f.v FROM legacy l JOIN fresh f ON l.k = f.k WHERE l.amount = 1.5 ORDER BY l.k")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	if want := []row{{1, 1.5, 10}, {3, 1.5, 30}}; !slices.Equal(got, want) {
		t.Fatalf("join over format %d columns: %v, want %v", format, got, want)
	}
	// The join and the equality peeled the Eq onions to DET.
	if n := cellLen("legacy", "k__eq"); n != detLen {
		t.Errorf("legacy.k at DET: %d-byte cells, want %d", n, detLen)
	}
	var note string
	if err := conn.QueryRow(ctx, "SELECT note FROM legacy WHERE day = '2024-01-02'").Scan(&note); err != nil || note != "b" {
		t.Fatalf("equality on a format %d date: %q %v", format, note, err)
	}
	// Ranges, MIN and MAX peel the Ord onions: bytea in the old format,
	// uuid in the new one.
	var lo, hi time.Time
	var n int
	if err := conn.QueryRow(ctx, "SELECT min(day), max(day), count(*) FROM legacy WHERE day > '2024-01-01'").Scan(&lo, &hi, &n); err != nil ||
		lo.Format(time.DateOnly) != "2024-01-02" || hi.Format(time.DateOnly) != "2024-01-03" || n != 2 {
		t.Fatalf("range over a format %d date: %v %v %d %v", format, lo, hi, n, err)
	}
	var vmin, vmax int
	if err := conn.QueryRow(ctx, "SELECT min(v), max(v), count(*) FROM fresh WHERE v >= 30").Scan(&vmin, &vmax, &n); err != nil || vmin != 30 || vmax != 40 || n != 2 {
		t.Fatalf("range over a uuid column: %d %d %d %v", vmin, vmax, n, err)
	}
	if n := cellLen("fresh", "uuid_send(v__ord)"); n != 16 {
		t.Errorf("fresh.v at OPE: %d-byte cells, want 16", n)
	}

	snap, err = catalog.Load(ctx, direct, macKey)
	if err != nil {
		t.Fatal(err)
	}
	f := snap.Table("public", "fresh")
	if k, v := f.Column("k"), f.Column("v"); k.CellFormat() != format || v.CellFormat() != int(onion.FormatLatest) {
		t.Fatalf("formats of fresh: k %d, v %d; want %d (its join group's) and %d", k.CellFormat(), v.CellFormat(), format, onion.FormatLatest)
	}
}

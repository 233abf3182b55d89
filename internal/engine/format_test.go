package engine_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// TestFormatSIVColumnsKeepWorking: columns recorded with cell format 1
// (AES-SIV in every Eq onion, before the compact format) are still
// written, read, compared and peeled in their format, and a column added
// later to their join group gets format 1 too, so that the join compares
// ciphertexts of one format; other new columns get the compact format.
func TestFormatSIVColumnsKeepWorking(t *testing.T) {
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

	// Record the columns as an older proxy did: format 1.
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
		tbl.Columns[i].Format = 1
	}
	tx, err := direct.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.UpdateTable(ctx, tx, macKey, tbl); err != nil {
		t.Fatal(err)
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
	// AES-SIV of an 8-byte integer form (24 bytes) in CBC with padding.
	for _, cell := range []string{"k__eq", "amount__eq", "day__eq"} {
		if n := cellLen("legacy", cell); n != 32 {
			t.Errorf("legacy.%s: %d-byte cells, want 32 (format 1)", cell, n)
		}
	}
	if n := cellLen("fresh", "k__eq"); n != 32 {
		t.Errorf("fresh.k (join group of format 1): %d-byte cells, want 32", n)
	}
	if n := cellLen("fresh", "v__eq"); n != 16 {
		t.Errorf("fresh.v: %d-byte cells, want 16 (compact)", n)
	}

	type row struct {
		K      int
		Amount float64
		V      int
	}
	rows, err := conn.Query(ctx, "SELECT l.k, l.amount, f.v FROM legacy l JOIN fresh f ON l.k = f.k WHERE l.amount = 1.5 ORDER BY l.k")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	if want := []row{{1, 1.5, 10}, {3, 1.5, 30}}; !slices.Equal(got, want) {
		t.Fatalf("join over format 1 columns: %v, want %v", got, want)
	}
	// The join and the equality peeled the Eq onions to DET: 24 bytes.
	if n := cellLen("legacy", "k__eq"); n != 24 {
		t.Errorf("legacy.k at DET: %d-byte cells, want 24", n)
	}
	var note string
	if err := conn.QueryRow(ctx, "SELECT note FROM legacy WHERE day = '2024-01-02'").Scan(&note); err != nil || note != "b" {
		t.Fatalf("equality on a format 1 date: %q %v", note, err)
	}

	snap, err = catalog.Load(ctx, direct, macKey)
	if err != nil {
		t.Fatal(err)
	}
	f := snap.Table("public", "fresh")
	if k, v := f.Column("k"), f.Column("v"); k.CellFormat() != 1 || v.CellFormat() != 2 {
		t.Fatalf("formats of fresh: k %d, v %d; want 1 (its join group's) and 2", k.CellFormat(), v.CellFormat())
	}
}

package catalog

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestRekey moves a catalog to another generation's key: afterwards only
// the new key verifies it, its content and the recorded generation are
// as expected, and a tampered catalog is not re-keyed.
func TestRekey(t *testing.T) {
	ctx := context.Background()
	_, c, oldKey := setup(t)
	newKey := append([]byte(nil), oldKey...)
	newKey[3] ^= 0x5a
	inTx(t, c, func(tx pgx.Tx) error { return BindKeyStore(ctx, tx, oldKey, "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0") })
	tbl := sample()
	tbl.Columns[1].RootGeneration = 2 // covered by its MAC from 1 on
	inTx(t, c, func(tx pgx.Tx) error { return CreateTable(ctx, tx, oldKey, tbl) })
	inTx(t, c, func(tx pgx.Tx) error {
		return SetPolicy(ctx, tx, oldKey, ColumnPolicy{Schema: "public", Table: "t2", Column: "c", Policy: Encrypted, Capabilities: []string{"eq"}})
	})
	before, err := Load(ctx, c, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if gen, err := MACGeneration(ctx, c); err != nil || gen != 0 {
		t.Fatalf("generation %d (%v) before, want 0", gen, err)
	}
	inTx(t, c, func(tx pgx.Tx) error { return Rekey(ctx, tx, oldKey, newKey, 1) })
	if gen, err := MACGeneration(ctx, c); err != nil || gen != 1 {
		t.Fatalf("generation %d (%v) after, want 1", gen, err)
	}
	if _, err := Load(ctx, c, oldKey); !errors.Is(err, ErrTampered) {
		t.Fatalf("the old key still verifies the catalog: %v", err)
	}
	after, err := Load(ctx, c, newKey)
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != before.Version+1 || len(after.Tables()) != 1 || len(after.policies) != 1 ||
		after.Tables()[0].Columns[2].JoinGroup != "money" {
		t.Fatalf("content changed: version %d -> %d, %d tables, %d policies", before.Version, after.Version, len(after.Tables()), len(after.policies))
	}
	// A column's generation is authenticated.
	if _, err := c.Exec(ctx, "UPDATE pgonion.columns SET root_generation = 7 WHERE column_name = 'owner'"); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, c, newKey); !errors.Is(err, ErrTampered) {
		t.Fatalf("a changed root generation went unnoticed: %v", err)
	}
	// Tampered: not re-keyed.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := Rekey(ctx, tx, newKey, oldKey, 2); !errors.Is(err, ErrTampered) {
		t.Fatalf("a tampered catalog was re-keyed: %v", err)
	}
}

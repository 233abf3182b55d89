package catalog

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/keys"
	"github.com/pgonion/pgonion/internal/pgtest"
	"github.com/pgonion/pgonion/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// setup returns a migrated database, a connection to it and a MAC key.
func setup(t *testing.T) (string, *pgx.Conn, []byte) {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	if _, err := migrations.Apply(ctx, c, migrations.FS); err != nil {
		t.Fatal(err)
	}
	d, err := keys.NewDeriver(make([]byte, keys.RootKeySize))
	if err != nil {
		t.Fatal(err)
	}
	key, err := MACKey(d)
	if err != nil {
		t.Fatal(err)
	}
	return dsn, c, key
}

func sample() *Table {
	return &Table{Schema: "public", Name: "accounts", Physical: "accounts", Columns: []Column{
		{Position: 1, Name: "id", Type: "integer", Policy: Plain},
		{Position: 2, Name: "owner", Type: "text", Policy: Encrypted, Capabilities: []string{"eq", "search"},
			Onions: map[string]string{"eq": "rnd", "search": "search"}, Format: 2},
		{Position: 3, Name: "balance", Type: "numeric(12,2)", Policy: Sensitive, Capabilities: []string{"eq", "ord", "add"},
			Onions: map[string]string{"eq": "rnd", "ord": "rnd", "add": "hom"}, JoinGroup: "money"},
	}}
}

func inTx(t *testing.T, c *pgx.Conn, f func(pgx.Tx) error) {
	t.Helper()
	ctx := context.Background()
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback(ctx)
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTripAndUpdate(t *testing.T) {
	ctx := context.Background()
	_, c, key := setup(t)
	tbl := sample()
	inTx(t, c, func(tx pgx.Tx) error { return CreateTable(ctx, tx, key, tbl) })
	s, err := Load(ctx, c, key)
	if err != nil {
		t.Fatal(err)
	}
	staleSnap, err := Load(ctx, c, key) // an independent copy, updated by nobody
	if err != nil {
		t.Fatal(err)
	}
	got := s.Table("public", "accounts")
	if got == nil || got.ID != tbl.ID || len(got.Columns) != 3 || got.Version != 1 {
		t.Fatalf("loaded %+v", got)
	}
	b := got.Column("balance")
	if b == nil || b.Type != "numeric(12,2)" || b.Policy != Sensitive || b.JoinGroup != "money" ||
		b.Onions["add"] != "hom" || strings.Join(b.Capabilities, ",") != "eq,ord,add" || b.ID != tbl.Columns[2].ID {
		t.Fatalf("balance column %+v", b)
	}
	if o := got.Column("owner"); o.Format != 2 || b.CellFormat() != 1 {
		t.Fatalf("cell formats: owner %d, balance %d (recorded %d)", o.Format, b.CellFormat(), b.Format)
	}
	// A peel: the eq onion of owner goes to DET.
	got.Column("owner").Onions["eq"] = "det"
	got.Column("owner").Name = "holder"
	inTx(t, c, func(tx pgx.Tx) error { return UpdateTable(ctx, tx, key, got) })
	s2, err := Load(ctx, c, key)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Version <= s.Version {
		t.Fatalf("catalog version %d did not grow from %d", s2.Version, s.Version)
	}
	h := s2.Table("public", "accounts").Column("holder")
	if h == nil || h.Onions["eq"] != "det" || h.ID != tbl.Columns[1].ID {
		t.Fatalf("after update: %+v", h)
	}
	// Updating from a stale copy fails.
	stale := staleSnap.Table("public", "accounts")
	tx, _ := c.Begin(ctx)
	if err := UpdateTable(ctx, tx, key, stale); err == nil || !strings.Contains(err.Error(), "concurrently") {
		t.Fatalf("stale update: %v", err)
	}
	_ = tx.Rollback(ctx)
	inTx(t, c, func(tx pgx.Tx) error { return DropTable(ctx, tx, key, tbl.ID) })
	s3, err := Load(ctx, c, key)
	if err != nil || s3.Table("public", "accounts") != nil || len(s3.Tables()) != 0 {
		t.Fatalf("after drop: %v %v", s3.Tables(), err)
	}
}

// TestTamperDetected changes the catalog behind the proxy's back in every
// way a DBA could; Load must refuse each.
func TestTamperDetected(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, sql string }{
		{"downgrade a policy", "UPDATE pgonion.columns SET policy = 'plain' WHERE column_name = 'balance'"},
		{"change a layer", `UPDATE pgonion.columns SET onions = '{"eq": "det", "search": "search"}' WHERE column_name = 'owner'`},
		{"drop a capability", "UPDATE pgonion.columns SET capabilities = '{eq}' WHERE column_name = 'owner'"},
		{"rename a column", "UPDATE pgonion.columns SET column_name = 'x' WHERE column_name = 'owner'"},
		{"change a type", "UPDATE pgonion.columns SET type_name = 'text' WHERE column_name = 'balance'"},
		{"leave a join group", "UPDATE pgonion.columns SET join_group = NULL WHERE column_name = 'balance'"},
		{"downgrade a cell format", "UPDATE pgonion.columns SET cell_format = 1 WHERE column_name = 'owner'"},
		{"upgrade a cell format", "UPDATE pgonion.columns SET cell_format = 2 WHERE column_name = 'balance'"},
		{"delete a column", "DELETE FROM pgonion.columns WHERE column_name = 'owner'"},
		{"swap column positions", "UPDATE pgonion.columns SET position = 100 WHERE position = 1; UPDATE pgonion.columns SET position = 1 WHERE position = 3; UPDATE pgonion.columns SET position = 3 WHERE position = 100"},
		{"repoint the table", "UPDATE pgonion.tables SET physical_name = 'other'"},
		{"roll a table version back", "UPDATE pgonion.tables SET version = version - 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c, key := setup(t)
			tbl := sample()
			inTx(t, c, func(tx pgx.Tx) error { return CreateTable(ctx, tx, key, tbl) })
			// An update first, so that a version roll-back has somewhere to go.
			tbl.Columns[0].Name = "ident"
			inTx(t, c, func(tx pgx.Tx) error { return UpdateTable(ctx, tx, key, tbl) })
			if _, err := Load(ctx, c, key); err != nil {
				t.Fatalf("untouched catalog: %v", err)
			}
			if _, err := c.Exec(ctx, tc.sql); err != nil {
				t.Fatal(err)
			}
			if _, err := Load(ctx, c, key); !errors.Is(err, ErrTampered) {
				t.Fatalf("Load after %q: %v, want ErrTampered", tc.sql, err)
			}
		})
	}
	// Replaying a column row from an older version of its table.
	t.Run("replay an old column row", func(t *testing.T) {
		_, c, key := setup(t)
		tbl := sample()
		inTx(t, c, func(tx pgx.Tx) error { return CreateTable(ctx, tx, key, tbl) })
		if _, err := c.Exec(ctx, "CREATE TABLE old AS SELECT * FROM pgonion.columns WHERE column_name = 'balance'"); err != nil {
			t.Fatal(err)
		}
		tbl.Columns[2].Onions["ord"] = "ope" // a peel recorded through the proxy
		inTx(t, c, func(tx pgx.Tx) error { return UpdateTable(ctx, tx, key, tbl) })
		if _, err := c.Exec(ctx, "DELETE FROM pgonion.columns WHERE column_name = 'balance'; INSERT INTO pgonion.columns SELECT * FROM old"); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(ctx, c, key); !errors.Is(err, ErrTampered) {
			t.Fatalf("replayed row: %v, want ErrTampered", err)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		_, c, key := setup(t)
		inTx(t, c, func(tx pgx.Tx) error { return CreateTable(ctx, tx, key, sample()) })
		other := append([]byte(nil), key...)
		other[0] ^= 1
		if _, err := Load(ctx, c, other); !errors.Is(err, ErrTampered) {
			t.Fatalf("Load with another key: %v", err)
		}
	})
}

func TestKeyStoreBinding(t *testing.T) {
	ctx := context.Background()
	_, c, key := setup(t)
	a, b := "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0", "11111111-2222-4333-8444-555555555555"
	inTx(t, c, func(tx pgx.Tx) error { return BindKeyStore(ctx, tx, key, a) })
	inTx(t, c, func(tx pgx.Tx) error { return BindKeyStore(ctx, tx, key, a) })
	tx, _ := c.Begin(ctx)
	defer tx.Rollback(ctx)
	if err := BindKeyStore(ctx, tx, key, b); err == nil || !strings.Contains(err.Error(), "hint:") {
		t.Fatalf("binding another key store: %v", err)
	}
}

// TestChangesSeenByAnotherProxy: a second connection sees the version move
// and the NOTIFY arrive, and reloads the change.
func TestChangesSeenByAnotherProxy(t *testing.T) {
	ctx := context.Background()
	dsn, c, key := setup(t)
	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	if _, err := other.Exec(ctx, "LISTEN pgonion_catalog"); err != nil {
		t.Fatal(err)
	}
	v0, err := Version(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	inTx(t, c, func(tx pgx.Tx) error { return CreateTable(ctx, tx, key, sample()) })
	if _, err := other.WaitForNotification(ctx); err != nil {
		t.Fatal(err)
	}
	v1, err := Version(ctx, other)
	if err != nil || v1 <= v0 {
		t.Fatalf("version %d -> %d (%v)", v0, v1, err)
	}
	s, err := Load(ctx, other, key)
	if err != nil || s.Table("public", "accounts") == nil {
		t.Fatalf("other proxy's load: %v", err)
	}
}

// TestCreateTableSQL runs the literal form of CreateTable inside a DO block
// together with a CREATE TABLE, as the proxy will: the catalog loads and
// authenticates, and a failing DDL leaves no metadata behind.
func TestCreateTableSQL(t *testing.T) {
	ctx := context.Background()
	_, c, key := setup(t)
	tbl := sample()
	tbl.Columns[1].Name = "own'er" // quoting
	doBlock := func(ddl, meta string) string {
		return "DO $pgonion$ BEGIN " + ddl + "; " + meta + " END $pgonion$"
	}
	base, err := Load(ctx, c, key)
	if err != nil {
		t.Fatal(err)
	}
	meta := CreateTableSQL(key, tbl)
	meta += SealSQL(key, base.WithTable(tbl), base.Version)
	if _, err := c.Exec(ctx, doBlock("CREATE TABLE accounts (id int)", meta)); err != nil {
		t.Fatal(err)
	}
	s, err := Load(ctx, c, key)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Table("public", "accounts")
	if got == nil || got.ID != tbl.ID || got.Column("own'er") == nil || got.Column("balance").Onions["add"] != "hom" || got.Column("balance").JoinGroup != "money" {
		t.Fatalf("loaded %+v", got)
	}
	other := sample()
	other.Name = "second"
	meta = CreateTableSQL(key, other) + SealSQL(key, s.WithTable(other), s.Version)
	if _, err := c.Exec(ctx, doBlock("CREATE TABLE accounts (id int)", meta)); err == nil {
		t.Fatal("duplicate CREATE TABLE succeeded")
	}
	// Sealing on top of a version that moved fails with 40001.
	third := sample()
	third.Name = "third"
	meta = CreateTableSQL(key, third) + SealSQL(key, base.WithTable(third), base.Version)
	var pe *pgconn.PgError
	if _, err := c.Exec(ctx, doBlock("CREATE TABLE third (id int)", meta)); !errors.As(err, &pe) || pe.Code != "40001" {
		t.Fatalf("sealing on a stale version: %v, want 40001", err)
	}
	s, err = Load(ctx, c, key)
	if err != nil || s.Table("public", "second") != nil {
		t.Fatalf("metadata of a failed DDL was kept: %v", err)
	}
}

// TestSealDetects: changes that row MACs alone cannot see (a row deleted,
// a policy row replayed, a table's rows replaced by an older consistent
// copy, the seal removed or replayed) make Load fail.
func TestSealDetects(t *testing.T) {
	ctx := context.Background()
	build := func(t *testing.T) (*pgx.Conn, []byte, *Table) {
		_, c, key := setup(t)
		tbl := sample()
		inTx(t, c, func(tx pgx.Tx) error { return BindKeyStore(ctx, tx, key, "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0") })
		inTx(t, c, func(tx pgx.Tx) error { return CreateTable(ctx, tx, key, tbl) })
		second := sample()
		second.Name = "second"
		inTx(t, c, func(tx pgx.Tx) error { return CreateTable(ctx, tx, key, second) })
		inTx(t, c, func(tx pgx.Tx) error {
			return SetPolicy(ctx, tx, key, ColumnPolicy{Schema: "public", Table: "people", Column: "ssn", Policy: Plain})
		})
		if _, err := c.Exec(ctx, "CREATE TABLE old_policies AS SELECT * FROM pgonion.policies; CREATE TABLE old_version AS SELECT * FROM pgonion.catalog_version;"+
			"CREATE TABLE old_tables AS SELECT * FROM pgonion.tables; CREATE TABLE old_columns AS SELECT * FROM pgonion.columns"); err != nil {
			t.Fatal(err)
		}
		// Changes made through the proxy after the copies.
		inTx(t, c, func(tx pgx.Tx) error {
			return SetPolicy(ctx, tx, key, ColumnPolicy{Schema: "public", Table: "people", Column: "ssn", Policy: Sensitive})
		})
		tbl.Columns[2].Onions["ord"] = "ope"
		inTx(t, c, func(tx pgx.Tx) error { return UpdateTable(ctx, tx, key, tbl) })
		if _, err := Load(ctx, c, key); err != nil {
			t.Fatalf("untouched catalog: %v", err)
		}
		return c, key, tbl
	}
	for _, tc := range []struct {
		name, sql string
		want      error
	}{
		{"delete a table", "DELETE FROM pgonion.tables WHERE table_name = 'accounts'", ErrTampered},
		{"delete a table and bump the version", "DELETE FROM pgonion.tables WHERE table_name = 'accounts'; UPDATE pgonion.catalog_version SET version = version + 1", ErrTampered},
		{"delete a policy", "DELETE FROM pgonion.policies", ErrTampered},
		{"replay a policy", "DELETE FROM pgonion.policies; INSERT INTO pgonion.policies SELECT * FROM old_policies", ErrTampered},
		{"replay a table's rows", "DELETE FROM pgonion.tables WHERE table_name = 'accounts'; INSERT INTO pgonion.tables SELECT * FROM old_tables WHERE table_name = 'accounts';" +
			"INSERT INTO pgonion.columns SELECT * FROM old_columns WHERE table_id = (SELECT table_id FROM old_tables WHERE table_name = 'accounts')", ErrTampered},
		{"remove the seal", "UPDATE pgonion.catalog_version SET seal = NULL", ErrUnsealed},
		{"replay an old seal", "UPDATE pgonion.catalog_version SET seal = (SELECT seal FROM old_version)", ErrTampered},
		{"unbind the key store", "DELETE FROM pgonion.keystore", ErrTampered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, key, _ := build(t)
			if _, err := c.Exec(ctx, tc.sql); err != nil {
				t.Fatal(err)
			}
			if _, err := Load(ctx, c, key); !errors.Is(err, tc.want) {
				t.Fatalf("Load after %q: %v, want %v", tc.sql, err, tc.want)
			}
			// A writer refuses to seal a tampered catalog.
			inner := sample()
			inner.Name = "third"
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if err := CreateTable(ctx, tx, key, inner); !errors.Is(err, tc.want) {
				t.Fatalf("CreateTable on the tampered catalog: %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("replay the whole catalog with its seal", func(t *testing.T) {
		c, key, _ := build(t)
		before, err := Load(ctx, c, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "DELETE FROM pgonion.tables; DELETE FROM pgonion.policies; DELETE FROM pgonion.catalog_version;"+
			"INSERT INTO pgonion.tables SELECT * FROM old_tables; INSERT INTO pgonion.columns SELECT * FROM old_columns;"+
			"INSERT INTO pgonion.policies SELECT * FROM old_policies; INSERT INTO pgonion.catalog_version SELECT * FROM old_version"); err != nil {
			t.Fatal(err)
		}
		// Consistent: it loads, but at an older version, which a proxy
		// that saw the newer one refuses (engine catalogCache).
		s, err := Load(ctx, c, key)
		if err != nil || s.Version >= before.Version {
			t.Fatalf("replayed catalog: version %v (was %d), %v", s, before.Version, err)
		}
	})
}

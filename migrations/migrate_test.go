package migrations

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func TestList(t *testing.T) {
	all, err := List(FS)
	if err != nil || len(all) == 0 || all[0].Version != 1 {
		t.Fatalf("List(FS) = %v, %v", all, err)
	}
	for name, files := range map[string]fstest.MapFS{
		"bad name":  {"01_x.sql": {Data: []byte("SELECT 1")}},
		"duplicate": {"0001_a.sql": {Data: []byte("SELECT 1")}, "0001_b.sql": {Data: []byte("SELECT 2")}},
	} {
		if _, err := List(files); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ordered, err := List(fstest.MapFS{"0010_b.sql": {Data: []byte("b")}, "0002_a.sql": {Data: []byte("a")}})
	if err != nil || ordered[0].Version != 2 || ordered[1].Version != 10 {
		t.Fatalf("order %v %v", ordered, err)
	}
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	c := connect(t, pgtest.DSN(t))
	applied, err := Apply(ctx, c, FS)
	all, _ := List(FS)
	if err != nil || len(applied) != len(all) {
		t.Fatalf("first Apply applied %d of %d: %v", len(applied), len(all), err)
	}
	again, err := Apply(ctx, c, FS)
	if err != nil || len(again) != 0 {
		t.Fatalf("second Apply applied %d: %v", len(again), err)
	}
	st, err := Check(ctx, c, FS)
	if err != nil || len(st) != len(all) || !st[0].Applied {
		t.Fatalf("Check = %v, %v", st, err)
	}
	// The aggregate of migration 1 exists.
	var sum string
	if err := c.QueryRow(ctx, "SELECT pgonion.paillier_sum(x, 1000)::text FROM (VALUES (7::numeric), (11), (NULL)) v(x)").Scan(&sum); err != nil || sum != "77" {
		t.Fatalf("paillier_sum = %q, %v", sum, err)
	}
}

func TestApplyConcurrently(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	fsys := fstest.MapFS{
		"0001_t.sql": {Data: []byte("CREATE TABLE pgonion.once (v int); INSERT INTO pgonion.once VALUES (1)")},
		"0002_u.sql": {Data: []byte("INSERT INTO pgonion.once VALUES (2)")},
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	conns := make([]*pgx.Conn, 4)
	for i := range conns {
		conns[i] = connect(t, dsn)
	}
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Apply(ctx, conns[i], fsys)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := conns[0].QueryRow(ctx, "SELECT count(*) FROM pgonion.once").Scan(&n); err != nil || n != 2 {
		t.Fatalf("migrations ran %d statements' worth (%v), want exactly once each", n, err)
	}
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	c := connect(t, pgtest.DSN(t))
	if _, err := Apply(ctx, c, FS); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO pgonion.schema_migrations VALUES (9999, '9999_future.sql', 'x')"); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, c, FS); !errors.Is(err, ErrNewerDatabase) {
		t.Fatalf("newer database: %v", err)
	}
	if _, err := Check(ctx, c, FS); !errors.Is(err, ErrNewerDatabase) {
		t.Fatalf("Check on newer database: %v", err)
	}
	if _, err := c.Exec(ctx, "DELETE FROM pgonion.schema_migrations WHERE version = 9999; UPDATE pgonion.schema_migrations SET checksum = 'edited' WHERE version = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, c, FS); err == nil || !strings.Contains(err.Error(), "different contents") {
		t.Fatalf("edited migration: %v", err)
	}
	// A failing migration leaves nothing behind.
	c2 := connect(t, pgtest.DSN(t))
	bad := fstest.MapFS{"0001_ok.sql": {Data: []byte("CREATE TABLE pgonion.a (v int)")}, "0002_bad.sql": {Data: []byte("CREATE TABLE pgonion.b (v int); SELECT 1/0")}}
	applied, err := Apply(ctx, c2, bad)
	if err == nil || len(applied) != 1 {
		t.Fatalf("failing migration: applied %v, err %v", applied, err)
	}
	var b bool
	if err := c2.QueryRow(ctx, "SELECT to_regclass('pgonion.b') IS NULL").Scan(&b); err != nil || !b {
		t.Fatalf("failed migration left its table: %v %v", b, err)
	}
}

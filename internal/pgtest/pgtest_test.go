package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func TestDSNGivesFreshDatabase(t *testing.T) {
	ctx := context.Background()
	a, b := DSN(t), DSN(t)
	if a == b {
		t.Fatalf("two calls returned the same DSN %q", a)
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("fresh database has %d user tables", n)
	}
}

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u@h:5/x?sslmode=disable", "postgres://u@h:5/db1?sslmode=disable"},
		{"host=h port=5 dbname=x", "host=h port=5 dbname=x dbname='db1'"},
	} {
		got, err := WithDatabase(tc.in, "db1")
		if err != nil || got != tc.want {
			t.Errorf("WithDatabase(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := WithDatabase(" ", "x"); err == nil {
		t.Error("empty DSN accepted")
	}
}

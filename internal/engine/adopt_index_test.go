package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/engine"
)

// TestRewritesKeepIndexes: a table with a primary key, a unique
// constraint, a two-column index and a search (gin, pg_trgm) index over
// the columns it encrypts keeps them through adoption, a key rotation and
// a decryption: each is rebuilt over the columns' new form and put in the
// old one's place, the constraints still hold (the server refuses a
// duplicate through the proxy), and the answers match plaintext.
func TestRewritesKeepIndexes(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	direct := db.direct(t)
	trgm := true
	if _, err := direct.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm"); err != nil {
		t.Logf("no pg_trgm (%v): the search index is left out", err)
		trgm = false
	}
	for _, name := range []string{"people", "people_plain"} {
		mustExec(t, direct, fmt.Sprintf(`CREATE TABLE %[1]s (id int PRIMARY KEY, email text NOT NULL CONSTRAINT %[1]s_email_key UNIQUE,
			city text, born date, bio text);
			CREATE INDEX %[1]s_city_born ON %[1]s (city, born DESC) INCLUDE (id);
			INSERT INTO %[1]s SELECT i, 'user' || i || '@example.org', 'city-' || (i %% 17), date '1960-01-01' + i, 'likes ' || (ARRAY['tea', 'coffee', 'cake'])[1 + i %% 3] || ' ' || i
			FROM generate_series(1, 1500) i`, name))
		if trgm {
			mustExec(t, direct, fmt.Sprintf("CREATE INDEX %[1]s_bio ON %[1]s USING gin (bio gin_trgm_ops)", name))
		}
	}
	p := startProxy(t, db, nil)
	conn := p.connect(t, pgx.QueryExecModeCacheStatement)
	queries := []string{
		"SELECT id, email, city, born, bio FROM %s WHERE id = 77",
		"SELECT id FROM %s WHERE email = 'user1234@example.org'",
		"SELECT id, born FROM %s WHERE city = 'city-3' AND born > '1962-01-01' ORDER BY id",
		"SELECT id FROM %s WHERE bio LIKE '%%coffee 11%%' ORDER BY id",
		"SELECT count(*), count(DISTINCT city) FROM %s",
	}
	same := func(stage string) {
		t.Helper()
		for _, q := range queries {
			got, want := queryStrings(t, conn, fmt.Sprintf(q, "people")), queryStrings(t, direct, fmt.Sprintf(q, "people_plain"))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: %s\nthrough the proxy: %v\nplaintext: %v", stage, q, got, want)
			}
		}
		// The constraints hold: a duplicate key and a duplicate email are refused.
		for _, dup := range []string{
			"INSERT INTO people VALUES (5, 'new@example.org', NULL, NULL, NULL)",
			"INSERT INTO people VALUES (100000, 'user5@example.org', NULL, NULL, NULL)",
		} {
			if _, err := conn.Exec(ctx, dup); pgCode(err) != "23505" {
				t.Fatalf("%s: %s: %v, want a unique violation (23505)", stage, dup, err)
			}
		}
	}
	indexes := func() string {
		t.Helper()
		rows, err := direct.Query(ctx, `SELECT c.relname || ' ' || regexp_replace(pg_get_indexdef(i.indexrelid), '^.* USING ', '')
			FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'people'::regclass ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(got, "; ")
	}
	rw := newRewriter(t, db)
	plan, err := rw.EncryptColumns(ctx, "public", "people", nil, engine.DefaultPolicy)
	if err != nil {
		t.Fatalf("adopting: %v", err)
	}
	t.Logf("adoption: %v", plan.Indexes)
	if _, err := rw.Scrub(ctx, "public", "people"); err != nil {
		t.Fatalf("scrub: %v", err)
	}
	got := indexes()
	for _, want := range []string{
		"people_pkey btree (id__eq)",
		"people_email_key btree (email__eq)",
		"people_city_born btree (city__eq, born__eq DESC) INCLUDE (id__eq",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("after adoption the indexes are %s; want %s", got, want)
		}
	}
	if trgm && !strings.Contains(got, "people_bio gin (bio__srch)") {
		t.Errorf("after adoption the indexes are %s; want the search index over bio__srch", got)
	}
	var kinds string
	if err := direct.QueryRow(ctx, `SELECT string_agg(conname || ':' || contype::text, ',' ORDER BY conname) FROM pg_constraint WHERE conrelid = 'people'::regclass AND contype IN ('p', 'u')`).Scan(&kinds); err != nil || kinds != "people_email_key:u,people_pkey:p" {
		t.Errorf("constraints after adoption: %q (%v)", kinds, err)
	}
	same("after adoption")

	// Rotation: the unique columns stay at DET, their constraints rebuilt.
	if _, err := rw.RotateColumns(ctx, "public", "people", []string{"id", "email", "city"}); err != nil {
		t.Fatalf("rotating: %v", err)
	}
	got = indexes()
	for _, want := range []string{"people_pkey btree (id__eq)", "people_email_key btree (email__eq)", "people_city_born btree (city__eq, born__eq DESC) INCLUDE (id__eq"} {
		if !strings.Contains(got, want) {
			t.Errorf("after rotation the indexes are %s; want %s", got, want)
		}
	}
	same("after rotation")

	if _, err := rw.DecryptColumns(ctx, "public", "people", nil); err != nil {
		t.Fatalf("decrypting: %v", err)
	}
	got = indexes()
	for _, want := range []string{"people_pkey btree (id)", "people_email_key btree (email)", "people_city_born btree (city, born DESC) INCLUDE (id)"} {
		if !strings.Contains(got, want) {
			t.Errorf("after decryption the indexes are %s; want %s", got, want)
		}
	}
	if trgm && !strings.Contains(got, "people_bio gin (bio gin_trgm_ops)") {
		t.Errorf("after decryption the indexes are %s; want the trigram index over bio", got)
	}
	same("after decryption")
}

func TestReadoptKeepsIndexes(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	direct := db.direct(t)
	mustExec(t, direct, `CREATE TABLE people (id int PRIMARY KEY, city text); CREATE INDEX people_city ON people (city);
		INSERT INTO people SELECT i, 'c' || i % 10 FROM generate_series(1, 500) i`)
	rw := newRewriter(t, db)
	for i := range 3 {
		if _, err := rw.EncryptColumns(ctx, "public", "people", []string{"city"}, engine.DefaultPolicy); err != nil {
			t.Fatalf("adoption %d: %v", i, err)
		}
		if _, err := rw.Scrub(ctx, "public", "people"); err != nil {
			t.Fatalf("scrub %d: %v", i, err)
		}
		if _, err := rw.DecryptColumns(ctx, "public", "people", nil); err != nil {
			t.Fatalf("decryption %d: %v", i, err)
		}
	}
}

package engine_test

import (
	"context"
	"strings"
	"testing"
)

// TestCollatedColumns: an encrypted text column declared with a
// collation other than C (Django's db_collation) is stored with its Eq
// onion only. Equality, grouping and the stored values answer as on
// plaintext PostgreSQL; what would need the collation's order or case
// mapping in the proxy is refused (0A000), never answered in C's order.
func TestCollatedColumns(t *testing.T) {
	ctx := context.Background()
	d := newTypeDiff(t, `CREATE TABLE coll (id int PRIMARY KEY, name varchar(20) COLLATE "sv-x-icu", note text)`)
	for i, name := range []string{"ö", "z", "a", "Ä", "ö", "Zebra", "äpple"} {
		d.both("INSERT INTO coll VALUES ($1, $2, $3)", i, name, "n")
	}
	d.both("INSERT INTO coll VALUES (100, NULL, 'null name')")
	d.compare([]string{
		"SELECT * FROM coll ORDER BY id",
		"SELECT id FROM coll WHERE name = 'ö' ORDER BY id",
		"SELECT id FROM coll WHERE name IN ('a', 'Zebra') ORDER BY id",
		"SELECT count(DISTINCT name) FROM coll",
		"SELECT id FROM coll WHERE name LIKE 'ä%' ORDER BY id",
	}, []string{
		// Computed in the proxy, which refuses every computation with
		// the column's values (coarser than needed).
		"SELECT name IS NULL, count(*) FROM coll GROUP BY 1 ORDER BY 1",
	})
	for _, q := range []string{
		"SELECT name FROM coll ORDER BY name",
		"SELECT id FROM coll WHERE name > 'a'",
		"SELECT lower(name) FROM coll",
		"SELECT id FROM coll WHERE name ILIKE 'Ä%'",
		"SELECT max(name) FROM coll",
		"UPDATE coll SET name = name || '!' WHERE id = 1",
	} {
		_, err := d.c.Exec(ctx, q)
		if pgCode(err) != "0A000" || !strings.Contains(err.Error(), "sv-x-icu") {
			t.Errorf("%s: %v, want a refusal (0A000) naming the collation", q, err)
		}
	}
	// What the proxy cannot keep is refused at CREATE TABLE, as the
	// server would refuse what it cannot do.
	mustExec(t, d.c, `CREATE COLLATION ci_coll (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`)
	for _, c := range []struct{ ddl, code, text string }{
		{`CREATE TABLE c2 (s text COLLATE ci_coll)`, "0A000", "nondeterministic"},
		{`CREATE TABLE c2 (s text COLLATE "no-such-collation")`, "42704", ""},
		{`CREATE TABLE c2 (n int COLLATE "sv-x-icu")`, "42804", ""},
	} {
		_, err := d.c.Exec(ctx, c.ddl)
		if pgCode(err) != c.code || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %s %s", c.ddl, err, c.code, c.text)
		}
	}
}

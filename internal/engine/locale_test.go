package engine_test

import (
	"context"
	"testing"
)

// TestLocaleCUTF8: in a database whose collation and ctype are C.UTF-8
// (initdb's default on many systems), the proxy orders encrypted text (its
// collation is code point order, as C's byte order) and maps case with
// the C library's towupper/towlower as the server does: upper, lower,
// ILIKE and the LIKEs Django writes, over letters beyond ASCII.
func TestLocaleCUTF8(t *testing.T) {
	d := newTypeDiffWith(t, "TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'",
		`CREATE TABLE lc (id int PRIMARY KEY, name text, dept text)`)
	var ctype string
	if err := d.c.QueryRow(context.Background(), "SELECT datctype FROM pg_database WHERE datname = current_database()").Scan(&ctype); err != nil || ctype != "C.UTF-8" {
		t.Fatalf("the proxy's database has LC_CTYPE %q (%v), want C.UTF-8", ctype, err)
	}
	d.both(`INSERT INTO lc VALUES (1, 'éx', 'b'), (2, 'ÉX', 'a'), (3, 'Straße', NULL), (4, 'STRASSE', 'a'),
		(5, 'ǅemal', 'é'), (6, 'kelvin', 'Z'), (7, 'KELVIN', 'z'), (8, NULL, 'b'), (9, 'İstanbul', 'ä'), (10, 'istanbul', 'a')`)
	d.compare([]string{
		"SELECT id FROM lc WHERE name ILIKE 'éx' ORDER BY id",
		"SELECT id FROM lc WHERE name ILIKE '%K%' ORDER BY id",
		"SELECT id FROM lc WHERE name::text ILIKE 'ÉX%' ORDER BY id",
		"SELECT id FROM lc WHERE name NOT ILIKE '%ss%' ORDER BY id",
		"SELECT id FROM lc WHERE name ILIKE $1 ORDER BY id",
		"SELECT id FROM lc WHERE UPPER(name::text) LIKE UPPER('%éx%') ORDER BY id",
		"SELECT id, upper(name), lower(name) FROM lc ORDER BY id",
		"SELECT id FROM lc ORDER BY name, id",
		"SELECT id FROM lc ORDER BY name DESC NULLS LAST, id",
		"SELECT id FROM lc WHERE name > 'a' ORDER BY id",
		"SELECT DISTINCT dept FROM lc ORDER BY dept",
		"SELECT dept, count(*) FROM lc GROUP BY dept ORDER BY dept",
		"SELECT max(name), min(dept) FROM lc",
		"SELECT coalesce(dept, 'none'), count(*) FROM lc GROUP BY 1 ORDER BY 1",
		"SELECT lower(dept), count(*) FROM lc GROUP BY 1 ORDER BY 1",
	}, nil, "%É%")
}

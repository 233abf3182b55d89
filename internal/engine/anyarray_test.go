package engine_test

import (
	"testing"
)

// TestAnyArray: c = ANY(array) and c <> ALL(array) over encrypted columns,
// with the array as ARRAY[...], a constant, or a parameter (the way
// asyncpg, node-postgres and pgx pass lists), in both protocols, NULLs
// and elements of other types included.
func TestAnyArray(t *testing.T) {
	bob := "bob"
	d := newTypeDiff(t, `CREATE TABLE aa (id int PRIMARY KEY, name text, n int, m numeric(6,2), d date, u uuid, v varchar(5))`)
	d.both(`INSERT INTO aa VALUES
		(1, 'ann', 1, 1.50, '2020-01-02', '00000000-0000-0000-0000-000000000001', 'x'),
		(2, 'bob', 2, 2.00, '2021-03-04', '00000000-0000-0000-0000-000000000002', 'yy'),
		(3, NULL, NULL, NULL, NULL, NULL, NULL),
		(4, 'Bob', 40, -3.25, '1999-12-31', '00000000-0000-0000-0000-000000000004', 'zzz')`)
	d.compare([]string{
		"SELECT id FROM aa WHERE name = ANY(ARRAY['bob', 'ann']) ORDER BY id",
		"SELECT id FROM aa WHERE name = ANY(ARRAY['bob', NULL]) ORDER BY id",
		"SELECT id FROM aa WHERE name <> ALL(ARRAY['bob', 'ann']) ORDER BY id",
		"SELECT id FROM aa WHERE name <> ALL(ARRAY['bob', NULL]) ORDER BY id",
		"SELECT id FROM aa WHERE name = ANY('{bob,Bob}') ORDER BY id",
		"SELECT id FROM aa WHERE name = ANY('{bob,NULL}'::text[]) ORDER BY id",
		"SELECT id FROM aa WHERE name = ANY('{}'::text[]) ORDER BY id",
		"SELECT id FROM aa WHERE name <> ALL('{}'::text[]) ORDER BY id",
		"SELECT count(*) FROM aa WHERE name = ANY(NULL::text[])",
		"SELECT id FROM aa WHERE n = ANY('{1,40,7}') ORDER BY id",
		"SELECT id FROM aa WHERE n = ANY('{1.5,2}'::numeric[]) ORDER BY id",
		"SELECT id FROM aa WHERE n <> ALL('{1.5,2}'::numeric[]) ORDER BY id",
		"SELECT id FROM aa WHERE m = ANY('{1.5,-3.250}'::numeric[]) ORDER BY id",
		"SELECT id FROM aa WHERE m = ANY(ARRAY[2, 1.50]) ORDER BY id",
		"SELECT id FROM aa WHERE d = ANY('{2020-01-02,1999-12-31}'::date[]) ORDER BY id",
		"SELECT id FROM aa WHERE u = ANY('{00000000-0000-0000-0000-000000000002}'::uuid[]) ORDER BY id",
		"SELECT id FROM aa WHERE v = ANY('{yy,zzz}'::text[]) ORDER BY id",
		"SELECT id FROM aa WHERE name = ANY('{bob}') OR n = ANY('{1}') ORDER BY id",
	}, nil)
	d.compare([]string{"SELECT id FROM aa WHERE name = ANY($1) ORDER BY id", "SELECT id FROM aa WHERE name <> ALL($1) ORDER BY id"}, nil, []string{"bob", "ann"})
	d.compare([]string{"SELECT id FROM aa WHERE name = ANY($1::text[]) ORDER BY id"}, nil, []string{})
	d.compare([]string{"SELECT id FROM aa WHERE n = ANY($1) ORDER BY id"}, nil, []int32{2, 40, 9})
	d.compare([]string{"SELECT id FROM aa WHERE n = ANY($1::int8[]) ORDER BY id"}, nil, []int64{2, 40})
	d.compare([]string{"SELECT id FROM aa WHERE m = ANY($1) ORDER BY id"}, nil, []string{"2", "-3.25"})
	d.compare([]string{"SELECT id FROM aa WHERE d = ANY($1) ORDER BY id"}, nil, []string{"2021-03-04"})
	d.compare([]string{"SELECT id FROM aa WHERE v = ANY($1) ORDER BY id"}, nil, []string{"zzz", "q"})
	d.compare([]string{"SELECT id FROM aa WHERE name = ANY($1) ORDER BY id"}, nil, []*string{nil, &bob})
	d.both(`UPDATE aa SET n = n WHERE id = 1`)
	for _, q := range []string{
		"UPDATE aa SET m = 9 WHERE name = ANY($1)",
		"DELETE FROM aa WHERE name = ANY($1)",
	} {
		d.both(q, []string{"ann"})
	}
	d.compare([]string{"SELECT id, name, m FROM aa ORDER BY id"}, nil)
}

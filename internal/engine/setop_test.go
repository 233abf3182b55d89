package engine_test

import (
	"testing"
)

// TestSetOperations: UNION [ALL], INTERSECT and EXCEPT whose branches
// select encrypted columns (and INTERSECT ALL, EXCEPT ALL), computed by
// split execution: the server runs
// the branches in one UNION ALL, the proxy the set operation, ORDER BY
// and LIMIT, in both protocols, as Django's union(), intersection() and
// difference() write them.
func TestSetOperations(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE so (id int PRIMARY KEY, num int, name text, x numeric(6,2), big bigint)`)
	d.both(`CREATE TABLE so2 (id int PRIMARY KEY, label varchar(10), n smallint)`)
	d.both(`INSERT INTO so VALUES (1, 1, 'a', 1.5, 10), (2, 2, 'b', NULL, 20), (3, 3, NULL, 2.25, 30), (4, 8, 'a', 1.5, 40), (5, 9, 'z', 0.5, 50), (6, NULL, 'b', NULL, NULL)`)
	d.both(`INSERT INTO so2 VALUES (1, 'a', 1), (2, 'q', 2), (3, NULL, 3), (4, 'z', 9)`)
	d.compare([]string{
		`(SELECT id, num, name FROM so WHERE num <= 1) UNION (SELECT id, num, name FROM so WHERE num >= 8) ORDER BY 1`,
		`SELECT num FROM so WHERE num <= 2 UNION ALL SELECT num FROM so WHERE num >= 2 ORDER BY num`,
		`SELECT name FROM so UNION SELECT name FROM so ORDER BY name NULLS FIRST`,
		`SELECT name, x FROM so UNION SELECT label, n FROM so2 ORDER BY 1, 2`,
		`SELECT name FROM so INTERSECT SELECT label FROM so2 ORDER BY 1`,
		`SELECT name FROM so EXCEPT SELECT label FROM so2 ORDER BY 1`,
		`SELECT num FROM so EXCEPT SELECT n FROM so2 EXCEPT SELECT num FROM so WHERE num = 8 ORDER BY num`,
		`SELECT id, name FROM so WHERE id < 3 UNION SELECT id, name FROM so WHERE id > 4 UNION SELECT id, label FROM so2 ORDER BY id, name LIMIT 4 OFFSET 1`,
		`SELECT big FROM so UNION ALL SELECT n FROM so2 ORDER BY 1 DESC`,
		`SELECT count(*) FROM so WHERE id IN (SELECT id FROM so2)`,
		`SELECT name FROM so INTERSECT ALL SELECT label FROM so2 ORDER BY 1`,
		`SELECT name FROM so INTERSECT ALL SELECT name FROM so WHERE id > 1 ORDER BY 1 NULLS FIRST`,
		`SELECT name FROM so INTERSECT ALL SELECT name FROM so INTERSECT ALL SELECT label FROM so2 ORDER BY 1`,
		`SELECT name FROM so EXCEPT ALL SELECT label FROM so2 ORDER BY 1`,
		`SELECT x FROM so EXCEPT ALL SELECT x FROM so WHERE id = 1 ORDER BY 1`,
		`SELECT name FROM so EXCEPT ALL SELECT name FROM so WHERE id = 6 EXCEPT ALL SELECT label FROM so2 ORDER BY 1 NULLS LAST LIMIT 3`,
	}, []string{
		`SELECT name FROM so UNION SELECT name, num FROM so`,
	})
	d.compare([]string{`SELECT id FROM so WHERE name = $1 UNION SELECT id FROM so2 WHERE label = $1 ORDER BY id`}, nil, "a")
}

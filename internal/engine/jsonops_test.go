package engine_test

import (
	"testing"
)

// TestJSONBOperators: jsonb operators over encrypted columns, computed by
// the proxy (split execution) in WHERE, the select list and ORDER BY, in
// both protocols, as Django's JSONField lookups write them.
func TestJSONBOperators(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE jo (id int PRIMARY KEY, value jsonb)`)
	d.both(`INSERT INTO jo VALUES
		(1, '{"a": 1, "b": "x", "c": {"d": [1, 2, {"e": true}]}}'),
		(2, '{"a": 2.0, "b": "X", "c": {"d": []}}'),
		(3, '[1, "a", {"a": 1}]'),
		(4, '"a"'),
		(5, 'null'),
		(6, NULL),
		(7, '{"a": null, "bax": "foo", "j": [1, [2]]}'),
		(8, '1'),
		(9, '[]'),
		(10, '{"a": 1.0, "b": ["x", "y"]}')`)
	d.compare([]string{
		`SELECT id FROM jo WHERE value -> 'a' = '1' ORDER BY id`,
		`SELECT id FROM jo WHERE ("value" -> 'a') = '1'::jsonb ORDER BY id`,
		`SELECT id FROM jo WHERE value ->> 'b' = 'x' ORDER BY id`,
		`SELECT id FROM jo WHERE value @> '{"a": 1}' ORDER BY id`,
		`SELECT id FROM jo WHERE value <@ '{"a": 1, "b": "x", "z": 0}' ORDER BY id`,
		`SELECT id FROM jo WHERE value @> '"a"' ORDER BY id`,
		`SELECT id FROM jo WHERE value ? 'a' ORDER BY id`,
		`SELECT id FROM jo WHERE NOT (value ? 'a') ORDER BY id`,
		`SELECT id FROM jo WHERE value ?| ARRAY['b', 'j'] ORDER BY id`,
		`SELECT id FROM jo WHERE value ?& '{a,b}' ORDER BY id`,
		`SELECT id FROM jo WHERE (value #> '{c,d,2,e}') = 'true' ORDER BY id`,
		`SELECT id FROM jo WHERE (value #> ARRAY['c', 'd']) = '[]' ORDER BY id`,
		`SELECT id, value -> 'c', value #>> '{c,d}', value -> 0, value ->> -1 FROM jo ORDER BY id`,
		`SELECT id FROM jo WHERE (value -> 'a')::numeric >= 1 ORDER BY id`,
		`SELECT id FROM jo WHERE value -> 'a' < '2' ORDER BY id`,
		`SELECT id FROM jo WHERE (value -> 'a') IN ('1', '2') ORDER BY id`,
		`SELECT id FROM jo WHERE (value -> 'a') IS NULL ORDER BY id`,
		`SELECT id FROM jo WHERE UPPER((value ->> 'bax')::text) LIKE UPPER('%OO') ORDER BY id`,
		`SELECT id FROM jo ORDER BY value, id`,
		`SELECT id FROM jo ORDER BY value -> 'a' DESC, id`,
		`SELECT id, jsonb_typeof(value) FROM jo ORDER BY id`,
		`SELECT id FROM jo WHERE value = '{"a": 1.00, "b": ["x", "y"]}' ORDER BY id`,
		`SELECT id FROM jo WHERE value > '[]' ORDER BY id`,
		`SELECT id FROM jo WHERE value -> $1 = '1' ORDER BY id`,
		`SELECT id FROM jo WHERE (value -> 'b')::numeric > 0 ORDER BY id`,
		`SELECT id FROM jo WHERE (value -> 'a')::int = 1 ORDER BY id`,
	}, nil, "a")
	d.compare([]string{`SELECT id FROM jo WHERE value @> $1 ORDER BY id`}, nil, `{"b": "x"}`)
	d.both(`CREATE TABLE jb (id int PRIMARY KEY, name text, n numeric, f float8, ok boolean, i int)`)
	d.both(`INSERT INTO jb VALUES (1, 'ann', 1.50, 2.5, true, 7), (2, NULL, NULL, 'NaN', false, NULL), (3, 'x"y', -0.0, '-Infinity', NULL, -1)`)
	d.compare([]string{
		`SELECT id, jsonb_build_object('name', name, 'n', n, 'f', f, 'ok', ok, 'i', i) FROM jb ORDER BY id`,
		`SELECT id, JSONB_BUILD_ARRAY(name, n, f, ok, i, NULL) FROM jb ORDER BY id`,
		`SELECT id, jsonb_build_object('b', name, 'a', i, 'b', n) FROM jb ORDER BY id`,
		`SELECT id, jsonb_build_object(name, i) FROM jb ORDER BY id`,
		`SELECT id FROM jb ORDER BY jsonb_build_object('i', i) -> 'i', id`,
		`SELECT id, jsonb_build_object(i, name) ->> '7' FROM jb ORDER BY id`,
	}, nil)
	d.compare([]string{`SELECT id FROM jo WHERE value ? $1 ORDER BY id`}, nil, `bax`)
	// text[] parameters, as drivers send lists (Django's nested key
	// transforms and has_keys with server-side binding).
	d.compare([]string{
		`SELECT id, value #> $1, value #>> $1 FROM jo ORDER BY id`,
		`SELECT id FROM jo WHERE (value #> $1) = 'true' ORDER BY id`,
		`SELECT id FROM jo WHERE value ?| $1 ORDER BY id`,
		`SELECT id FROM jo WHERE value ?& $1::text[] ORDER BY id`,
	}, nil, []string{"c", "d", "2", "e"})
	d.compare([]string{`SELECT id FROM jo WHERE value ?& $1 ORDER BY id`, `SELECT id FROM jo WHERE value ?| $1 ORDER BY id`}, nil, []string{"a", "b"})
}

-- Differential write corpus: see write_corpus_test.go for the format.
-- Every statement runs through the proxy (default policy: every column
-- encrypted but the serial key and the key referencing it) and directly
-- on plaintext PostgreSQL; the outcomes and then the tables must match.

-- INSERT ... VALUES: constants, multi-row, DEFAULT, NULL, RETURNING
INSERT INTO w1 VALUES (1, 5, 10.50, 'alpha', 'a', '2024-01-02', '2024-01-02 10:00:00+00', 1.5, true)
INSERT INTO w1 (id, name, n, amt) VALUES (2, 'beta', 7, -3.25), (3, 'gamma', 0, NULL), (4, 'delta', DEFAULT, 99999999.99)
INSERT INTO w1 (id, name, tag, f) VALUES (5, 'eps', 'e', -0.0) RETURNING id, name, tag, n
INSERT INTO w1 (id, name) VALUES (6, 'zeta'), (7, 'eta') RETURNING *
INSERT INTO w1 (id, name, d, ts) VALUES (8, 'theta', $1, $2) -- params: '2023-12-31', '2023-12-31 23:59:59+05'
-- constraint violations fail as on the server
INSERT INTO w1 (id, name, n) VALUES (9, 'iota', -1)
INSERT INTO w1 (id, name) VALUES (1, 'dup')
INSERT INTO w1 (id, name, tag) VALUES (10, 'kappa', 'a')
INSERT INTO w1 (id) VALUES (11)
INSERT INTO w1 (id, name, tag) VALUES (12, 'lambda', 'toolong')
-- ON CONFLICT and the refusals of what cannot be computed
UPDATE w1 SET id = id + n WHERE id = 1
INSERT INTO w1 (id, name, tag, n) VALUES (14, upper('mixed Case ÄÖ') || lower('X'), lower('AB'), 40 + 2)
INSERT INTO w1 (id, name) VALUES (1, 'other') ON CONFLICT DO NOTHING
INSERT INTO w1 (id, name, n) VALUES (2, 'beta2', 8) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, n = EXCLUDED.n
INSERT INTO w1 (id, name, tag) VALUES (13, 'mu', 'e') ON CONFLICT (tag) DO NOTHING
-- bulk INSERT ... SELECT * FROM UNNEST, constants and array parameters
INSERT INTO w1 (id, name, n) SELECT * FROM UNNEST('{20,21,22}'::int[], '{u1,u2,u3}'::text[], '{1,NULL,3}'::int[])
INSERT INTO w1 (id, name, n) SELECT * FROM UNNEST($1::int[], $2::text[], $3::int[]) -- params: '{30,31}', '{"v 1","v,2"}', '{4,NULL}'
INSERT INTO w1 (id, name, amt) SELECT * FROM UNNEST($1::int[], $2::text[], $3::numeric[]) ON CONFLICT (id) DO UPDATE SET amt = EXCLUDED.amt -- params: '{30,32}', '{x,y}', '{1.25,2.5}'
-- the second table, with a serial key and a key to the first
INSERT INTO w2 (w1_id, note, qty) VALUES (1, 'n1', 10), (2, 'n2', 20), (3, 'n3', 30), (2, 'n4', 40), (20, NULL, 50)
UPDATE w2 SET id = id + qty WHERE id = 1 -- refuse: w2.qty
INSERT INTO w2 (w1_id, note) VALUES (999, 'no such w1')
-- UPDATE: constants, parameters, increments, expressions
UPDATE w1 SET tag = 'b' WHERE id = 2
UPDATE w1 SET name = $1, d = $2 WHERE id = $3 -- params: 'beta3', '2020-02-29', 2
UPDATE w1 SET amt = amt + 1.25 WHERE id IN (1, 2)
UPDATE w1 SET n = n + 1 WHERE n IS NOT NULL
UPDATE w1 SET n = n * 3 WHERE id <= 3
UPDATE w1 SET n = n - 100 WHERE id = 1
UPDATE w1 SET f = f * 2 + 1, name = name || '!' WHERE f IS NOT NULL
UPDATE w1 SET name = CASE WHEN id = 20 THEN 'x20' WHEN id = 21 THEN 'x21' ELSE name END WHERE id IN (20, 21)
UPDATE w1 SET name = CASE WHEN id = $1 THEN $2 WHEN id = $3 THEN $4 ELSE name END WHERE id IN ($1, $3) -- params: 22, 'p22', 30, 'p30'
UPDATE w1 SET name = substring(name, $1::int, $2::int) || '.', n = n * $3 WHERE name LIKE $4 -- params: 1, 3, 2, 'g%'
UPDATE w1 SET f = f * $1 WHERE f > $2 -- params: 2, 0
UPDATE w1 SET f = f * 2 WHERE f > 0 RETURNING id -- refuse: RETURNING
UPDATE w1 SET tag = name WHERE id = 3
UPDATE w1 SET n = 2147483647 + n WHERE id = 2
UPDATE w1 SET n = n WHERE id = 12345
-- generated columns over encrypted columns, computed by the proxy
INSERT INTO w5 (id, a, b, s) VALUES (1, 2, 3, 'MiXed'), (2, 5, NULL, NULL), (3, 4, 0, 'Q')
INSERT INTO w5 VALUES (4, 1, 1, 'x', DEFAULT, DEFAULT) RETURNING sq, low
INSERT INTO w5 (id, a, b, s) VALUES ($1, $2, $3, $4) -- params: 5, 6, 7, 'Param'
INSERT INTO w5 VALUES (6, 1, 1, 'x', 2)
INSERT INTO w5 (id, a, b) VALUES (7, 40, 1)
INSERT INTO w5 (id, a, b, s) SELECT * FROM UNNEST($1::int[], $2::int[], $3::int[], $4::text[]) -- params: '{8,9}', '{2,3}', '{1,NULL}', '{Bulk,NULL}'
UPDATE w5 SET a = a + 1 WHERE id <= 2
UPDATE w5 SET b = $1 WHERE id = $2 -- params: 11, 2
UPDATE w5 SET a = a * $1 + 1 WHERE id >= $2 AND s IS NOT NULL -- params: 2, 3
UPDATE w5 SET b = 10 WHERE id = 3
UPDATE w5 SET a = $1, b = $2, s = $3 WHERE id = $4 -- params: 7, 1, 'Saved', 3
UPDATE w5 SET a = 2, b = NULL, s = lower('ALL') WHERE id = 9 RETURNING sq, low
UPDATE w5 SET a = 2, b = 3, sq = DEFAULT WHERE id = 8
UPDATE w5 SET s = 'NEW', a = 3 WHERE id = 4
UPDATE w5 SET sq = 1 WHERE id = 1
UPDATE w5 SET sq = DEFAULT, low = DEFAULT WHERE id = 5
UPDATE w5 SET a = 31 WHERE id = 1
INSERT INTO w5 (id, a, b) VALUES (1, 1, 1) ON CONFLICT (id) DO UPDATE SET b = EXCLUDED.b -- refuse: generated column sq
-- renaming a column a generated column reads renames it in its expression
ALTER TABLE w5 RENAME COLUMN b TO bb
INSERT INTO w5 (id, a, bb, s) VALUES (30, 3, 4, 'Renamed')
UPDATE w5 SET bb = bb + 1 WHERE id = 30
-- a UNIQUE index added later peels the Eq onion to DET
CREATE UNIQUE INDEX w5_s ON w5 (s)
INSERT INTO w5 (id, a, s) VALUES (20, 1, 'Q')
INSERT INTO w5 (id, a, s) VALUES (21, 1, 'Q2')
-- subqueries over the other table
UPDATE w2 SET note = 'many' WHERE w1_id IN (SELECT id FROM w1 WHERE n > 10)
DELETE FROM w2 WHERE w1_id IN (SELECT U0.id FROM w1 U0 WHERE U0.name = 'gamma')
UPDATE w2 SET qty = qty * 2 WHERE qty > (SELECT min(n) FROM w1)
-- INSERT ... SELECT, CREATE TABLE AS, SELECT INTO
INSERT INTO w2 (w1_id, note, qty) SELECT id, name, n FROM w1 WHERE id >= 20 ORDER BY id
INSERT INTO w1 (id, name, amt) SELECT id + 100, note, qty FROM w2 WHERE note IS NOT NULL ORDER BY id RETURNING id
INSERT INTO w1 (id, name) SELECT id, name FROM w1 WHERE false RETURNING id
CREATE TABLE w3 AS SELECT id, name, amt FROM w1 WHERE id < 10
SELECT w1_id, note INTO w4 FROM w2 WHERE qty > 30
-- transactions and savepoints
BEGIN
INSERT INTO w1 (id, name, n) VALUES (40, 'in tx', 1)
SAVEPOINT s1
UPDATE w1 SET n = n + 5 WHERE id = 40
DELETE FROM w1 WHERE id = 21
ROLLBACK TO SAVEPOINT s1
UPDATE w1 SET name = name || ' kept' WHERE id = 40
COMMIT
BEGIN
DELETE FROM w2
ROLLBACK
-- DELETE
DELETE FROM w1 WHERE name = 'zeta' RETURNING id, name
-- amt was incremented by read-modify-write (no Add onion by default):
-- its onions stay current, so the server compares them
DELETE FROM w1 WHERE amt > 100 OR tag = 'e'
DELETE FROM w1 WHERE tag = 'e' OR n > 20
DELETE FROM w2 WHERE qty IS NULL

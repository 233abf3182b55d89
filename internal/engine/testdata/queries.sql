-- Differential query corpus: see query_corpus_test.go for the format.
-- Tables (query_corpus_test.go): t1 (id, grp, pn plain; si, i, b, n, un,
-- tx, vc, ch, d, ts, tz, flag, bin encrypted; eq_i, eq_t eq-only; secret
-- sensitive; k join group k), t2 (id plain; k join group k; name, amt;
-- qty, k2 eq+ord; d; code join group code), t3 (id, label plain; code join
-- group code; rank).

-- = and <> on every type, constants on either side
SELECT id FROM t1 WHERE si = 5
SELECT id FROM t1 WHERE si = -32768
SELECT id FROM t1 WHERE si = 32767
SELECT id, si FROM t1 WHERE si <> 5
SELECT id FROM t1 WHERE 5 = si
SELECT id FROM t1 WHERE i = 42
SELECT id FROM t1 WHERE i = -2147483648
SELECT id, i FROM t1 WHERE i <> 0
SELECT id FROM t1 WHERE 2147483647 = i
SELECT id FROM t1 WHERE b = 9223372036854775807
SELECT id FROM t1 WHERE b = -9223372036854775808
SELECT id, b FROM t1 WHERE b = 42
SELECT id, b FROM t1 WHERE b <> -1
SELECT id FROM t1 WHERE n = 1.50
SELECT id FROM t1 WHERE n = 1.5
SELECT id FROM t1 WHERE n = '10.05'
SELECT id FROM t1 WHERE n = 'NaN'
SELECT id, n FROM t1 WHERE n <> 0
SELECT id FROM t1 WHERE n = 9999999999.99
SELECT id FROM t1 WHERE -9999999999.99 = n
SELECT id FROM t1 WHERE n = 1.01
SELECT id, un FROM t1 WHERE un = 1
SELECT id, un FROM t1 WHERE un = 1.000
SELECT id, un FROM t1 WHERE un = -0.5
SELECT id FROM t1 WHERE un = 'NaN'
SELECT id FROM t1 WHERE un = 'Infinity'
SELECT id FROM t1 WHERE un = '-Infinity'
SELECT id, un FROM t1 WHERE un <> 1
SELECT id FROM t1 WHERE un = 1e20
SELECT id FROM t1 WHERE un = 100000000000000000000.0
SELECT id FROM t1 WHERE un = 0.000001
SELECT id FROM t1 WHERE tx = 'alpha'
SELECT id FROM t1 WHERE tx = ''
SELECT id FROM t1 WHERE tx = 'über'
SELECT id FROM t1 WHERE tx = '日本語'
SELECT id FROM t1 WHERE tx = 'O''Brien'
SELECT id FROM t1 WHERE tx = 'back\slash'
SELECT id FROM t1 WHERE tx = E'back\\slash'
SELECT id, tx FROM t1 WHERE tx <> 'alpha'
SELECT id FROM t1 WHERE 'gamma' = tx
SELECT id FROM t1 WHERE tx = 'Gamma'
SELECT id FROM t1 WHERE vc = 'hello world'
SELECT id FROM t1 WHERE vc = 'naïve café'
SELECT id, vc FROM t1 WHERE vc <> 'abc'
SELECT id FROM t1 WHERE ch = 'ab'
SELECT id FROM t1 WHERE ch = 'ab   '
SELECT id FROM t1 WHERE ch = 'ab '
SELECT id, ch FROM t1 WHERE ch = ''
SELECT id FROM t1 WHERE ch = 'ä'
SELECT id, ch FROM t1 WHERE ch <> 'hello'
SELECT id FROM t1 WHERE ch = 'HeLLo'
SELECT id FROM t1 WHERE d = '2000-02-29'
SELECT id FROM t1 WHERE d = 'infinity'
SELECT id FROM t1 WHERE d = '0044-03-15 BC'
SELECT id FROM t1 WHERE d = DATE '1970-01-01'
SELECT id FROM t1 WHERE d = '5874897-12-31'
SELECT id, d FROM t1 WHERE d <> '2001-01-01'
SELECT id FROM t1 WHERE ts = '2000-01-01 00:00:00'
SELECT id FROM t1 WHERE ts = '-infinity'
SELECT id FROM t1 WHERE ts = '1999-12-31 23:59:59.999999'
SELECT id FROM t1 WHERE ts = '4713-11-24 00:00:00 BC'
SELECT id FROM t1 WHERE tz = '2021-06-01 06:30:00+00'
SELECT id FROM t1 WHERE tz = '2000-01-01 00:00:00+00'
SELECT id FROM t1 WHERE tz = '1999-12-31 16:00:00-08'
SELECT id FROM t1 WHERE flag = true
SELECT id FROM t1 WHERE flag = false
SELECT id FROM t1 WHERE flag <> true
SELECT id FROM t1 WHERE bin = '\xdeadbeef'
SELECT id FROM t1 WHERE bin = '\x'
SELECT id FROM t1 WHERE bin <> '\x00'
SELECT id FROM t1 WHERE eq_i = 7
SELECT id FROM t1 WHERE eq_i <> 7
SELECT id FROM t1 WHERE eq_t = 'beta'
SELECT id FROM t1 WHERE eq_t = ''
SELECT id FROM t1 WHERE k = 10
SELECT id FROM t1 WHERE si = 5 AND i = 42
SELECT id FROM t1 WHERE si = 5 OR i = 42
SELECT id FROM t1 WHERE i = '42'
SELECT id FROM t1 WHERE si = 5::bigint
SELECT id FROM t1 WHERE i = 42::smallint
SELECT id FROM t1 WHERE b = 42::integer
SELECT id FROM t2 WHERE name = 'beta'
SELECT id FROM t2 WHERE code = 'C07'
SELECT id FROM t3 WHERE code = 'C15'
SELECT id FROM t3 WHERE rank = 3

-- IN lists
SELECT id FROM t1 WHERE si IN (0, 1, 5)
SELECT id FROM t1 WHERE i IN (42, -1000, 2147483647)
SELECT id FROM t1 WHERE b IN (0, 42)
SELECT id FROM t1 WHERE n IN (1.5, 99.99, -0.01)
SELECT id FROM t1 WHERE un IN (1, 0, -0.5)
SELECT id FROM t1 WHERE tx IN ('alpha', 'beta', '')
SELECT id FROM t1 WHERE vc IN ('abc', 'xyz')
SELECT id FROM t1 WHERE ch IN ('ab', 'z')
SELECT id FROM t1 WHERE d IN ('1970-01-01', '2000-02-29', 'infinity')
SELECT id FROM t1 WHERE ts IN ('infinity', '2000-01-01')
SELECT id FROM t1 WHERE tz IN ('infinity', '-infinity')
SELECT id FROM t1 WHERE bin IN ('\x00', '\xff')
SELECT id FROM t1 WHERE eq_i IN (1, 2, 3)
SELECT id FROM t1 WHERE eq_t IN ('alpha', 'gamma')
SELECT id FROM t1 WHERE si NOT IN (0, 1, 5)
SELECT id FROM t1 WHERE tx NOT IN ('alpha', 'beta')
SELECT id FROM t1 WHERE i IN (42, NULL)
SELECT id FROM t1 WHERE i NOT IN (42, NULL) -- empty
SELECT id FROM t1 WHERE eq_i NOT IN (1, 2)
SELECT id FROM t1 WHERE si IN (5)
SELECT id FROM t1 WHERE flag IN (true)
SELECT id FROM t1 WHERE k IN (1, 2, 3, 4, 5) AND grp IN ('a', 'b')
SELECT id FROM t1 WHERE si IN (100000, 5)
SELECT id FROM t1 WHERE i IN (1.5, 42)
SELECT id FROM t1 WHERE n IN (1.505, 1.5)

-- IS [NOT] NULL
SELECT id FROM t1 WHERE si IS NULL
SELECT count(*) FROM t1 WHERE i IS NOT NULL
SELECT id FROM t1 WHERE b IS NULL
SELECT id FROM t1 WHERE n IS NULL
SELECT id FROM t1 WHERE un IS NULL
SELECT id FROM t1 WHERE tx IS NULL
SELECT id FROM t1 WHERE vc IS NOT NULL AND ch IS NULL
SELECT id FROM t1 WHERE d IS NULL
SELECT id FROM t1 WHERE ts IS NULL OR tz IS NULL
SELECT id FROM t1 WHERE flag IS NULL
SELECT id FROM t1 WHERE bin IS NULL
SELECT id FROM t1 WHERE eq_i IS NULL
SELECT id FROM t1 WHERE eq_t IS NOT NULL AND eq_i IS NULL
SELECT id FROM t1 WHERE secret IS NULL
SELECT count(*) FROM t1 WHERE secret IS NOT NULL
SELECT id FROM t1 WHERE k IS NULL
SELECT id FROM t2 WHERE k IS NULL OR code IS NULL

-- ranges, constants on either side, out-of-range and fractional constants
SELECT id FROM t1 WHERE si < 0
SELECT id FROM t1 WHERE si <= 5
SELECT id FROM t1 WHERE si > 100
SELECT id FROM t1 WHERE si >= 32767
SELECT id FROM t1 WHERE 0 < si
SELECT id FROM t1 WHERE 5 >= si
SELECT id FROM t1 WHERE -100 > si
SELECT id FROM t1 WHERE si BETWEEN -100 AND 100
SELECT id FROM t1 WHERE si NOT BETWEEN -100 AND 100
SELECT id FROM t1 WHERE si < 100000
SELECT id FROM t1 WHERE si > -100000
SELECT id FROM t1 WHERE si > 100000 -- empty
SELECT id FROM t1 WHERE si < -100000 -- empty
SELECT id FROM t1 WHERE si = 100000 -- empty
SELECT id FROM t1 WHERE si <> 100000
SELECT id FROM t1 WHERE si BETWEEN -40000 AND 40000
SELECT id FROM t1 WHERE si BETWEEN 100 AND -100 -- empty
SELECT id FROM t1 WHERE si < -5
SELECT id FROM t1 WHERE si > - 5
SELECT id FROM t1 WHERE si >= 2.5
SELECT id FROM t1 WHERE si <= -99.9
SELECT id FROM t1 WHERE i < 2.5
SELECT id FROM t1 WHERE i <= 2.5
SELECT id FROM t1 WHERE i > 1.5
SELECT id FROM t1 WHERE i >= -0.5
SELECT id FROM t1 WHERE i = 1.5 -- empty
SELECT id FROM t1 WHERE i <> 1.5
SELECT id FROM t1 WHERE i = 1.0
SELECT id FROM t1 WHERE i = 42.000
SELECT id FROM t1 WHERE i BETWEEN 0.5 AND 42.5
SELECT id FROM t1 WHERE i NOT BETWEEN 0.5 AND 42.5
SELECT id FROM t1 WHERE 2.5 > i
SELECT id FROM t1 WHERE i > 2147483647 -- empty
SELECT id FROM t1 WHERE i >= 2147483647
SELECT id FROM t1 WHERE i <= -2147483648
SELECT id FROM t1 WHERE i < 3000000000
SELECT id FROM t1 WHERE i > -3000000000
SELECT id FROM t1 WHERE i < -3000000000 -- empty
SELECT id FROM t1 WHERE i > 2147483646.5
SELECT id FROM t1 WHERE b > 9223372036854775806
SELECT id FROM t1 WHERE b < -9223372036854775807
SELECT id FROM t1 WHERE b < 1e19
SELECT id FROM t1 WHERE b > -1e19
SELECT id FROM t1 WHERE b > 1e19 -- empty
SELECT id FROM t1 WHERE b < 0.5
SELECT id FROM t1 WHERE b >= 0.5
SELECT id FROM t1 WHERE b BETWEEN -10000000000 AND 10000000000
SELECT id FROM t1 WHERE b > 9223372036854775807.5 -- empty
SELECT id FROM t1 WHERE n > 1.505
SELECT id FROM t1 WHERE n >= 1.505
SELECT id FROM t1 WHERE n < 1.505
SELECT id FROM t1 WHERE n <= 1.495
SELECT id FROM t1 WHERE n = 1.505 -- empty
SELECT id FROM t1 WHERE n <> 1.505
SELECT id FROM t1 WHERE n BETWEEN -1.505 AND 10.051
SELECT id FROM t1 WHERE n > 99999999999
SELECT id FROM t1 WHERE n < 1e15
SELECT id FROM t1 WHERE n >= 1e15
SELECT id FROM t1 WHERE n <= 99999999999
SELECT id FROM t1 WHERE n > 'Infinity'
SELECT id FROM t1 WHERE n >= '-Infinity'
SELECT id FROM t1 WHERE n < -1e15 -- empty
SELECT id FROM t1 WHERE n > 'NaN' -- empty
SELECT id FROM t1 WHERE n >= 'NaN'
SELECT id FROM t1 WHERE n < 'NaN'
SELECT id FROM t1 WHERE n > 9999999999.985
SELECT id FROM t1 WHERE 0 > n
SELECT id FROM t1 WHERE n < 'Infinity'
SELECT id FROM t1 WHERE n > '-Infinity'
SELECT id FROM t1 WHERE n = 1.005 -- empty
SELECT id FROM t1 WHERE n <= 1.005
SELECT id FROM t1 WHERE si <= 32767.5
SELECT id FROM t1 WHERE si >= -32768.5
SELECT id FROM t1 WHERE b <= 9223372036854775807
SELECT id FROM t1 WHERE b >= 9223372036854775808 -- empty
SELECT id FROM t1 WHERE b < -9223372036854775808.5 -- empty
SELECT id FROM t1 WHERE d < TIMESTAMP '2001-01-01 12:00'
SELECT id FROM t1 WHERE d = TIMESTAMP '2001-01-01 00:00'
SELECT id FROM t1 WHERE d = TIMESTAMP '2001-01-01 12:00' -- empty
SELECT id FROM t1 WHERE d <= TIMESTAMP '2001-01-01 12:00'
SELECT id FROM t1 WHERE d > TIMESTAMP '2001-01-01 12:00'
SELECT id FROM t1 WHERE d >= TIMESTAMP '2001-01-01 12:00'
SELECT id FROM t1 WHERE d <> TIMESTAMP '2001-01-01 12:00'
SELECT id FROM t1 WHERE d < TIMESTAMP '-infinity' -- empty
SELECT id FROM t1 WHERE d BETWEEN TIMESTAMP '1999-12-31 23:59' AND TIMESTAMP '2005-01-01 00:00:01'
SELECT id FROM t1 WHERE flag = 1 -- error
SELECT id FROM t1 WHERE d = 5 -- error
SELECT id FROM t1 WHERE i < '1.5'::numeric
SELECT id FROM t1 WHERE si IN (1, '2', 3.0)
SELECT id FROM t1 WHERE b = '12abc' -- error
SELECT id FROM t1 WHERE d = '2001-01-01 13:00'
SELECT id FROM t1 WHERE ts >= DATE '2011-01-01'
SELECT id FROM t1 WHERE tz < TIMESTAMP '2012-01-01 00:00'
SELECT id FROM t1 WHERE tz = '2021-06-01 12:00:00+05:30'
SELECT id FROM t1 WHERE i = '1.5' -- error
SELECT id FROM t1 WHERE si = '70000' -- error
SELECT id FROM t1 WHERE d < '2000-01-01'
SELECT id FROM t1 WHERE d >= '2003-06-15'
SELECT id FROM t1 WHERE d BETWEEN '2001-01-01' AND '2002-12-31'
SELECT id FROM t1 WHERE d NOT BETWEEN '2001-01-01' AND '2002-12-31'
SELECT id FROM t1 WHERE d > 'infinity' -- empty
SELECT id FROM t1 WHERE d < '-infinity' -- empty
SELECT id FROM t1 WHERE d > '-infinity'
SELECT id FROM t1 WHERE d < '0001-01-01'
SELECT id FROM t1 WHERE d >= '5874897-12-31'
SELECT id FROM t1 WHERE d < date '2001-01-01'
SELECT id FROM t1 WHERE d <= '2001-01-01'::date
SELECT id FROM t1 WHERE '2004-01-01' < d
SELECT id FROM t1 WHERE ts > '2011-06-01 12:00:00'
SELECT id FROM t1 WHERE ts <= '2011-06-01 12:00:00.5'
SELECT id FROM t1 WHERE ts BETWEEN '2010-03-01' AND '2010-09-01'
SELECT id FROM t1 WHERE ts < '1000-01-01'
SELECT id FROM t1 WHERE ts < timestamp '2011-01-01'
SELECT id FROM t1 WHERE ts > '2000-01-01'
SELECT id FROM t1 WHERE ts >= '1999-12-31 23:59:59.999999' AND ts < '2000-01-01 00:00:00.000001'
SELECT id FROM t1 WHERE tz >= '2015-01-01 00:00:00+00'
SELECT id FROM t1 WHERE tz < '2012-01-01 00:00:00-08'
SELECT id FROM t1 WHERE tz BETWEEN '2012-01-01' AND '2013-01-01'
SELECT id FROM t1 WHERE flag > false
SELECT id FROM t1 WHERE flag <= false
SELECT id FROM t1 WHERE k BETWEEN 10 AND 20
SELECT id FROM t1 WHERE k < 5 OR k > 45
SELECT id FROM t1 WHERE NOT (si < 0)
SELECT id FROM t1 WHERE si < 0 AND i > 0
SELECT id FROM t1 WHERE si < 0 OR i IS NULL
SELECT id FROM t1 WHERE (si BETWEEN 0 AND 10) OR (b < 0 AND n > 0)
SELECT id FROM t1 WHERE NOT (i BETWEEN 0 AND 1000 OR d > '2004-01-01')
SELECT id FROM t2 WHERE amt > 100 AND qty < 0
SELECT id FROM t2 WHERE d BETWEEN '2002-01-01' AND '2003-01-01' AND k2 >= 25
SELECT id FROM t3 WHERE rank >= 8

-- ORDER BY
SELECT id, si FROM t1 ORDER BY si, id -- ordered
SELECT id, si FROM t1 ORDER BY si DESC, id -- ordered
SELECT id, si FROM t1 ORDER BY si NULLS FIRST, id -- ordered
SELECT id, si FROM t1 ORDER BY si DESC NULLS LAST, id DESC -- ordered
SELECT id, i FROM t1 ORDER BY i, id -- ordered
SELECT id, b FROM t1 ORDER BY b DESC, id -- ordered
SELECT id, n FROM t1 ORDER BY n, id -- ordered
SELECT id, n FROM t1 ORDER BY n DESC NULLS LAST, id -- ordered
SELECT id, d FROM t1 ORDER BY d, id -- ordered
SELECT id, d FROM t1 ORDER BY d DESC, id -- ordered
SELECT id, ts FROM t1 ORDER BY ts, id -- ordered
SELECT id, tz FROM t1 ORDER BY tz DESC, id -- ordered
SELECT id, flag FROM t1 ORDER BY flag, id -- ordered
SELECT id, k FROM t1 ORDER BY k NULLS FIRST, id -- ordered
SELECT si, id FROM t1 ORDER BY 1, 2 -- ordered
SELECT si AS x, id FROM t1 ORDER BY x DESC, id -- ordered
SELECT i AS v, id FROM t1 ORDER BY v, 2 DESC -- ordered
SELECT id, tx FROM t1 ORDER BY si, id -- ordered
SELECT id, si FROM t1 ORDER BY si -- orderkey: 2
SELECT tx, d FROM t1 ORDER BY d DESC -- orderkey: 2
SELECT si FROM t1 ORDER BY si -- ordered
SELECT d FROM t1 ORDER BY d DESC NULLS FIRST -- ordered
SELECT id, si, i FROM t1 WHERE si > 0 ORDER BY si, i, id -- ordered
SELECT id, si FROM t1 ORDER BY si, id LIMIT 10 -- ordered
SELECT id, si FROM t1 ORDER BY si, id LIMIT 10 OFFSET 5 -- ordered
SELECT id, d FROM t1 ORDER BY d DESC, id LIMIT 5 -- ordered
SELECT id, si FROM t1 WHERE si IS NOT NULL ORDER BY si DESC, id DESC LIMIT 3 -- ordered
SELECT id, i FROM t1 ORDER BY i, id OFFSET 290 -- ordered
SELECT id, b FROM t1 ORDER BY id LIMIT 20 -- ordered
SELECT id, tx, vc, ch FROM t1 ORDER BY id LIMIT 50 -- ordered
SELECT * FROM t1 ORDER BY id -- ordered
SELECT * FROM t2 ORDER BY id -- ordered
SELECT * FROM t3 ORDER BY id -- ordered
SELECT id, si FROM t1 ORDER BY si, id FETCH FIRST 5 ROWS ONLY -- ordered
SELECT id, si FROM t1 ORDER BY si FETCH FIRST 5 ROWS WITH TIES -- orderkey: 2
SELECT id, n, d FROM t1 WHERE n BETWEEN 0 AND 100 ORDER BY n DESC, d, id -- ordered
SELECT t2.id, t2.amt FROM t2 ORDER BY t2.amt NULLS FIRST, t2.id -- ordered
SELECT id, rank FROM t3 ORDER BY rank DESC NULLS LAST, id -- ordered
SELECT id, ts FROM t1 WHERE ts < '2011-01-01' ORDER BY ts DESC, id LIMIT 7 -- ordered
SELECT id, k FROM t1 ORDER BY k, si, id -- ordered

-- aggregates, GROUP BY, HAVING
SELECT count(*), count(si), count(tx), count(secret), count(bin) FROM t1
SELECT min(si), max(si) FROM t1
SELECT min(i), max(i), min(b), max(b) FROM t1
SELECT min(n), max(n) FROM t1
SELECT min(n), max(n) FROM t1 WHERE n <> 'NaN'
SELECT min(d), max(d), min(ts), max(ts), min(tz), max(tz) FROM t1
SELECT min(d), max(d) FROM t1 WHERE d BETWEEN '2000-01-01' AND '2010-01-01'
SELECT min(flag), max(flag) FROM t1 -- error
SELECT max(bin) FROM t1 -- error
SELECT grp FROM t1 GROUP BY grp HAVING min(flag) = true -- error
SELECT sum(si), avg(si) FROM t1
SELECT sum(i), avg(i) FROM t1
SELECT sum(b), avg(b) FROM t1
SELECT sum(n), avg(n) FROM t1
SELECT sum(n), avg(n) FROM t1 WHERE id NOT IN (7, 8)
SELECT sum(n), avg(n) FROM t1 WHERE n <> 'NaN'
SELECT sum(i), avg(i) FROM t1 WHERE i BETWEEN -1000 AND 1000
SELECT sum(i), avg(si), count(*) FROM t1 WHERE id < 0
SELECT sum(amt), avg(amt), min(amt), max(amt) FROM t2
SELECT grp, count(*), sum(i), avg(i) FROM t1 GROUP BY grp
SELECT grp, sum(b), avg(b), min(b), max(b) FROM t1 GROUP BY grp
SELECT grp, sum(n), avg(n) FROM t1 GROUP BY grp
SELECT grp, sum(si), avg(si), count(si) FROM t1 GROUP BY grp
SELECT grp, min(d), max(d) FROM t1 GROUP BY grp
SELECT pn, sum(i), avg(n) FROM t1 WHERE n <> 'NaN' GROUP BY pn
SELECT si, count(*) FROM t1 GROUP BY si
SELECT i, count(*) FROM t1 GROUP BY i
SELECT b, count(*) FROM t1 GROUP BY b
SELECT n, count(*) FROM t1 GROUP BY n
SELECT tx, count(*) FROM t1 GROUP BY tx
SELECT vc, count(*) FROM t1 GROUP BY vc
SELECT ch, count(*) FROM t1 GROUP BY ch
SELECT d, count(*) FROM t1 GROUP BY d
SELECT ts, count(*) FROM t1 GROUP BY ts
SELECT tz, count(*) FROM t1 GROUP BY tz
SELECT flag, count(*) FROM t1 GROUP BY flag
SELECT bin, count(*) FROM t1 GROUP BY bin
SELECT eq_i, count(*) FROM t1 GROUP BY eq_i
SELECT eq_t, count(*), sum(i) FROM t1 GROUP BY eq_t
SELECT k, count(*), min(si), max(si) FROM t1 GROUP BY k
SELECT grp, flag, count(*) FROM t1 GROUP BY grp, flag
SELECT eq_i, sum(n) FROM t1 GROUP BY 1
SELECT tx, eq_t, count(*) FROM t1 GROUP BY tx, eq_t
SELECT k, sum(amt), avg(amt) FROM t2 GROUP BY k
SELECT code, count(*), max(d) FROM t2 GROUP BY code
SELECT name, count(*) FROM t2 GROUP BY name
SELECT flag, sum(i) AS s FROM t1 GROUP BY flag ORDER BY flag -- ordered
SELECT si, count(*) FROM t1 GROUP BY si ORDER BY si -- ordered
SELECT d, count(*) FROM t1 GROUP BY d ORDER BY d DESC NULLS LAST -- ordered
SELECT k, count(*) AS c FROM t1 GROUP BY k ORDER BY c DESC, k -- ordered
SELECT grp, max(i) FROM t1 GROUP BY grp ORDER BY 2, 1 -- ordered
SELECT grp, min(ts) AS m FROM t1 GROUP BY grp ORDER BY m DESC, grp -- ordered
SELECT grp, count(*) FROM t1 GROUP BY grp HAVING count(*) > 60
SELECT grp FROM t1 GROUP BY grp HAVING min(si) < 0
SELECT grp FROM t1 GROUP BY grp HAVING max(d) > '2005-01-01'
SELECT k, count(*) FROM t1 GROUP BY k HAVING count(*) >= 8
SELECT k FROM t1 GROUP BY k HAVING max(i) > 1000 AND min(i) < 0
SELECT eq_i, count(*) FROM t1 GROUP BY eq_i HAVING count(*) > 10
SELECT tx, count(*) FROM t1 GROUP BY tx HAVING count(*) > 5
SELECT si FROM t1 GROUP BY si HAVING count(*) > 1
SELECT grp, min(n) FROM t1 GROUP BY grp HAVING max(n) >= 9999999999.99
SELECT k, min(n), max(n) FROM t1 GROUP BY k HAVING min(n) > -1.505 AND max(n) < 1000.005
SELECT grp, sum(i) FROM t1 WHERE si > 0 GROUP BY grp HAVING count(*) > 10
SELECT count(*) FROM t1 HAVING max(si) > 100
SELECT count(*) FILTER (WHERE si > 0), count(*) FILTER (WHERE tx = 'alpha') FROM t1
SELECT grp, count(*) FILTER (WHERE flag = true) FROM t1 GROUP BY grp
SELECT count(si) FILTER (WHERE d > '2003-01-01') FROM t1

-- DISTINCT and COUNT(DISTINCT)
SELECT DISTINCT si FROM t1
SELECT DISTINCT tx FROM t1
SELECT DISTINCT vc FROM t1
SELECT DISTINCT ch FROM t1
SELECT DISTINCT d FROM t1
SELECT DISTINCT tz FROM t1
SELECT DISTINCT flag FROM t1
SELECT DISTINCT bin FROM t1
SELECT DISTINCT eq_t FROM t1
SELECT DISTINCT n FROM t1
SELECT DISTINCT grp, flag FROM t1
SELECT DISTINCT k FROM t1 WHERE k < 10
SELECT DISTINCT tx, ch FROM t1 WHERE eq_i IN (1, 2, 3, 4)
SELECT DISTINCT si FROM t1 ORDER BY si -- ordered
SELECT DISTINCT d FROM t1 ORDER BY d DESC NULLS FIRST -- ordered
SELECT DISTINCT tz FROM t1 ORDER BY tz -- ordered
SELECT DISTINCT i FROM t1 ORDER BY i LIMIT 10 -- ordered
SELECT DISTINCT ON (grp) grp, id, si FROM t1 ORDER BY grp, id -- ordered
SELECT count(DISTINCT si) FROM t1
SELECT count(DISTINCT tx), count(DISTINCT vc), count(DISTINCT ch) FROM t1
SELECT count(DISTINCT d), count(DISTINCT ts), count(DISTINCT tz) FROM t1
SELECT count(DISTINCT bin), count(DISTINCT flag), count(DISTINCT eq_i) FROM t1
SELECT grp, count(DISTINCT k) FROM t1 GROUP BY grp
SELECT count(DISTINCT n) FROM t1
SELECT count(DISTINCT un) FROM t1
SELECT count(DISTINCT code) FROM t2

-- joins: within a join group, self-joins, plain joins
SELECT t1.id, t2.id FROM t1 JOIN t2 ON t1.k = t2.k
SELECT t1.id, t2.id, t1.k FROM t1 JOIN t2 ON t1.k = t2.k WHERE t2.k < 10
SELECT t1.id, t2.name FROM t1, t2 WHERE t1.k = t2.k AND t1.si > 0
SELECT t1.id, t2.id FROM t1 LEFT JOIN t2 ON t1.k = t2.k
SELECT t1.id, t2.id FROM t1 RIGHT JOIN t2 ON t1.k = t2.k
SELECT t1.id, t2.id FROM t1 FULL JOIN t2 ON t1.k = t2.k
SELECT t2.k, t1.k FROM t2 LEFT JOIN t1 ON t1.k = t2.k WHERE t1.id IS NULL
SELECT t1.k, count(*) FROM t1 JOIN t2 ON t1.k = t2.k GROUP BY t1.k
SELECT t2.k, sum(t2.amt), sum(t1.i) FROM t1 JOIN t2 ON t1.k = t2.k GROUP BY t2.k
SELECT t1.id, t2.id FROM t1 JOIN t2 ON t1.k = t2.k AND t1.k > 40
SELECT t1.id, t2.id FROM t1 JOIN t2 ON t1.k < t2.k WHERE t1.id < 5 AND t2.id < 20
SELECT t2.id, t3.id FROM t2 JOIN t3 ON t2.code = t3.code
SELECT t2.code, t3.label FROM t2 JOIN t3 ON t2.code = t3.code WHERE t3.rank > 5
SELECT t2.id, t3.id FROM t2 LEFT JOIN t3 ON t2.code = t3.code WHERE t3.id IS NULL
SELECT t1.id, t2.id, t3.id FROM t1 JOIN t2 ON t1.k = t2.k JOIN t3 ON t2.code = t3.code WHERE t1.id < 50
SELECT a.id, b.id FROM t1 a JOIN t1 b ON a.si = b.si WHERE a.id < b.id
SELECT a.id, b.id FROM t1 a JOIN t1 b ON a.tx = b.tx AND a.id < b.id WHERE a.tx <> ''
SELECT a.id, b.id FROM t1 a JOIN t1 b ON a.d = b.d AND a.id <> b.id
SELECT a.id, b.id FROM t1 a, t1 b WHERE a.ch = b.ch AND a.id < b.id AND a.id < 20
SELECT a.id, b.id FROM t1 a JOIN t1 b ON a.i < b.i WHERE a.id < 10 AND b.id < 10
SELECT a.id, b.id FROM t1 a JOIN t1 b ON a.bin = b.bin AND a.id < b.id
SELECT a.id, b.id FROM t1 a JOIN t1 b ON a.n = b.n AND a.id < b.id
SELECT a.id, b.id FROM t1 a JOIN t1 b ON a.tz = b.tz AND a.id < b.id
SELECT a.id, b.id FROM t2 a JOIN t2 b ON a.name = b.name AND a.id < b.id
SELECT a.id, b.id FROM t1 a JOIN t1 b ON a.un = b.un AND a.id < b.id
SELECT t1.id, t3.label FROM t1 JOIN t3 ON t1.id = t3.id
SELECT t1.id, t1.tx, t3.label FROM t1 JOIN t3 ON t1.pn = t3.id
SELECT t1.id, t2.id FROM t1 CROSS JOIN t2 WHERE t1.id < 3 AND t2.id < 3
SELECT t1.id, t2.id FROM t1 JOIN t2 ON t1.k = t2.k ORDER BY t1.id, t2.id LIMIT 20 -- ordered
SELECT t1.id, t1.si, t2.amt FROM t1 JOIN t2 ON t1.k = t2.k WHERE t2.amt > 0 ORDER BY t1.si, t1.id, t2.id -- orderkey: 2
SELECT t1.k, t2.k FROM t1 JOIN t2 ON t1.k = t2.k WHERE t1.id = 10

-- subqueries: IN (SELECT), EXISTS, scalar
SELECT id FROM t1 WHERE k IN (SELECT k FROM t2 WHERE qty > 50)
SELECT id FROM t1 WHERE k NOT IN (SELECT k FROM t2 WHERE k IS NOT NULL)
SELECT id FROM t1 WHERE k IN (SELECT k FROM t2 WHERE name = 'alpha')
SELECT id FROM t2 WHERE code IN (SELECT code FROM t3 WHERE rank > 5)
SELECT id FROM t1 WHERE id IN (SELECT id FROM t2 WHERE amt > 0)
SELECT id FROM t1 WHERE si IN (SELECT si FROM t1 WHERE i > 0)
SELECT id FROM t1 a WHERE EXISTS (SELECT 1 FROM t2 b WHERE b.k = a.k)
SELECT id FROM t1 a WHERE NOT EXISTS (SELECT 1 FROM t2 b WHERE b.k = a.k)
SELECT id FROM t1 a WHERE EXISTS (SELECT 1 FROM t2 b WHERE b.k = a.k AND b.amt > 1000)
SELECT id FROM t2 a WHERE EXISTS (SELECT 1 FROM t3 c WHERE c.code = a.code AND c.rank < 3)
SELECT id FROM t1 WHERE si = (SELECT max(si) FROM t1)
SELECT id FROM t1 WHERE si = (SELECT min(si) FROM t1)
SELECT id, d FROM t1 WHERE d = (SELECT max(d) FROM t1 WHERE d < 'infinity')
SELECT id FROM t1 WHERE i > (SELECT max(i) FROM t1 WHERE i < 2147483647)
SELECT id FROM t1 WHERE n >= (SELECT max(n) FROM t1 WHERE n < 9999999999.99)
SELECT id FROM t2 WHERE k = (SELECT max(k) FROM t1)
SELECT id, (SELECT count(*) FROM t2 WHERE t2.k = t1.k) FROM t1
SELECT id FROM t1 WHERE pn = (SELECT count(*) FROM t3 WHERE rank > 8)
SELECT id FROM t1 WHERE i = (SELECT i FROM t1 WHERE id = 10)
SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t3 WHERE t3.rank = 10)
SELECT id FROM t1 a WHERE EXISTS (SELECT 1 FROM t1 b WHERE b.tx = a.tx AND b.id <> a.id)

-- subqueries the proxy evaluates first (simple protocol), their results
-- compared with encrypted columns or used by split execution
SELECT id FROM t1 WHERE k IN (SELECT k FROM t2 WHERE name LIKE '%a%')
SELECT id FROM t1 WHERE k NOT IN (SELECT k FROM t2 WHERE name LIKE '%a%' AND k IS NOT NULL)
SELECT id FROM t1 WHERE k NOT IN (SELECT k FROM t2 WHERE name LIKE '%a%') -- empty
SELECT id FROM t1 WHERE k IN (SELECT k FROM t2 WHERE name LIKE 'no such%') -- empty
SELECT id FROM t1 WHERE k NOT IN (SELECT k FROM t2 WHERE name LIKE 'no such%')
SELECT id FROM t1 WHERE n > (SELECT avg(amt) FROM t2)
SELECT id FROM t1 WHERE n > (SELECT round(avg(amt)) FROM t2) / 7 ORDER BY id -- ordered
SELECT id, i FROM t1 WHERE i < (SELECT sum(qty * 2) FROM t2 WHERE qty > 0) / 100
-- columns of different keys: subqueries evaluated first (simple protocol), else
-- re-keyed into one join group (JOIN-ADJ)
SELECT id FROM t1 WHERE d >= (SELECT max(d) FROM t2)
SELECT id FROM t1 WHERE si = (SELECT si FROM t1 WHERE id = 3) OR si = (SELECT si FROM t1 WHERE id = 4)
SELECT id FROM t1 WHERE i = (SELECT i FROM t1 WHERE i IS NOT NULL ORDER BY id LIMIT 2) -- error
SELECT k, sum(n * 2) FROM t1 GROUP BY k HAVING sum(n * 2) > (SELECT sum(amt) FROM t2 WHERE amt < 100) / 50
SELECT k, count(*) FROM t1 WHERE k IN (SELECT k FROM t2 WHERE name LIKE 'b%') GROUP BY k ORDER BY k -- ordered
WITH s AS (SELECT k FROM t2 WHERE name LIKE '%e%') SELECT id FROM t1 WHERE k IN (SELECT k FROM s) -- refuse: t2.name
WITH s AS (SELECT k, qty FROM t2 WHERE qty > 0) SELECT id FROM t1 WHERE n < (SELECT avg(qty) FROM s)
SELECT id FROM t1 WHERE i = (SELECT i FROM t1 WHERE i IS NOT NULL AND n > (SELECT avg(amt) FROM t2) ORDER BY id LIMIT 2) -- error
-- correlated subqueries, decorrelated: grouped by their keys ahead, looked up per row
SELECT id FROM t1 WHERE n > (SELECT 0.5 * avg(amt) FROM t2 WHERE t2.k = t1.k) -- simple: correlated by k
SELECT id FROM t1 WHERE (SELECT max(qty) - 1 FROM t2 WHERE t2.k = t1.k) IS NULL -- simple: keys without rows and NULL keys
-- columns of different keys: subqueries evaluated first (simple protocol), else
-- re-keyed into one join group (JOIN-ADJ)
SELECT t1.id, t1.i FROM t1 WHERE t1.i < (SELECT max(qty) FROM t2 WHERE t2.k = t1.k AND t2.id > 10) ORDER BY t1.id -- ordered
SELECT grp, count(*), sum(si) FROM t1 WHERE si > (SELECT min(qty) - 100 FROM t2 WHERE k = t1.k) GROUP BY grp ORDER BY grp -- simple: correlated under a grouped query; ordered
SELECT id FROM t2 a WHERE qty >= (SELECT avg(b.qty) FROM t2 b WHERE b.k = a.k AND b.code = a.code) -- simple: two keys
SELECT id FROM t1 WHERE grp = 'a' AND si > -100 AND n > (SELECT avg(amt) FROM t2 WHERE t2.k = t1.k) -- simple: keys restricted by the enclosing conditions
SELECT t2.id FROM t1 JOIN t2 ON t1.k = t2.k WHERE t1.grp = 'b' AND t2.qty < (SELECT max(x.qty) - 1 FROM t2 x WHERE x.code = t2.code) -- simple: keys restricted through a join
SELECT id, (SELECT sum(amt) FROM t2 WHERE t2.k = t1.k) FROM t1 ORDER BY id -- simple: in the select list; ordered
SELECT id, (SELECT sum(amt) AS total FROM t2 WHERE t2.k = t1.k) FROM t1 WHERE id < 20 ORDER BY id -- simple: named in the select list; ordered
SELECT id FROM t1 WHERE (SELECT max(qty) FROM t2 WHERE t2.k = t1.k) IS NULL
SELECT id FROM t1 WHERE i > (SELECT count(*) FROM t2 WHERE t2.k = t1.k)
SELECT s_id FROM (SELECT id AS s_id, k FROM t2 WHERE qty > 0) s WHERE s_id IN (SELECT id FROM t2 x WHERE x.amt > (SELECT avg(amt) FROM t2 y WHERE y.k = x.k)) -- simple: nested, correlated inside an uncorrelated IN
-- subqueries inside expressions the proxy computes: the server evaluates them per row
SELECT id, upper(tx) || (SELECT name FROM t2 WHERE t2.id = t1.id) FROM t1 ORDER BY id -- ordered
SELECT id, lower(vc) FROM t1 WHERE upper(tx) LIKE 'A%' OR EXISTS (SELECT 1 FROM t2 WHERE t2.id = t1.id AND t2.qty > 3) ORDER BY id -- ordered
SELECT id, CASE WHEN (SELECT count(*) FROM t2 WHERE t2.k = t1.k) > 1 THEN lower(vc) END FROM t1 ORDER BY id -- ordered
SELECT id, length(tx) + (SELECT count(*) FROM t2 WHERE t2.k = t1.k AND t2.qty > 3) FROM t1 ORDER BY 2 DESC, id -- ordered
SELECT (SELECT name FROM t2 WHERE t2.id = t1.id) AS nm, count(*), sum(length(tx)) FROM t1 GROUP BY 1 ORDER BY 1 NULLS FIRST -- ordered
SELECT id FROM t1 WHERE lower(tx) = (SELECT lower(name) FROM t2 WHERE t2.id = t1.id ORDER BY id LIMIT 1) ORDER BY id -- refuse: t2.name
SELECT id, upper(tx) FROM t1 WHERE si IN (SELECT qty FROM t2) AND length(vc) > 2 ORDER BY id -- ordered
SELECT t1.k, (SELECT count(*) FROM t2 WHERE t2.k = t1.k) AS c, sum(length(tx)) FROM t1 GROUP BY t1.k
SELECT t1.id, t1.tx, (SELECT max(t2.id) FROM t2 WHERE t2.k = t1.k), count(t3.id) FROM t1 LEFT JOIN t3 ON t3.id = t1.pn GROUP BY t1.id ORDER BY t1.id -- ordered
SELECT t1.grp, (SELECT count(*) FROM t2 WHERE t2.k = t1.k) FROM t1 GROUP BY t1.grp -- error
SELECT grp, (SELECT count(*) FROM t2 WHERE t2.k = k), sum(length(tx)) FROM t1 GROUP BY grp, k
SELECT id, (SELECT max(t2.qty) FROM t2 WHERE t2.k = t1.k) AS top, (SELECT min(d) FROM t2 WHERE t2.k = t1.k) FROM t1 ORDER BY id -- ordered
-- LIMIT and OFFSET parameters of a query the proxy computes
SELECT id, upper(tx) FROM t1 ORDER BY id LIMIT $1 -- ordered; params: 5
SELECT id, lower(vc) FROM t1 ORDER BY id LIMIT $1 OFFSET $2 -- ordered; params: 3, 10
SELECT grp, sum(length(tx)) FROM t1 GROUP BY grp ORDER BY grp LIMIT $1 -- ordered; params: NULL
SELECT id, upper(tx) FROM t1 ORDER BY id LIMIT $1 -- error; params: -1
SELECT id, upper(tx) FROM t1 ORDER BY id OFFSET $1 -- error; params: -2
-- SELECT DISTINCT ordered by an expression: only one of its outputs
SELECT DISTINCT id, upper(tx) FROM t1 ORDER BY upper(t1.tx), id -- ordered
SELECT DISTINCT id, upper(tx) FROM t1 ORDER BY lower(tx) -- error
SELECT DISTINCT id, coalesce(tx, $1) FROM t1 ORDER BY coalesce(tx, $1), id -- ordered; params: 'x'
SELECT DISTINCT id, coalesce(tx, $1) FROM t1 ORDER BY coalesce(tx, $2) -- error; params: 'x', 'y'
SELECT id FROM t1 WHERE tx ~* 'a'
SELECT id FROM t1 WHERE tx ~ '(.)\1' -- refuse: t1.tx
SELECT id FROM t1 WHERE tx ~* 'a(?=b)' -- refuse: t1.tx
SELECT initcap(tx) FROM t1 -- refuse: t1.tx
SELECT id FROM t1 WHERE tx ~ '\ybeta\y' -- refuse: t1.tx
SELECT regexp_replace(tx, 'a', 'b') FROM t1 -- refuse: t1.tx
SELECT id, bin || bin FROM t1 -- refuse: t1.bin
SELECT t1.grp, (SELECT count(*) FROM t2 t1 WHERE t1.k = 1), sum(length(t1.tx)) FROM t1 GROUP BY t1.grp
SELECT id FROM t1 WHERE (id IN (SELECT id FROM t1 u WHERE u.flag ORDER BY id LIMIT 1) OR NOT flag) AND $1::int = (CASE WHEN id IN (SELECT id FROM t1 u WHERE u.flag ORDER BY id LIMIT 1) THEN $2::int ELSE $3::int END + CASE WHEN NOT flag THEN $2::int ELSE $3::int END) -- params: 1, 1, 0
SELECT id FROM t1 WHERE (id IN (SELECT id FROM t1 u WHERE u.flag ORDER BY id LIMIT 1) OR NOT flag)
SELECT id, CASE WHEN id IN (SELECT id FROM t1 u WHERE u.flag ORDER BY id LIMIT 1) THEN 1 END FROM t1 WHERE upper(tx) <> 'Q'
-- conditions the proxy checks in split execution
SELECT grp, count(*) FROM t1 WHERE substring(tx FROM 1 FOR 1) IN ('a', 'b') GROUP BY grp
SELECT grp, count(*), sum(i) FROM t1 WHERE substring(vc, 2, 2) = 'el' AND si > 0 GROUP BY grp
SELECT id FROM t1 WHERE pn = (SELECT max(i) FROM t1) -- empty

-- CTEs and derived tables with plain outputs
WITH x AS (SELECT id FROM t1 WHERE si > 0) SELECT count(*) FROM x
WITH x AS (SELECT id, pn FROM t1 WHERE tx = 'alpha') SELECT * FROM x
WITH x AS (SELECT k, count(*) AS c FROM t1 GROUP BY k) SELECT c, count(*) FROM x GROUP BY c
WITH x AS (SELECT id FROM t1 WHERE d > '2003-01-01') SELECT t1.id, t1.d FROM t1 JOIN x ON t1.id = x.id
WITH big AS (SELECT id FROM t2 WHERE amt > 100) SELECT t1.id, t1.i FROM t1 WHERE t1.id IN (SELECT id FROM big)
SELECT s.id FROM (SELECT id FROM t1 WHERE i > 0) s
SELECT s.c FROM (SELECT grp, count(*) AS c FROM t1 WHERE flag = true GROUP BY grp) s
WITH a AS (SELECT id FROM t1 WHERE tx = 'beta'), b AS (SELECT id FROM t1 WHERE si < 0) SELECT a.id FROM a JOIN b ON a.id = b.id

-- LIKE, ILIKE, NOT LIKE
SELECT id FROM t1 WHERE tx LIKE 'alp%'
SELECT id FROM t1 WHERE tx LIKE '%a%'
SELECT id FROM t1 WHERE tx LIKE 'hello%'
SELECT id FROM t1 WHERE tx LIKE '%world'
SELECT id FROM t1 WHERE tx LIKE 'hello_world'
SELECT id FROM t1 WHERE tx LIKE 'hello\_world'
SELECT id FROM t1 WHERE tx LIKE 'hello!_world' ESCAPE '!'
SELECT id FROM t1 WHERE tx LIKE '50!% off' ESCAPE '!'
SELECT id FROM t1 WHERE tx LIKE '%!%%' ESCAPE '!'
SELECT id FROM t1 WHERE tx LIKE '%\%%'
SELECT id FROM t1 WHERE tx LIKE 'back\\slash'
SELECT id FROM t1 WHERE tx LIKE '%\\%'
SELECT id FROM t1 WHERE tx LIKE 'back\slash' ESCAPE ''
SELECT id FROM t1 WHERE tx LIKE '%'
SELECT id FROM t1 WHERE tx LIKE ''
SELECT id FROM t1 WHERE tx LIKE '___'
SELECT id FROM t1 WHERE tx LIKE '____'
SELECT id FROM t1 WHERE tx LIKE '日本%'
SELECT id FROM t1 WHERE tx LIKE '%café'
SELECT id FROM t1 WHERE tx LIKE 'ü%'
SELECT id FROM t1 WHERE tx LIKE '%a_b%'
SELECT id FROM t1 WHERE tx LIKE '%O''B%'
SELECT id FROM t1 WHERE tx ILIKE 'GAMMA%'
SELECT id FROM t1 WHERE tx ILIKE 'hello%'
SELECT id FROM t1 WHERE tx ILIKE '%ÜBER%'
SELECT id FROM t1 WHERE tx ILIKE '%über'
SELECT id FROM t1 WHERE tx ILIKE 'NAÏVE%' -- empty
SELECT id, tx FROM t1 WHERE tx ILIKE 'ü%'
SELECT id, tx FROM t1 WHERE tx ILIKE 'Ü%'
SELECT id, tx FROM t1 WHERE tx ILIKE '%É' -- empty
SELECT id FROM t1 WHERE tx NOT LIKE '%a%'
SELECT id FROM t1 WHERE tx NOT ILIKE 'h%'
SELECT id FROM t1 WHERE tx NOT LIKE '%' -- empty
SELECT id FROM t1 WHERE tx LIKE 'a%' AND si > 0
SELECT id FROM t1 WHERE tx LIKE 'a%' AND vc LIKE '%o%'
SELECT id FROM t1 WHERE tx LIKE '%l%' AND tx NOT LIKE '%o%'
SELECT id FROM t1 WHERE vc LIKE 'hello%'
SELECT id FROM t1 WHERE vc ILIKE '%O%'
SELECT id FROM t1 WHERE vc NOT LIKE '%\_%'
SELECT id FROM t1 WHERE vc LIKE '%é'
SELECT id, ch FROM t1 WHERE ch LIKE 'ab%'
SELECT id, ch FROM t1 WHERE ch LIKE 'ab' -- empty
SELECT id, ch FROM t1 WHERE ch LIKE 'ab___'
SELECT id, ch FROM t1 WHERE ch LIKE '%b' -- empty
SELECT id, ch FROM t1 WHERE ch LIKE '%b%'
SELECT id, ch FROM t1 WHERE ch LIKE 'x\_y' -- empty
SELECT id, ch FROM t1 WHERE ch LIKE 'x\_y%'
SELECT id, ch FROM t1 WHERE ch LIKE 'a\%b__'
SELECT id, ch FROM t1 WHERE ch ILIKE 'HELLO'
SELECT id, ch FROM t1 WHERE ch NOT LIKE '%l%'
SELECT id, tx FROM t1 WHERE tx LIKE 'h%' ORDER BY id LIMIT 5 -- ordered
SELECT id, tx FROM t1 WHERE tx LIKE 'h%' ORDER BY id LIMIT 5 OFFSET 3 -- ordered
SELECT id FROM t1 WHERE tx LIKE '%o%' ORDER BY id DESC LIMIT 10 -- ordered
SELECT id, si FROM t1 WHERE tx LIKE '%a%' ORDER BY si, id LIMIT 8 -- ordered
SELECT id FROM t1 WHERE tx LIKE $1 -- params: 'al%'
SELECT id FROM t1 WHERE tx ILIKE $1 ESCAPE '!' -- params: '%!_%'
SELECT id FROM t1 WHERE tx NOT LIKE $1 -- params: '%e%'
SELECT id FROM t1 WHERE tx LIKE '%o%' AND id > $1 ORDER BY id LIMIT $2 -- ordered; params: 10, 5
SELECT id FROM t1 WHERE tx LIKE '%o%' ORDER BY id LIMIT $1 OFFSET $2 -- ordered; params: 4, 2
SELECT id FROM t2 WHERE name LIKE 'b%' AND EXISTS (SELECT 1 FROM t1 WHERE t1.k = t2.k)
SELECT t1.id, t2.id FROM t1 JOIN t2 ON t1.k = t2.k WHERE t2.name LIKE '%e%' AND t1.id < 30
SELECT id FROM t1 WHERE eq_t LIKE 'a%'
SELECT id FROM t1 WHERE tx ~~ 'a%'
SELECT id FROM t1 WHERE tx LIKE 'al%' AND tx LIKE '%ha'

-- plain and encrypted columns together
SELECT id, grp, si, tx FROM t1 WHERE grp = 'a' AND si > 0
SELECT grp, pn, tx FROM t1 WHERE pn > 10 AND tx IS NOT NULL
SELECT id, pn + 1, upper(grp), tx FROM t1 WHERE pn < 3
SELECT id, si, i, b, n, un, tx, vc, ch, d, ts, tz, flag, bin, eq_i, eq_t, secret, k FROM t1 WHERE id % 7 = 0
SELECT id FROM t1 WHERE grp = 'b' OR tx = 'alpha'
SELECT id, CASE WHEN pn > 10 THEN 'hi' ELSE 'lo' END, tx FROM t1 WHERE flag = true
SELECT id, coalesce(grp, 'none'), si FROM t1 WHERE si IS NULL
SELECT id, si, i FROM t1 WHERE id BETWEEN 10 AND 20
SELECT t1.tx AS a, t1.vc AS b, t1.secret AS c FROM t1 WHERE id < 20
SELECT secret, id FROM t1 WHERE secret IS NOT NULL AND pn = 3
SELECT 1 AS one, id, ch FROM t1 WHERE ch = 'z'
SELECT id, tx, tx FROM t1 WHERE id < 10
SELECT t1.*, 1 FROM t1 WHERE id < 5
SELECT grp, count(*) FROM t1 WHERE si > 0 OR pn IS NULL GROUP BY grp
SELECT id FROM t3 WHERE label = 'L3' AND rank > 2

-- parameters
SELECT id FROM t1 WHERE si = $1 -- params: 5
SELECT id FROM t1 WHERE si > $1 AND si < $2 -- params: -100, 100
SELECT id FROM t1 WHERE i IN ($1, $2, 42) -- params: 0, -1000
SELECT id FROM t1 WHERE tx = $1 -- params: 'alpha'
SELECT id FROM t1 WHERE n >= $1 -- params: '1.505'
SELECT id FROM t1 WHERE d BETWEEN $1 AND $2 -- params: '2001-01-01', '2002-01-01'
SELECT id FROM t1 WHERE ts < $1 -- params: '2011-01-01 00:00:00'
SELECT id FROM t1 WHERE tz >= $1 -- params: '2015-01-01 00:00:00+00'
SELECT id FROM t1 WHERE flag = $1 -- params: 'true'
SELECT id FROM t1 WHERE bin = $1 -- params: '\xdeadbeef'
SELECT id FROM t1 WHERE si = $1 -- params: NULL; empty
SELECT id FROM t1 WHERE k = $1 AND grp = $2 -- params: 10, 'd'
SELECT id FROM t1 WHERE eq_i IN ($1, $2) -- params: 3, 4
SELECT id, si FROM t1 ORDER BY si, id LIMIT $1 OFFSET $2 -- ordered; params: 5, 10
SELECT id FROM t1 WHERE n = $1 -- params: '1.5'
SELECT id FROM t1 WHERE un = $1 -- params: '1.0'
SELECT id FROM t1 WHERE ch = $1 -- params: 'ab'
SELECT id FROM t1 WHERE vc = $1 -- params: 'abc'
SELECT id FROM t1 WHERE b > $1 -- params: 9223372036854775806
SELECT id FROM t1 WHERE $1 < i -- params: 1000
SELECT id FROM t1 WHERE i = $1 -- params: '1.5'; error
SELECT k, count(*) FROM t1 WHERE k BETWEEN $1 AND $2 GROUP BY k -- params: 5, 9
SELECT grp, sum(i) FROM t1 WHERE d > $1 GROUP BY grp -- params: '2002-06-01'
SELECT id FROM t2 WHERE code = $1 -- params: 'C07'
SELECT id FROM t1 WHERE si = (SELECT max(si) FROM t1 WHERE si < $1) -- params: 100

-- more shapes
SELECT grp, sum(si), avg(si) FROM t1 WHERE si IS NULL GROUP BY grp
SELECT id, avg(i), sum(b) FROM t1 GROUP BY id
SELECT k, avg(si), sum(n) FROM t1 WHERE n <> 'NaN' GROUP BY k ORDER BY k -- ordered
SELECT t1.id, t2.id, t2.amt FROM t1 JOIN t2 ON t1.k = t2.k WHERE t1.id < 40 ORDER BY t2.amt, t1.id, t2.id -- ordered
SELECT grp, count(DISTINCT tx) FROM t1 GROUP BY grp HAVING count(DISTINCT tx) > 10
SELECT count(*) FROM t1 a JOIN t2 b ON a.k = b.k AND a.k = 5
SELECT id FROM t1 WHERE si IS DISTINCT FROM 5
SELECT id FROM t1 WHERE si IS NOT DISTINCT FROM 5
SELECT id FROM t1 WHERE flag
SELECT id FROM t1 WHERE NOT flag
SELECT id FROM t1 WHERE flag IS TRUE
SELECT id FROM t1 WHERE flag IS NOT FALSE
SELECT id FROM t1 WHERE si = ANY ('{1,5}')
SELECT id FROM t1 WHERE si = ANY (ARRAY[1, 5])
SELECT id FROM t1 WHERE si <> ALL (ARRAY[1, 5, NULL]) -- empty
SELECT id, si FROM t1 WHERE si <> ALL (ARRAY[1, 5])
SELECT id FROM t1 WHERE tx = ANY ($1) -- params: '{alpha,über,NULL}'
SELECT id FROM t1 WHERE i <> ALL ($1::int8[]) -- params: '{1,2,3}'
SELECT id FROM t1 WHERE tx = ANY (ARRAY['alpha', 'über', 'x'])
SELECT id FROM t1 WHERE i = ANY (ARRAY['1', '2']) -- error
SELECT id FROM t1 WHERE vc = ANY ('{"hello world",NULL}'::text[]) OR d = ANY ('{2000-02-29,infinity}')
SELECT id FROM t1 WHERE si < ANY ('{1,5}')
SELECT id FROM t1 WHERE (si, i) = (5, 42) -- refuse: t1.si
SELECT * FROM t1 WHERE id = 1
SELECT t2.* FROM t2 WHERE k = 5
SELECT count(*) FROM t1 WHERE tx = ''
SELECT id FROM t1 WHERE si > 0 UNION SELECT id FROM t2 WHERE amt > 0
SELECT id FROM t1 WHERE si > 0 INTERSECT SELECT id FROM t1 WHERE i > 0
SELECT id FROM t1 WHERE si > 0 EXCEPT SELECT id FROM t1 WHERE tx = 'alpha'
SELECT x.id FROM (SELECT id FROM t1 WHERE d > '2003-01-01') x WHERE x.id < 100
SELECT count(*) > 0 FROM t1 WHERE si = 5
SELECT id FROM t1 WHERE tx = 'alpha' LIMIT 0 -- empty
SELECT id, si FROM t1 ORDER BY si, id OFFSET 1000 -- empty
SELECT t1.id, t2.id FROM t1 JOIN t2 ON t1.k <= t2.k WHERE t1.id < 4 AND t2.id < 10
SELECT id FROM t1 WHERE si = $1::int -- params: 5
SELECT id FROM t1 WHERE i IN ($1, $2) -- params: NULL, 42
SELECT id FROM t1 WHERE ts = $1 -- params: '1999-12-31 23:59:59.999999'
SELECT id FROM t1 WHERE d = $1 -- params: 'infinity'
SELECT id FROM t1 WHERE n = $1 -- params: 'NaN'
SELECT id FROM t1 WHERE un = $1 -- params: '1e20'
SELECT id FROM t1 WHERE bin = $1 -- params: '\x'
SELECT id FROM t1 WHERE tx = $1 -- params: ''
SELECT id FROM t1 WHERE tx = $1 -- params: 'O''Brien'
SELECT id FROM t1 WHERE tx = $1 OR vc = $1 -- params: 'abc'
SELECT id FROM t1 WHERE ch = $1 -- params: 'ab   '
SELECT id FROM t1 WHERE tz = $1 -- params: '2021-06-01 12:00:00+05:30'
SELECT id FROM t1 WHERE n > $1 -- params: '99999999999'
SELECT id FROM t1 WHERE i < $1 -- params: 2
SELECT grp, min(si), max(si), count(*) FROM t1 WHERE si BETWEEN $1 AND $2 GROUP BY grp -- params: -50, 50
SELECT id FROM t1 a WHERE EXISTS (SELECT 1 FROM t2 b WHERE b.k = a.k AND b.name = $1) -- params: 'beta'
SELECT id FROM t1 WHERE k IN (SELECT k FROM t2 WHERE amt > $1) -- params: '1000'
SELECT tz, count(*) FROM t1 GROUP BY tz ORDER BY tz NULLS FIRST -- ordered
SELECT ts, count(*) FROM t1 GROUP BY ts HAVING count(*) > 1
SELECT n, count(*) FROM t1 GROUP BY n HAVING n > 0
SELECT si, count(*) FROM t1 GROUP BY si HAVING si < 0 AND count(*) > 1
SELECT si, count(*) FROM t1 GROUP BY si HAVING si = 5
SELECT tx, count(*) FROM t1 GROUP BY tx HAVING tx IN ('alpha', 'beta')
SELECT DISTINCT si, i FROM t1 WHERE si > 0 ORDER BY si, i -- ordered
SELECT id, tx FROM t1 WHERE tx LIKE 'hello%' AND tx NOT LIKE '%world' AND si IS NOT NULL

-- errors: the proxy must fail as PostgreSQL does
SELECT id FROM t1 WHERE nosuch = 1 -- error
SELECT id FROM t1 WHERE tx = 1 -- error
SELECT id / 0 FROM t1 WHERE si = 5 -- error
SELECT id FROM t1 WHERE d = 'not a date' -- error
SELECT si FROM t1 WHERE id = 1 OR id = 2 GROUP BY grp -- error
SELECT id FROM t1 WHERE si = (SELECT si FROM t1 WHERE si IS NOT NULL) -- error

-- refused
SELECT si + 1 FROM t1
SELECT upper(tx) FROM t1
SELECT id FROM t1 WHERE si + 1 > 5
SELECT id FROM t1 WHERE upper(tx) = 'ALPHA'
SELECT min(tx) FROM t1
SELECT id, name FROM t2 ORDER BY name
SELECT id FROM t2 ORDER BY name DESC NULLS LAST, id LIMIT 7 OFFSET 2 -- ordered
SELECT DISTINCT name FROM t2 ORDER BY name DESC -- ordered
SELECT id, name FROM t2 WHERE qty > 0 ORDER BY k, name NULLS FIRST, id -- ordered
SELECT id FROM t2 ORDER BY name, id LIMIT $1 -- ordered; params: 4
SELECT id FROM t2 WHERE name > 'b'
SELECT id FROM t1 WHERE tx > 'b' OR si > 0
SELECT id FROM t1 WHERE NOT (tx > 'b')
SELECT grp, count(*) FROM t1 WHERE tx > 'b' GROUP BY grp
SELECT id FROM t1 WHERE vc NOT BETWEEN 'a' AND 'b'
SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t1 x WHERE x.tx < 'b') -- simple: text range in a subquery
SELECT id FROM t1 WHERE tx < vc
SELECT id, tx FROM t1 ORDER BY tx USING < -- refuse: t1.tx
SELECT id FROM (SELECT id FROM t1 ORDER BY tx, id LIMIT 5) s
SELECT id FROM t1 WHERE eq_i < 5
SELECT id FROM t1 ORDER BY eq_i
SELECT min(eq_i) FROM t1
SELECT id FROM t1 WHERE eq_i BETWEEN 1 AND 3
SELECT sum(eq_i) FROM t1
SELECT id FROM t1 WHERE secret = 1234 -- empty
SELECT id FROM t1 WHERE secret > 5000
SELECT secret, count(*) FROM t1 GROUP BY secret
SELECT DISTINCT secret FROM t1
SELECT count(DISTINCT secret) FROM t1
SELECT id FROM t1 ORDER BY secret
SELECT sum(secret) FROM t1
SELECT max(secret) FROM t1
SELECT a.id FROM t1 a JOIN t1 b ON a.secret = b.secret -- refuse: t1.secret
SELECT id FROM t1 WHERE secret IN (1, 2) -- empty
-- joins across keys: re-keyed on demand (JOIN-ADJ), t2.k2 into group k, the others
-- into new groups
SELECT t1.id FROM t1 JOIN t2 ON t1.k = t2.k2
SELECT t1.id FROM t1 JOIN t2 ON t1.i = t2.qty
SELECT t1.id FROM t1 JOIN t3 ON t1.vc = t3.code -- refuse: t1.vc; empty
SELECT t1.id FROM t1 JOIN t2 ON t1.d = t2.d
SELECT id FROM t1 WHERE si = i
SELECT id FROM t1 WHERE tx = vc
SELECT id FROM t1 WHERE pn = eq_i
SELECT id FROM t1 WHERE tx LIKE 'a%' OR si > 0
SELECT id FROM t1 WHERE si > 0 OR vc LIKE '%o%'
SELECT count(*) FROM t1 WHERE tx LIKE 'a%'
SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.name LIKE 'a%') -- simple: LIKE in a subquery
SELECT id FROM t1 WHERE bin LIKE 'a%' -- refuse: t1.bin
SELECT un, count(*) FROM t1 GROUP BY un -- refuse: t1.un
SELECT DISTINCT un FROM t1 -- refuse: t1.un
SELECT id FROM t1 WHERE un < 1
SELECT id FROM t1 ORDER BY bin, id -- ordered
SELECT sum(qty) FROM t2
SELECT avg(k) FROM t1
SELECT sum(un) FROM t1
SELECT grp, sum(i) FROM t1 GROUP BY grp HAVING sum(i) > 0
SELECT grp, sum(i) FROM t1 GROUP BY grp ORDER BY 2
SELECT i FROM t1 UNION SELECT i FROM t1
SELECT tx FROM t1 UNION SELECT name FROM t2
SELECT si FROM t1 WHERE si > 0 INTERSECT SELECT si FROM t1 WHERE si < 100
SELECT d FROM t1 EXCEPT SELECT d FROM t2
SELECT id, i, tx FROM t1 WHERE id < 50 UNION ALL SELECT id, qty, name FROM t2 WHERE id < 50 ORDER BY 1, 2, 3 LIMIT 7 -- ordered
SELECT tx FROM t1 INTERSECT ALL SELECT name FROM t2
SELECT s.i FROM (SELECT i FROM t1) s
SELECT id FROM t1 WHERE coalesce(si, 0) = 0
SELECT id FROM t1 WHERE i::text = '42'
SELECT id, upper(tx), length(vc), round(n, 1), abs(i), coalesce(ch, 'none') FROM t1 WHERE id % 9 = 0
SELECT id FROM t1 WHERE length(tx) > 5 AND lower(vc) LIKE 'a%'
SELECT initcap(tx) FROM t1 -- refuse: t1.tx
SELECT id FROM t1 WHERE tx ~ '\ybeta\y' -- refuse: t1.tx
SELECT regexp_replace(tx, 'a', 'b') FROM t1 -- refuse: t1.tx
SELECT id FROM t1 WHERE d - 1 > '2001-01-01'
SELECT id FROM t1 WHERE extract(year FROM d) = 2001
SELECT id, extract(year FROM d), extract(month FROM d), extract(day FROM d) FROM t1 WHERE extract(year FROM d) < 1 OR d IS NULL OR extract(month FROM d) IS NULL
-- a date cast to timestamp[tz] past 294276 AD fails (22008); compared
-- with one, it lies between every finite timestamp and infinity
SELECT id, (d + 0) > timestamp '2000-01-01', (d + 0) < timestamp 'infinity', (d + 0) < timestamptz 'infinity', (d + 0) > timestamptz '-infinity' FROM t1 ORDER BY id -- ordered
SELECT id, date_trunc('year', d) FROM t1 ORDER BY id -- error
SELECT id, greatest(d, timestamp '2000-01-01') FROM t1 ORDER BY id -- error
SELECT id, d + interval '1 day' FROM t1 ORDER BY id -- error
SELECT id, (d + 0)::timestamptz FROM t1 ORDER BY id -- error
SELECT id, date_trunc('month', d), d - interval '1 hour' FROM t1 WHERE d < '3000-01-01' ORDER BY id -- ordered
SELECT length(tx) FROM t1
SELECT id FROM t1 WHERE si BETWEEN SYMMETRIC 100 AND -100 -- refuse: t1.si
SELECT t1 FROM t1 -- refuse: t1
SELECT string_agg(tx, ',') FROM t1 -- refuse: t1.tx
SELECT array_agg(i) FROM t1 -- refuse: t1.i
-- columns of different keys: subqueries evaluated first (simple protocol), else
-- re-keyed into one join group (JOIN-ADJ)
SELECT id FROM t1 WHERE i IN (SELECT qty FROM t2)
SELECT id FROM t1 WHERE i = (SELECT count(*) FROM t2) -- empty
SELECT avg(DISTINCT i) FROM t1
SELECT sum(i) OVER () FROM t1
SELECT id, rank() OVER (PARTITION BY grp ORDER BY i DESC), sum(n) OVER (PARTITION BY grp ORDER BY id) FROM t1 ORDER BY id -- ordered
SELECT id, lag(i) OVER (ORDER BY id) FROM t1
-- window functions and frames
SELECT id, lag(tx, 2, 'none') OVER (PARTITION BY grp ORDER BY id), lead(n, 1) OVER (PARTITION BY grp ORDER BY id) FROM t1 ORDER BY id -- ordered
SELECT id, lead(i, -1) OVER (ORDER BY id), lag(d, 0) OVER (ORDER BY id), lag(b, NULL) OVER (ORDER BY id), lead(si, 3, 7) OVER (ORDER BY id) FROM t1 ORDER BY id -- ordered
SELECT id, first_value(tx) OVER (PARTITION BY grp ORDER BY i, id), last_value(tx) OVER (PARTITION BY grp ORDER BY i, id), nth_value(n, 2) OVER (PARTITION BY grp ORDER BY i, id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM t1 ORDER BY id -- ordered
SELECT id, sum(i) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING), count(*) OVER (ORDER BY id ROWS 3 PRECEDING), avg(n) OVER (PARTITION BY grp ORDER BY id ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING) FROM t1 ORDER BY id -- ordered
SELECT id, sum(b) OVER (ORDER BY si GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING), min(tx) OVER (ORDER BY si GROUPS BETWEEN CURRENT ROW AND 2 FOLLOWING EXCLUDE TIES), max(d) OVER (ORDER BY si RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING EXCLUDE GROUP) FROM t1 ORDER BY id -- ordered
SELECT id, sum(n) OVER (PARTITION BY grp ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW), count(i) OVER (ORDER BY id ROWS BETWEEN 5 PRECEDING AND 2 PRECEDING), max(un) OVER (ORDER BY id GROUPS 2 PRECEDING) FROM t1 ORDER BY id -- ordered
SELECT id, first_value(i) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND 2 FOLLOWING), last_value(d) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING EXCLUDE CURRENT ROW), nth_value(tx, 3) OVER (ORDER BY id) FROM t1 ORDER BY id -- ordered
SELECT id, ntile(7) OVER (ORDER BY id), percent_rank() OVER (ORDER BY si), cume_dist() OVER (PARTITION BY grp ORDER BY si) FROM t1 ORDER BY id -- ordered
SELECT id, ntile(1000) OVER (PARTITION BY grp ORDER BY id), percent_rank() OVER (), cume_dist() OVER () FROM t1 ORDER BY id -- ordered
SELECT id, sum(i) OVER (ORDER BY id ROWS BETWEEN $1 PRECEDING AND $2 FOLLOWING) FROM t1 ORDER BY id -- ordered; params: 2, 1
SELECT id, sum(i) OVER (ORDER BY id ROWS BETWEEN 9223372036854775807 PRECEDING AND 9223372036854775807 FOLLOWING) FROM t1 ORDER BY id -- ordered
SELECT id, sum(i) OVER (ORDER BY id ROWS -1 PRECEDING) FROM t1 -- error
SELECT id, sum(i) OVER (ORDER BY id ROWS NULL PRECEDING) FROM t1 -- error
SELECT id, ntile(0) OVER (ORDER BY id) FROM t1 -- error
SELECT id, nth_value(i, 0) OVER (ORDER BY id) FROM t1 -- error
SELECT id, sum(i) OVER (GROUPS 1 PRECEDING) FROM t1 -- error
SELECT id, sum(i) OVER (ORDER BY id ROWS id PRECEDING) FROM t1 -- error
SELECT id, sum(i) OVER (ORDER BY i RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING) FROM t1 ORDER BY id -- ordered
SELECT id, count(*) OVER (ORDER BY si DESC RANGE BETWEEN 100 PRECEDING AND 50 FOLLOWING), min(id) OVER (PARTITION BY grp ORDER BY b NULLS FIRST RANGE BETWEEN UNBOUNDED PRECEDING AND 1000000 PRECEDING) FROM t1 ORDER BY id -- ordered
SELECT id, sum(pn) OVER (ORDER BY n RANGE BETWEEN 10.5 PRECEDING AND 0.25 FOLLOWING), count(un) OVER (ORDER BY un DESC NULLS LAST RANGE BETWEEN CURRENT ROW AND 1000 FOLLOWING EXCLUDE CURRENT ROW) FROM t1 ORDER BY id -- ordered
SELECT id, count(*) OVER (ORDER BY un RANGE BETWEEN 'Infinity' PRECEDING AND 0 FOLLOWING), max(id) OVER (ORDER BY i RANGE BETWEEN 9223372036854775807 PRECEDING AND 9223372036854775807 FOLLOWING) FROM t1 ORDER BY id -- ordered
SELECT id, sum(i) OVER (ORDER BY i, id RANGE 5 PRECEDING) FROM t1 -- error
SELECT id, sum(i) OVER (ORDER BY i RANGE -5 PRECEDING) FROM t1 -- error
SELECT id, sum(i) OVER (ORDER BY i RANGE 1.5 PRECEDING) FROM t1 -- error
-- * in a derived table (Django's QUALIFY emulation)
SELECT s.id, s.tx FROM (SELECT * FROM t1 WHERE id < 6) s ORDER BY s.id -- ordered
SELECT q.id, q.i FROM (SELECT * FROM (SELECT t1.id, t1.i, row_number() OVER (PARTITION BY grp ORDER BY id) AS qual0 FROM t1) qualify WHERE qual0 <= 2) q ORDER BY q.id -- ordered
SELECT m.id, m.name FROM (SELECT t2.* FROM t2 WHERE qty > 3) m ORDER BY m.id -- ordered
SELECT s.id, s.tx FROM (SELECT id, tx, row_number() OVER (PARTITION BY grp ORDER BY tx DESC, id) AS q FROM t1) s WHERE s.q > 1 ORDER BY s.tx DESC, s.id -- ordered
SELECT s.id, s.q FROM (SELECT id, rank() OVER (ORDER BY i) AS q FROM t1) s WHERE s.q <= 5 ORDER BY s.id -- ordered
WITH x AS (SELECT tx FROM t1 WHERE id < 10 UNION SELECT tx FROM t1 WHERE id > 290) SELECT * FROM x ORDER BY 1 -- ordered
SELECT col1, col2 FROM (SELECT * FROM (SELECT t1.id AS col1, t1.tx AS col2, row_number() OVER (PARTITION BY grp ORDER BY tx DESC, id) AS qual0 FROM t1 WHERE grp IN ('a', 'b') ORDER BY tx DESC) qualify WHERE qual0 > 1) qualify_mask ORDER BY col2 DESC, col1 -- ordered
SELECT id FROM t1 WHERE i IN (pn, 5)
SELECT id FROM t1 WHERE tx LIKE tx
SELECT id FROM t1 WHERE tx || 'x' = 'alphax'
SELECT id FROM t1 WHERE tx || vc = 'alphaalpha' OR vc || 'y' = 'betay'
SELECT max(si) + 1 FROM t1
SELECT id, si FROM t1 ORDER BY si + 0
SELECT t1.id FROM t1 JOIN t2 ON t1.k BETWEEN t2.k AND t2.k2 -- refuse: t1.k
SELECT id FROM t1 WHERE eq_t LIKE 'a%' AND eq_t > 'a'

-- Text order: the server filters and sorts on 8-byte prefixes, the proxy
-- compares and sorts the decrypted values (C collation). The words share
-- prefixes ("hello world ...", "delta_x ..."), so runs have ties.
SELECT id, tx FROM t1 ORDER BY tx, id -- ordered
SELECT id, tx FROM t1 ORDER BY tx DESC, id -- ordered
SELECT id, tx FROM t1 ORDER BY tx NULLS FIRST, id DESC -- ordered
SELECT id, tx FROM t1 ORDER BY tx DESC NULLS LAST, id -- ordered
SELECT vc FROM t1 ORDER BY 1 -- orderkey: 1
SELECT id, ch FROM t1 ORDER BY ch, id -- ordered
SELECT id, ch FROM t1 ORDER BY ch DESC, id DESC -- ordered
SELECT id FROM t1 ORDER BY ch, id -- ordered
SELECT id, vc, tx FROM t1 ORDER BY vc, tx, id -- ordered
SELECT id, tx, vc FROM t1 ORDER BY tx DESC, vc, id -- ordered
SELECT id, tx FROM t1 ORDER BY i, tx, id -- ordered
SELECT id, tx FROM t1 ORDER BY grp, tx, id -- ordered
SELECT id, tx FROM t1 ORDER BY grp DESC, tx DESC, pn, id -- ordered
SELECT id, tx, si FROM t1 ORDER BY tx, si DESC, id -- ordered
SELECT id, tx FROM t1 ORDER BY tx, id LIMIT 7 -- ordered
SELECT id, tx FROM t1 ORDER BY tx DESC, id LIMIT 5 OFFSET 3 -- ordered
SELECT id, tx FROM t1 ORDER BY tx, id OFFSET 200 -- ordered
SELECT id, tx FROM t1 ORDER BY tx, id LIMIT 0 -- empty
SELECT id, tx FROM t1 ORDER BY tx, id LIMIT ALL -- ordered
SELECT id, tx FROM t1 ORDER BY tx, id LIMIT $1 OFFSET $2 -- ordered; params: 6, 2
SELECT id, tx FROM t1 ORDER BY tx, id LIMIT $1 -- ordered; params: NULL
SELECT tx FROM t1 WHERE tx IS NOT NULL ORDER BY tx FETCH FIRST 3 ROWS WITH TIES -- ordered
SELECT tx, vc FROM t1 ORDER BY tx, vc FETCH FIRST 10 ROWS WITH TIES -- orderkey: 1,2
SELECT id, tx FROM t1 ORDER BY grp, tx, id LIMIT 12 -- ordered
SELECT id, tx FROM t1 ORDER BY tx, grp, id LIMIT 12 -- ordered
SELECT id, tx FROM t1 ORDER BY tx, pn DESC NULLS LAST, id LIMIT 9 -- ordered
SELECT DISTINCT tx FROM t1 ORDER BY tx -- ordered
SELECT DISTINCT ch FROM t1 ORDER BY ch DESC -- ordered
SELECT DISTINCT vc FROM t1 ORDER BY vc LIMIT 4 -- ordered
SELECT tx, count(*) FROM t1 GROUP BY tx ORDER BY tx -- ordered
SELECT count(*) FROM t1 GROUP BY vc ORDER BY vc -- ordered
SELECT tx, count(*) FROM t1 GROUP BY tx ORDER BY count(*) DESC, tx LIMIT 5 -- ordered
SELECT tx, count(*) FROM t1 GROUP BY tx ORDER BY 2 DESC, 1 FETCH FIRST 2 ROWS WITH TIES -- ordered
SELECT grp, tx, count(*) FROM t1 GROUP BY grp, tx ORDER BY grp, tx -- ordered
SELECT t1.id, t1.tx, t2.name FROM t1 JOIN t2 ON t1.k = t2.k ORDER BY t1.tx, t1.id, t2.id -- ordered
SELECT id, tx FROM t1 WHERE si > 0 ORDER BY tx, id LIMIT 8 -- ordered
SELECT id, tx FROM t1 WHERE tx LIKE 'hello%' ORDER BY tx, id -- ordered
SELECT id, tx FROM t1 WHERE tx LIKE '%a%' ORDER BY tx DESC, id LIMIT 4 OFFSET 1 -- ordered
SELECT id, tx FROM t1 WHERE tx < 'b' ORDER BY id -- ordered
SELECT id, tx FROM t1 WHERE tx <= 'delta_x' ORDER BY id -- ordered
SELECT id, tx FROM t1 WHERE tx > 'hello world' ORDER BY id -- ordered
SELECT id, tx FROM t1 WHERE tx >= 'hello world beta' ORDER BY id -- ordered
SELECT id FROM t1 WHERE 'hello world' < tx
SELECT id FROM t1 WHERE 'gamma' >= tx
SELECT id FROM t1 WHERE tx > ''
SELECT id FROM t1 WHERE tx < '' -- empty
SELECT id FROM t1 WHERE tx > 'über' AND tx < '日本語z'
SELECT id, vc FROM t1 WHERE vc BETWEEN 'abc' AND 'delta_x gamma' ORDER BY id -- ordered
SELECT id, vc FROM t1 WHERE vc BETWEEN $1 AND $2 -- params: 'b', 'hello worlds'
SELECT id, vc FROM t1 WHERE vc BETWEEN $1 AND $2 -- empty; params: NULL, 'z'
SELECT id, ch FROM t1 WHERE ch < 'beta'
SELECT id, ch FROM t1 WHERE ch >= 'abc  '
SELECT id, ch FROM t1 WHERE ch > 'abc'
SELECT id, tx FROM t1 WHERE tx > $1 AND tx < $2 ORDER BY tx, id LIMIT $3 -- ordered; params: 'a', 'i', 5
SELECT id FROM t1 WHERE tx > 'hello world' AND tx LIKE '%a%' AND si <> 3
SELECT id, tx FROM t1 WHERE tx >= 'a' ORDER BY tx DESC, id LIMIT 3 -- ordered
SELECT id FROM t1 WHERE tx < 5 -- error
SELECT id FROM t1 WHERE tx > 'b'::text AND vc < 'x'::varchar

-- Encrypted columns passing through derived tables and CTEs.
WITH x AS (SELECT tx FROM t1) SELECT * FROM x
WITH x AS (SELECT id, tx, n FROM t1 WHERE si > 0) SELECT id, tx, n FROM x WHERE n > 100 ORDER BY id -- ordered
WITH x AS (SELECT id, tx AS word, d FROM t1) SELECT word, count(*) FROM x GROUP BY word
WITH x(a, b) AS (SELECT id, i FROM t1) SELECT a, b FROM x WHERE b BETWEEN -1000 AND 1000
WITH x AS (SELECT grp, n, amt_src.amt FROM t1 JOIN t2 amt_src ON t1.k = amt_src.k) SELECT grp, sum(n), avg(amt), min(amt), max(n) FROM x GROUP BY grp
SELECT s.id, s.vc FROM (SELECT id, vc FROM t1 WHERE vc IS NOT NULL) s WHERE s.vc LIKE '%a%' ORDER BY s.vc, s.id -- ordered
SELECT * FROM (SELECT id, b, ts FROM t1) s(x, y, z) WHERE y > 0 ORDER BY z, x -- ordered
SELECT q.v FROM (SELECT s.i AS v FROM (SELECT i FROM t1) s) q WHERE q.v IN (1, 2, 3, 42)
SELECT t2.id, s.tx FROM t2 JOIN (SELECT k, tx FROM t1) s ON s.k = t2.k ORDER BY t2.id, s.tx -- orderkey: 1
SELECT count(*) FROM (SELECT d FROM t1 WHERE d > '2015-01-01') s WHERE s.d < '2020-01-01'
SELECT s.un, s.ch, s.bin, s.flag, s.tz FROM (SELECT un, ch, bin, flag, tz FROM t1 ORDER BY id LIMIT 20) s
SELECT id FROM (SELECT id, tx FROM t1) s WHERE s.tx > 'hello world' ORDER BY id -- ordered
SELECT s.tx FROM (SELECT tx FROM t1) s ORDER BY s.tx LIMIT 5 -- ordered
WITH a AS (SELECT id, k FROM t1), b AS (SELECT a.id, t2.name FROM a JOIN t2 ON a.k = t2.k) SELECT * FROM b
SELECT id FROM t1 WHERE i IN (SELECT s.i FROM (SELECT i FROM t1 WHERE si > 0) s)
SELECT s.tx FROM (SELECT tx, count(*) FROM t1 GROUP BY tx) s
SELECT s.tx FROM (SELECT DISTINCT tx FROM t1) s
WITH x AS (SELECT tx FROM t1 UNION ALL SELECT name FROM t2) SELECT * FROM x
SELECT s.x FROM (SELECT upper(tx) AS x FROM t1) s
SELECT * FROM (SELECT si FROM t1) s, (SELECT si FROM t1) r WHERE s.si = r.si + 1 -- refuse: t1.si
SELECT tx, count(*) AS n FROM t1 GROUP BY tx ORDER BY n DESC, tx LIMIT 6 -- ordered
SELECT grp AS g, tx FROM t1 ORDER BY g, tx, id -- ordered
-- CASE WHEN conditions over encrypted columns (booleans computed on the server)
SELECT grp, sum(CASE WHEN i > 0 OR tx = 'alpha' THEN 1 ELSE 0 END), count(*) FROM t1 GROUP BY grp
SELECT id, CASE WHEN d IS NULL THEN 'none' WHEN d < '2015-01-01' THEN 'old' ELSE 'new' END FROM t1
SELECT sum(CASE WHEN si BETWEEN $1 AND $2 THEN 1 ELSE 0 END) FROM t1 -- params: -100, 100
SELECT id FROM t1 WHERE CASE WHEN n > 0 THEN true ELSE false END
SELECT CASE si WHEN 1 THEN 'one' END FROM t1
SELECT CASE WHEN tx > 'b' THEN 1 END FROM t1
SELECT CASE WHEN id > 1 THEN i END FROM t1
-- Split execution: the server filters and joins, the proxy computes
-- what it cannot (aggregates of expressions, SUM without an Add onion,
-- ORDER BY on aggregates, LIKE with GROUP BY).
SELECT grp, sum(n * 2), sum(i + si), avg(n - 1), count(*) FROM t1 GROUP BY grp ORDER BY grp -- error
SELECT grp, sum(n * 2), sum(n + si), avg(n - 1), count(*), sum(si * 2) FROM t1 GROUP BY grp ORDER BY grp -- ordered
SELECT sum(n * (1 - n)) FROM t1 WHERE i > 0
SELECT grp, sum(n) AS s FROM t1 GROUP BY grp ORDER BY s DESC, grp -- ordered
SELECT count(*) FROM t1 WHERE tx LIKE '%a%' GROUP BY grp
SELECT grp, max(n * i), min(si - 1) FROM t1 GROUP BY grp HAVING count(*) > 5
SELECT extract(year FROM d) AS y, count(*) FROM t1 WHERE d BETWEEN '1900-01-01' AND '2100-01-01' GROUP BY extract(year FROM d) ORDER BY 1 -- ordered
SELECT substring(tx FROM 1 FOR 2) AS p, count(*) FROM t1 GROUP BY 1 ORDER BY 1 -- ordered
SELECT sum(CASE WHEN tx LIKE 'a%' THEN n ELSE 0 END), sum(CASE WHEN vc = 'abc' THEN 1 ELSE 0 END) FROM t1
SELECT grp, sum(i) / count(*), count(DISTINCT si) FROM t1 GROUP BY grp ORDER BY grp -- ordered
SELECT t2.name, sum(t1.n * t2.amt) AS rev FROM t1 JOIN t2 ON t1.k = t2.k GROUP BY t2.name ORDER BY rev DESC, t2.name LIMIT 5 -- ordered
-- grouping on the one side of a join: its cells repeat on every joined
-- row and are decrypted once per group (rawGroups)
SELECT t2.name, t2.qty, count(*), sum(t1.i) FROM t1 JOIN t2 ON t1.k = t2.k GROUP BY t2.name, t2.qty
SELECT t2.name, count(*), max(t1.n) FROM t1 JOIN t2 ON t1.k = t2.k WHERE t1.tx LIKE '%a%' GROUP BY t2.name
SELECT t2.amt, sum(t2.amt), count(*) FROM t1 JOIN t2 ON t1.k = t2.k GROUP BY t2.amt
SELECT extract(year FROM t2.d) AS y, t2.name, count(*), sum(t1.b) FROM t1 JOIN t2 ON t1.k = t2.k GROUP BY 1, 2
SELECT t1.grp, t2.name, count(*) FROM t1 JOIN t2 ON t1.k = t2.k GROUP BY t1.grp, t2.name HAVING count(*) > 1
SELECT sum(qty), avg(k2) FROM t2
SELECT grp, sum(b) FROM t1 WHERE b BETWEEN -1000000 AND 1000000 GROUP BY grp ORDER BY 2, 1 -- ordered
SELECT sum(n) FROM t1 WHERE 1 = 0
SELECT grp, count(*) FROM t1 WHERE tx LIKE 'zzz%' GROUP BY grp -- empty
-- Split execution over a merged derived table (the shape of TPC-H 7-9)
SELECT y, sum(v) FROM (SELECT extract(year FROM d) AS y, n * 2 AS v FROM t1 WHERE d BETWEEN '1900-01-01' AND '2100-01-01') s GROUP BY y ORDER BY y -- ordered
SELECT g, sum(CASE WHEN w = 'alpha' THEN x ELSE 0 END) / sum(x) AS share FROM (SELECT grp AS g, tx AS w, n AS x FROM t1 WHERE n > 0) s GROUP BY g ORDER BY g -- ordered
SELECT s.g, count(*) FROM (SELECT grp AS g, vc FROM t1 WHERE vc LIKE '%a%') s GROUP BY s.g ORDER BY 1 -- ordered
SELECT a, sum(b) FROM (SELECT t2.name, t1.n FROM t1 JOIN t2 ON t1.k = t2.k) s(a, b) WHERE b > 0 GROUP BY a ORDER BY 2 DESC, 1 LIMIT 3 -- ordered
-- Constant arithmetic compared with encrypted columns is folded first
SELECT id FROM t1 WHERE i <= 1 + 10 AND i > -10 - 5
SELECT id FROM t1 WHERE n BETWEEN 0.06 - 0.01 AND 10 * 2.5
SELECT id FROM t1 WHERE si IN (1 + 1, 2 * 3, -(4), 10 / 3) -- empty
SELECT id FROM t1 WHERE i > 2147483647 + 1 -- error
SELECT id FROM t1 WHERE b < 9223372036854775807 - 1
SELECT id, n FROM t1 WHERE n < 7 / 2 AND n > 1 / 3.0
SELECT id FROM t1 WHERE i = 1 / 0 -- error
SELECT id FROM t1 WHERE si BETWEEN -(100 * 2) AND 50 + 50
-- A grouped derived table computed by the proxy first, then the query over
-- its rows (TPC-H 13's shape)
SELECT c, count(*) AS n FROM (SELECT k, count(*) AS c FROM t1 GROUP BY k) s GROUP BY c ORDER BY n DESC, c DESC -- ordered
SELECT cnt, count(*) FROM (SELECT grp, count(si) FROM t1 GROUP BY grp) AS g (grp, cnt) GROUP BY cnt ORDER BY 2 DESC, 1 DESC -- ordered
SELECT max(total), min(total), count(*) FROM (SELECT k, sum(n) AS total FROM t1 GROUP BY k) s
SELECT s.k, total FROM (SELECT k, sum(n * 2) AS total FROM t1 WHERE si > 0 GROUP BY k) s WHERE total > 10 ORDER BY s.k -- ordered
SELECT y, avg(m) FROM (SELECT grp, extract(year FROM d) AS y, max(n * i) AS m FROM t1 WHERE d IS NOT NULL GROUP BY grp, extract(year FROM d)) s GROUP BY y ORDER BY y LIMIT 4 -- ordered
SELECT c, count(*) FROM (SELECT k, count(*) AS c FROM t1 WHERE tx LIKE 'zzz%' GROUP BY k) s GROUP BY c -- empty
SELECT count(*) FROM (SELECT k, count(*) AS c FROM t1 WHERE tx LIKE 'zzz%' GROUP BY k) s
SELECT c FROM (SELECT k, sum(n) AS c FROM t1 GROUP BY k ORDER BY 2 DESC LIMIT 2) s ORDER BY c -- ordered
SELECT nosuch FROM (SELECT k, count(*) AS c FROM t1 GROUP BY k) s -- error
-- Tables joined with a grouped derived table, merged into one grouped
-- query (TPC-H 15's shape)
SELECT t2.id, t2.name, s.total FROM t2, (SELECT k, sum(n * 2) AS total FROM t1 GROUP BY k) s WHERE t2.k = s.k AND s.total > 10 ORDER BY t2.id -- ordered
SELECT id, c, kk FROM t2, (SELECT k AS kk, count(*) AS c FROM t1 WHERE si > 0 GROUP BY kk) s WHERE t2.k = kk
SELECT t2.id, s.c FROM t2, (SELECT k, count(*) AS c FROM t1 GROUP BY 1 HAVING count(*) > 1) AS s WHERE t2.k = s.k AND t2.qty > 0 AND s.k < 5 ORDER BY s.c DESC, t2.id -- ordered
SELECT t2.id, t3.label, s.m FROM t2, t3, (SELECT k, max(n * i) AS m, min(d) AS first FROM t1 GROUP BY k) s WHERE t2.code = t3.code AND t2.k = s.k AND s.first < t2.d ORDER BY t2.id, t3.label -- ordered
SELECT t3.id, s.grp, s.c FROM t3, (SELECT grp, count(*) AS c FROM t1 GROUP BY grp) s WHERE t3.rank > 2 AND s.c > t3.rank
SELECT t2.name, total FROM t2, (SELECT k, sum(amt) AS total FROM t2 GROUP BY k) AS s (kk, total) WHERE t2.k = kk ORDER BY total DESC, t2.name LIMIT 3
SELECT t2.id FROM t2, (SELECT k, count(*) AS c FROM t1 WHERE tx LIKE 'zzz%' GROUP BY k) s WHERE t2.k = s.k -- empty
SELECT id FROM t2, (SELECT k, count(*) AS c FROM t1 GROUP BY k) s WHERE t2.k = s.k AND s.nosuch > 1 -- error
SELECT k FROM t2, (SELECT k, count(*) AS c FROM t1 GROUP BY k) s WHERE t2.k = s.k -- error
SELECT t2.id, s.c FROM t2, (SELECT k, count(*) AS c FROM t1 GROUP BY k) s WHERE t2.k = s.k AND s.c > 1 AND t2.name NOT LIKE '%a%' ORDER BY t2.id LIMIT 5 OFFSET 1 -- ordered
SELECT t2.id, s.c FROM t2 JOIN (SELECT k, count(*) AS c FROM t1 GROUP BY k) s ON t2.k = s.k
SELECT t2.id, t3.label, s.c FROM t2 INNER JOIN t3 ON t2.code = t3.code JOIN (SELECT k, count(*) AS c FROM t1 GROUP BY k) s ON t2.k = s.k AND s.c > 1 WHERE t3.rank > 0
SELECT t2.id, s.c FROM t2 LEFT JOIN (SELECT k, count(*) AS c FROM t1 GROUP BY k) s ON t2.k = s.k -- refuse: t1.k
WITH r AS (SELECT k AS kk, sum(n * 2) AS total FROM t1 WHERE si > 0 GROUP BY kk) SELECT t2.id, t2.name, total FROM t2, r WHERE t2.k = kk AND total = (SELECT max(total) FROM r) ORDER BY t2.id -- ordered
-- LEFT JOIN ... ON conditions the server cannot evaluate, checked by the
-- proxy in grouped queries (TPC-H 13's shape)
SELECT t1.id, count(t2.id) FROM t1 LEFT JOIN t2 ON t1.k = t2.k AND t2.name NOT LIKE '%a%' GROUP BY t1.id ORDER BY t1.id -- ordered
SELECT c, count(*) AS n FROM (SELECT t1.id, count(t2.id) FROM t1 LEFT JOIN t2 ON t1.k = t2.k AND t2.name NOT LIKE '%e%' GROUP BY t1.id) AS s (id, c) GROUP BY c ORDER BY n DESC, c DESC -- ordered
SELECT t1.grp, sum(t2.amt * 2), max(t2.qty), count(DISTINCT t2.name) FROM t1 LEFT OUTER JOIN t2 ON t1.k = t2.k AND t2.name LIKE 'b%' AND t2.amt > 0 GROUP BY t1.grp ORDER BY 1 -- ordered
SELECT t1.grp, count(t2.id) FROM t1 LEFT JOIN t2 ON t1.k = t2.k AND upper(t2.name) NOT LIKE 'ZZZ%' GROUP BY t1.grp
SELECT t1.id, count(*) FROM t1 LEFT JOIN t2 ON t1.k = t2.k AND t2.name NOT LIKE '%a%' GROUP BY t1.id -- refuse: t2.name
SELECT t1.id, sum(t1.n) FROM t1 LEFT JOIN t2 ON t1.k = t2.k AND t2.name NOT LIKE '%a%' GROUP BY t1.id -- refuse: t2.name
SELECT t1.id, count(t2.id) FROM t1 LEFT JOIN t2 ON t1.k = t2.k AND t2.name NOT LIKE '%a%' WHERE t2.qty > 0 GROUP BY t1.id -- refuse: t2.name
SELECT t2.name, count(t2.id) FROM t1 LEFT JOIN t2 ON t1.k = t2.k AND t2.name NOT LIKE '%a%' GROUP BY t2.name -- refuse: t2.name
SELECT t1.id, t2.id FROM t1 LEFT JOIN t2 ON t1.k = t2.k AND t2.name NOT LIKE '%a%' -- refuse: t2.name
-- LIKE with ESCAPE and trailing escapes, in every path: the server's
-- prefilter, the proxy's check of a WHERE condition, split execution
SELECT id FROM t4 WHERE name LIKE 'a#%' ESCAPE '#'
SELECT id FROM t4 WHERE name LIKE 'a#%' ESCAPE '#'::text OR id = 3
SELECT id FROM t4 WHERE name LIKE 'a#%' ESCAPE '#' OR id = 3
SELECT id FROM t4 WHERE name NOT LIKE 'a#%' ESCAPE '#' OR id = 1
SELECT id FROM t4 WHERE name ILIKE 'a#%' ESCAPE '#' OR id = 3
SELECT id FROM t4 WHERE name LIKE 'a%\' OR id = 3 -- error
SELECT id FROM t4 WHERE name LIKE 'a%\' -- error
SELECT id FROM t4 WHERE name LIKE 'a\\' OR id = 3
SELECT id FROM t4 WHERE name LIKE 'a%' ESCAPE '' OR id = 3
SELECT id FROM t4 WHERE name LIKE 'a%' ESCAPE 'ab' OR id = 3 -- error
SELECT name, count(*) FROM t4 WHERE name LIKE 'a#%' ESCAPE '#' OR id > 4 GROUP BY name
SELECT count(*) FILTER (WHERE name LIKE 'a#%' ESCAPE '#'), count(*) FILTER (WHERE name ILIKE 'A%') FROM t4
SELECT id, name LIKE 'a#%' ESCAPE '#' FROM t4
-- Split execution over timestamptz (a failure there used to end the session)
SELECT tz, sum(n * 2) FROM t1 GROUP BY tz ORDER BY tz -- ordered
SELECT max(tz), sum(si * 2) FROM t1 GROUP BY grp ORDER BY grp -- ordered
SELECT max(ts), min(tz), count(*) FROM t1 WHERE ts IS NOT NULL GROUP BY grp ORDER BY grp -- ordered
SELECT grp, max(tz) FROM t1 GROUP BY grp HAVING max(tz) > '2015-01-01 00:00:00+00' ORDER BY grp -- ordered
-- Found by TestGeneratedDifferential (issue 24's classes)
WITH c AS (SELECT 'alpha' AS v) SELECT t1.id FROM t1, c WHERE t1.tx = c.v -- refuse: t1
SELECT t1.id FROM t1, LATERAL (SELECT 'alpha' AS v) c WHERE t1.eq_t = c.v -- refuse: t1
SELECT id FROM t1, (VALUES ('alpha'), ('beta')) v(x) WHERE t1.tx = v.x -- refuse: t1
SELECT id FROM t1 WHERE tx IN (SELECT 'alpha') -- refuse: t1
SELECT id FROM t1 WHERE d >= DATE '2003-01-01' + 2::bigint -- error
SELECT id FROM t1 WHERE (true OR (b < '-238382411357222' + 4 AND eq_i IS NOT NULL)) -- error
SELECT id FROM t1 WHERE (eq_t LIKE '%''Bri%' OR tx = 'abc O''Brien'::varchar(5)) -- empty
SELECT id FROM t1 WHERE tx = 'alpha beta'::varchar(5) OR id = 3
SELECT id FROM t1 WHERE k >= $1::int8 -- params: 5000000000; empty
SELECT id FROM t1 WHERE k < $1::int8 -- params: 5000000000
SELECT id FROM t1 WHERE i <> $1::int8 -- params: -3000000000
SELECT id FROM t1 WHERE eq_i = $1::int8 -- params: 5000000000; empty
SELECT grp, sum(CASE WHEN false THEN 1/0 ELSE i END) FROM t1 GROUP BY grp
SELECT grp, sum(i) FROM t1 WHERE 1/0 = 1 OR true GROUP BY grp -- error
-- inner join conditions the proxy checks (moved to WHERE)
SELECT t3.id FROM t3 INNER JOIN t1 ON (t3.id = (t1.i)::integer AND (t1.grp = 'a')) WHERE t1.id < 200 ORDER BY t3.id -- ordered
SELECT t3.id, t1.id FROM t3 JOIN t1 ON t3.id = t1.id AND length(t1.tx) > 3 JOIN t2 ON t2.id = t1.id ORDER BY t3.id -- ordered
-- ORDER BY in a subquery whose order cannot matter (Django's default ordering)
SELECT id FROM t1 WHERE ((SELECT x.ts FROM t1 x WHERE x.id = t1.id ORDER BY x.tx) - t1.ts) = '0:00:00'::interval ORDER BY id -- error
SELECT id FROM t1 WHERE ((SELECT x.ts FROM t1 x WHERE x.id = t1.id AND x.ts > '1900-01-01' AND x.ts < '2100-01-01' ORDER BY x.tx) - t1.ts) = '0:00:00'::interval ORDER BY id -- ordered
SELECT id FROM t1 WHERE id IN (SELECT x.id FROM t1 x WHERE x.i > 3 ORDER BY x.tx DESC) ORDER BY id -- ordered
SELECT id, ARRAY(SELECT x.id FROM t1 x WHERE x.grp = t1.grp AND x.id < 20 ORDER BY x.tx, x.id) FROM t1 WHERE id < 10 ORDER BY id -- ordered; refuse: t1.tx
-- subqueries evaluated first whose values the proxy computed: compared by the proxy
SELECT id, tx FROM t1 WHERE id IN (SELECT x.id FROM t1 x WHERE (x.i) % 3 = $1) ORDER BY tx, id -- ordered; params: 1
SELECT id FROM t1 WHERE grp = (SELECT x.grp FROM t1 x WHERE x.i % 7 = $1 AND x.grp IS NOT NULL ORDER BY x.id LIMIT 1) ORDER BY id -- ordered; params: 2
-- ANY and ALL of arrays in what the proxy computes
SELECT id FROM t1 WHERE length(tx) = ANY (ARRAY[3, 5]) ORDER BY id -- ordered
SELECT id FROM t1 WHERE upper(tx) <> ALL (ARRAY['ALPHA', NULL]) ORDER BY id -- empty
SELECT id FROM t1 WHERE i % 5 < ANY ('{1,NULL}'::int[]) ORDER BY id -- ordered
SELECT id, i % 3 >= ALL ('{}'::int[]), n + 1 = ANY ('{2.5,11.05}') FROM t1 ORDER BY id -- ordered
SELECT id FROM t1 WHERE i % 1000 = ANY ($1::int[]) ORDER BY id -- ordered; params: '{42,7,0}'
-- conditions over encrypted columns in the select list (the server evaluates them as in WHERE)
SELECT id, i < 100, tx = 'alpha', d IS NULL, si > 5 AND b < 0, NOT (n >= 2) FROM t1 ORDER BY id -- ordered
SELECT id, i < 100 AS small, tx < 'b' FROM t1 WHERE id < 50 ORDER BY id -- ordered
SELECT id, (SELECT x.i < 2000 AS lesser FROM t1 x WHERE x.id = t1.id) FROM t1 WHERE (SELECT x.i < 2000 AS lesser FROM t1 x WHERE x.id = t1.id) = (t1.i < 1900) ORDER BY id -- ordered
-- constants PostgreSQL's planner folds away unread
SELECT id FROM t1 WHERE (true OR eq_i >= 9223372036854775807 + 1) ORDER BY id -- ordered
SELECT id FROM t1 WHERE false AND i > 2147483647 + 1 -- empty
SELECT id FROM t1 WHERE i > 2147483647 + 1 OR true -- error
SELECT id, upper(tx) FROM t1 WHERE (true OR i >= 2147483647 + 1) AND id < 5 ORDER BY id -- ordered
-- SELECT DISTINCT over window functions (computed first)
SELECT DISTINCT lead(i, 1, 0) OVER (PARTITION BY grp ORDER BY grp) IS NULL FROM t1
SELECT DISTINCT grp, nth_value(si, 2) OVER (PARTITION BY grp ORDER BY si, id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM t1 ORDER BY grp -- ordered
SELECT DISTINCT flag, count(*) OVER (PARTITION BY flag) FROM t1 ORDER BY 2 DESC, 1 -- ordered
-- window functions over groups
SELECT grp, sum(i), rank() OVER (ORDER BY sum(i) DESC NULLS LAST) FROM t1 GROUP BY grp ORDER BY grp -- ordered
SELECT grp, flag, count(*), max(count(*)) OVER (PARTITION BY grp), sum(min(n)) OVER (ORDER BY grp, flag ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t1 GROUP BY grp, flag HAVING count(*) > 1 ORDER BY grp, flag -- ordered
SELECT extract(year FROM d) AS y, count(*), lag(count(*)) OVER (ORDER BY extract(year FROM d) NULLS FIRST) FROM t1 GROUP BY 1 ORDER BY 1 NULLS FIRST -- ordered
SELECT grp, rank() OVER (ORDER BY i) FROM t1 GROUP BY grp -- error
SELECT id, d, extract(year FROM d), extract(doy FROM d), extract(week FROM d), extract(century FROM d), extract(epoch FROM d) FROM t1 WHERE d > '9999-12-31' OR d < '0001-01-01' ORDER BY id -- ordered
SELECT id, date_part('month', d) FROM t1 WHERE d > '9999-12-31' -- error
SELECT id, date_part('year', d) FROM t1 WHERE d < '0001-01-01' OR d = 'infinity' ORDER BY id -- ordered

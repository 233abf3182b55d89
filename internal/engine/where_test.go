package engine_test

import (
	"testing"
)

// TestWhereExpressions: WHERE conditions over expressions of encrypted
// columns the server cannot evaluate are computed by the proxy, in both
// protocols: a LIKE whose pattern is computed (Django's icontains writes
// UPPER(col::text) LIKE UPPER(%s)), extract, casts, arithmetic.
func TestWhereExpressions(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE wx (id int PRIMARY KEY, name text, d date, n int)`)
	d.both(`INSERT INTO wx VALUES (1, 'abc', '2020-01-02', 5), (2, 'xAbz', '2021-03-04', 7), (3, NULL, NULL, NULL)`)
	d.compare([]string{
		"SELECT id, name FROM wx WHERE UPPER(name::text) LIKE UPPER('%ab%') ORDER BY id",
		"SELECT id FROM wx WHERE EXTRACT(YEAR FROM d) = 2020 ORDER BY id",
		"SELECT id, name FROM wx WHERE name::text LIKE 'a%' ORDER BY id",
		"SELECT wx.id, wx.name FROM wx WHERE (wx.n + 1) > 6 ORDER BY wx.id",
		"SELECT id FROM wx WHERE name LIKE $1 ORDER BY id",
		"SELECT id FROM wx WHERE UPPER(name) = 'ABC'",
		"SELECT id FROM wx WHERE UPPER(name::text) LIKE UPPER($1) ORDER BY id",
	}, nil, "%b%")
}

// TestDateTimestampComparisons: a date compared with a timestamp or a
// timestamptz in an expression the proxy computes is that day's midnight
// (in the session's time zone for timestamptz: UTC here).
func TestDateTimestampComparisons(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE dts (id int PRIMARY KEY, d date, ts timestamp, tz timestamptz)`)
	d.both(`INSERT INTO dts VALUES (1, '2020-01-02', '2020-01-02 00:00', '2020-01-02 00:00+00'), (2, '2020-01-02', '2020-01-01 23:59', '2020-01-01 23:59+00'),
		(3, 'infinity', 'infinity', '-infinity'), (4, NULL, '2020-01-03', '2020-01-03 00:00+00'), (5, '1999-12-31', '1999-12-31 00:00:01', '1999-12-31 00:00+00')`)
	d.compare([]string{
		"SELECT id, d < ts, d = ts, d >= tz, tz > d, d = tz FROM dts ORDER BY id",
		"SELECT id FROM dts WHERE d + 0 < ts + interval '1 second' ORDER BY id",
		"SELECT id FROM dts WHERE d IN (ts, tz) ORDER BY id",
		"SELECT id FROM dts WHERE (d + 1) > '2020-01-02 12:00'::timestamp ORDER BY id",
		"SELECT id, coalesce(tz, ts), coalesce(d, ts), greatest(d, ts, tz), least(ts, d) FROM dts ORDER BY id",
		"SELECT id, CASE WHEN id > 2 THEN d ELSE ts END, CASE WHEN id = 1 THEN tz ELSE d END FROM dts ORDER BY id",
	}, nil)
}

// TestBooleanTests: IS [NOT] TRUE, FALSE and UNKNOWN over expressions of
// encrypted columns, computed by the proxy.
func TestBooleanTests(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE bt (id int PRIMARY KEY, b boolean, n int)`)
	d.both(`INSERT INTO bt VALUES (1, true, 1), (2, false, 2), (3, NULL, NULL), (4, true, 5)`)
	d.compare([]string{
		"SELECT id, (n > 1) IS TRUE, (n > 1) IS NOT TRUE, (n > 1) IS FALSE, (n > 1) IS NOT FALSE, (n > 1) IS UNKNOWN, (n > 1) IS NOT UNKNOWN FROM bt ORDER BY id",
		"SELECT id FROM bt WHERE (b AND n < 3) IS NOT TRUE ORDER BY id",
		"SELECT count(*) FILTER (WHERE (n = 2) IS FALSE) FROM bt",
	}, nil)
}

package engine_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
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

// TestCrossKeyInTransaction: comparing columns under different keys
// inside a transaction block, where the proxy does not re-key them into a
// join group, is computed by the proxy (split execution).
func TestCrossKeyInTransaction(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE ck (id int PRIMARY KEY, a int, b int, s text)`)
	d.both(`CREATE TABLE ck2 (id int PRIMARY KEY, c int, s text)`)
	d.both(`INSERT INTO ck VALUES (1, 1, 2, 'x'), (2, 5, 3, 'y'), (3, NULL, 1, 'z'), (4, 7, 7, NULL)`)
	d.both(`INSERT INTO ck2 VALUES (1, 1, 'x'), (2, 3, 'q'), (3, 7, 'z')`)
	for _, q := range []string{
		"SELECT id FROM ck WHERE a > b ORDER BY id",
		"SELECT id FROM ck WHERE a = b OR a IS NULL ORDER BY id",
		"SELECT ck.id, ck2.id FROM ck, ck2 WHERE ck.s = ck2.s ORDER BY 1",
	} {
		for _, conn := range []*pgx.Conn{d.c, d.plain} {
			mustExec(t, conn, "BEGIN")
		}
		got, gerr := rowsText(d.c, q)
		want, werr := rowsText(d.plain, q)
		for _, conn := range []*pgx.Conn{d.c, d.plain} {
			mustExec(t, conn, "ROLLBACK")
		}
		if gerr != nil || werr != nil || got != want {
			t.Errorf("%s in a transaction: through the proxy %v\n%s\nplaintext %v\n%s", q, gerr, got, werr, want)
		}
	}
}

// TestRegexMatch: ~ and !~ over encrypted text, computed by the proxy
// (Django's regex lookup writes "col"::text ~ %s).
func TestRegexMatch(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE rx (id int PRIMARY KEY, name text)`)
	d.both(`INSERT INTO rx VALUES (1, 'abc'), (2, 'ABC'), (3, NULL), (4, 'a1b2'), (5, 'x.y'), (6, '')`)
	d.compare([]string{
		`SELECT id FROM rx WHERE name ~ '^a' ORDER BY id`,
		`SELECT id FROM rx WHERE name::text ~ '\d' ORDER BY id`,
		`SELECT id FROM rx WHERE name !~ '[[:upper:]]' ORDER BY id`,
		`SELECT id, name ~ '^$', name ~ 'x\.y' FROM rx ORDER BY id`,
		`SELECT id FROM rx WHERE "name"::text ~ $1 ORDER BY id`,
	}, []string{
		`SELECT id FROM rx WHERE name ~* 'abc' ORDER BY id`,
		`SELECT id FROM rx WHERE name ~ '(a)\1' ORDER BY id`,
	}, "^(a|x)")
}

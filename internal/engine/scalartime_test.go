package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestScalarTimeFunctions is the differential test of the date and time
// functions the proxy computes (extract, date_part, date_trunc, AT TIME
// ZONE) over encrypted date, timestamp and timestamptz columns, with a
// session time zone that has daylight saving time: rows around its
// transitions, before the Gregorian reform, BC, the infinities.
func TestScalarTimeFunctions(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE tf (id int PRIMARY KEY, d date, ts timestamp, tz timestamptz)`)
	d.timeZone("America/Chicago")
	rows := []string{
		`1, '2020-02-29', '2020-02-29 23:59:59.999999', '2020-02-29 23:59:59.999999+00'`,
		`2, '2021-03-14', '2021-03-14 01:30:00', '2021-03-14 07:30:00+00'`,   // before the spring-forward in Chicago
		`3, '2021-03-15', '2021-03-14 03:30:00', '2021-03-14 08:30:00+00'`,   // after it
		`4, '2021-11-07', '2021-11-07 01:30:00', '2021-11-07 06:30:00+00'`,   // in the fall-back overlap (first)
		`5, '2021-11-08', '2021-11-07 01:30:00.5', '2021-11-07 07:30:00+00'`, // (second)
		`6, '1999-12-31', '1999-12-31 12:00:00', '2000-01-01 05:59:59+00'`,
		`7, '0044-03-15 BC', '0044-03-15 12:00:00 BC', '0001-01-01 00:00:00+00 BC'`,
		`8, 'infinity', 'infinity', '-infinity'`,
		`9, NULL, NULL, NULL`,
		`10, '1582-10-04', '1900-01-01 00:00:00', '1970-01-01 00:00:00+00'`,
		`11, '2024-12-30', '2024-12-30 10:11:12.345678', '2027-01-01 00:00:00+00'`,
	}
	for _, r := range rows {
		d.both("INSERT INTO tf VALUES (" + r + ")")
	}
	var queries []string
	fields := []string{"year", "month", "day", "quarter", "week", "isoyear", "dow", "isodow", "doy", "decade", "century", "millennium", "epoch"}
	timeFields := []string{"hour", "minute", "second", "milliseconds", "microseconds"}
	for _, col := range []string{"d", "ts", "tz"} {
		fs := fields
		if col != "d" {
			fs = append(append([]string{}, fields...), timeFields...)
		}
		for _, f := range fs {
			queries = append(queries,
				fmt.Sprintf("SELECT id, extract(%s from %s)::text FROM tf ORDER BY id", f, col),
				fmt.Sprintf("SELECT id, date_part('%s', %s)::text FROM tf ORDER BY id", f, col))
		}
	}
	queries = append(queries, "SELECT id, extract(timezone from tz), extract(timezone_hour from tz), extract(timezone_minute from tz) FROM tf ORDER BY id")
	for _, col := range []string{"ts", "tz"} {
		for _, f := range []string{"microseconds", "milliseconds", "second", "minute", "hour", "day", "week", "month", "quarter", "year"} {
			queries = append(queries, fmt.Sprintf("SELECT id, date_trunc('%s', %s)::text FROM tf ORDER BY id", f, col))
		}
		for _, z := range []string{"UTC", "Europe/Paris", "Asia/Kolkata", "America/Chicago", "Asia/Ust-Nera", "America/Port-au-Prince", "Etc/GMT+10",
			"+10:00", "-05:30", "UTC-05:00", "UTC+3", "<+0330>-03:30", "7", "EST5", "+167:59:59"} {
			queries = append(queries, fmt.Sprintf("SELECT id, (%s AT TIME ZONE '%s')::text FROM tf ORDER BY id", col, z))
		}
	}
	for _, f := range []string{"day", "week", "month", "quarter", "year"} {
		queries = append(queries, fmt.Sprintf("SELECT id, date_trunc('%s', d)::text FROM tf ORDER BY id", f))
	}
	for _, c := range []string{"d::timestamp", "d::timestamptz", "ts::date", "tz::date", "tz::timestamp", "ts::timestamptz", "ts::time", "tz::time",
		"extract(hour from ts::time)", "date_part('second', tz::time)", "extract(epoch from ts::time)", "extract(milliseconds from tz::time)", "extract(microseconds from ts::time)", "extract(minute from tz::time)"} {
		queries = append(queries, fmt.Sprintf("SELECT id, (%s)::text FROM tf ORDER BY id", c))
	}
	queries = append(queries,
		"SELECT id, extract(hour from tz AT TIME ZONE 'Europe/Paris') FROM tf ORDER BY id",
		"SELECT id FROM tf WHERE extract(year from ts) = 2021 ORDER BY id",
		"SELECT id, ts < tz, tz >= ts, d::timestamp = tz FROM tf ORDER BY id",
		"SELECT date_trunc('month', tz)::text, count(*) FROM tf GROUP BY 1 ORDER BY 1",
		"SELECT id FROM tf WHERE date_trunc('day', tz) = '2021-11-07 00:00:00-05' ORDER BY id",
	)
	d.compare(queries, []string{
		"SELECT ts AT TIME ZONE 'EST5EDT,M3.2.0,M11.1.0' FROM tf", // a POSIX rule: refused
		"SELECT ts AT TIME ZONE 'PST' FROM tf",                    // an abbreviation: refused
	})
	d.compare([]string{"SELECT ts AT TIME ZONE '+168:00' FROM tf"}, nil) // out of range: 22023 both ways
}

// TestScalarIntervalArithmetic is the differential test of date, time
// and interval arithmetic: months and days added in the session's time
// zone across its DST transitions, month ends, leap days, BC, the
// infinities, interval multiplication's cascades, and the range errors.
func TestScalarIntervalArithmetic(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE ia (id int PRIMARY KEY, d date, ts timestamp, tz timestamptz, t time, iv interval, n int, f float8, m numeric)`)
	d.timeZone("America/Chicago")
	rows := []string{
		`1, '2021-01-31', '2021-01-31 10:00:00', '2021-01-31 10:00:00-06', '10:00:00', '1 mon', 2, 0.5, 1.5`,
		`2, '2020-02-29', '2020-02-29 23:59:59.999999', '2021-03-13 02:30:00-06', '23:59:59.999999', '1 day', -3, 1.3333333, 0.1`,
		`3, '2021-03-14', '2021-03-14 01:30:00', '2021-03-14 01:30:00-06', '00:00:00', '-1 mon +2 days -03:00:00', 0, -2.5, 0`,
		`4, '2021-11-06', '2021-11-07 01:30:00', '2021-11-06 01:30:00-05', '12:34:56.789', '2 years 3 mons 4 days 05:06:07.891011', 7, 1e-7, 3.75`,
		`5, '0044-03-15 BC', '0044-02-28 12:00:00 BC', '0001-01-31 00:00:00+00 BC', '06:00:00', '24:00:00', 1, 100, -1`,
		`6, 'infinity', 'infinity', '-infinity', '18:00:00', '-00:00:00.000001', 12, 1e300, 2`,
		`7, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL`,
		`8, '1999-12-31', '1999-12-31 12:00:00', '2000-01-01 05:59:59+00', '01:02:03', '1 mon 15 days 12:00:00', 3, 0.1, 0.333`,
		`9, '2024-05-31', '2024-05-31 00:00:00', '2024-03-10 12:00:00-05', '00:00:00.000001', '-2 mons', -1, -0.0, -0.5`,
	}
	for _, r := range rows {
		d.both("INSERT INTO ia VALUES (" + r + ")")
	}
	var queries []string
	for _, e := range []string{
		"ts + iv", "ts - iv", "iv + ts", "tz + iv", "tz - iv", "iv + tz", "d + iv", "d - iv", "iv + d",
		"ts - '2000-01-01'::timestamp", "tz - '2021-03-14 00:00:00-06'::timestamptz", "ts - ts", "(ts + iv) - ts", "tz - tz",
		"t + iv", "t - iv", "iv + t", "t - '12:00'::time", "t - t",
		"iv + iv", "iv - interval '1 day 01:00'", "iv * n", "iv * f", "iv * m", "n * iv", "f * iv", "iv / f", "iv / m", "iv * 0.5",
		"tz + interval '1 mon'", "tz + interval '1 day'", "tz - interval '24 hours'", "d + interval '1 year'", "ts + interval '-1 mon -1 day'",
		"date_trunc('hour', t)", "date_trunc('minute', t)::time", "date_trunc('second', t)", "date_trunc('milliseconds', iv)",
		"date_trunc('month', iv)", "date_trunc('year', iv * 7)", "date_trunc('day', iv)", "date_trunc('quarter', iv * 2)", "date_trunc('century', iv * 700)",
		"t::interval", "iv::time", "(t - iv)::interval",
	} {
		queries = append(queries, fmt.Sprintf("SELECT id, (%s)::text FROM ia ORDER BY id", e))
	}
	queries = append(queries,
		"SELECT id FROM ia WHERE tz + iv > '2021-03-14 12:00:00-05' ORDER BY id",
		"SELECT id, ts + interval '1 day' FROM ia WHERE tz < now() - interval '1000 years' ORDER BY id",
		"SELECT id, (ts + interval '300000 years')::text FROM ia WHERE id = 1",
		"SELECT id, (iv / n)::text FROM ia WHERE id = 3",
		"SELECT id, (iv * 1e10)::text FROM ia WHERE id = 4",
		"SELECT id, (ts - '294000-01-01'::timestamp)::text FROM ia WHERE id = 5",
		"SELECT id, date_trunc('week', iv)::text FROM ia WHERE id = 1",
	)
	d.compare(queries, nil)
}

// timeZone sets the TimeZone of both databases (for the connections
// compare opens) and of d's sessions.
func (d *typeDiff) timeZone(zone string) {
	d.t.Helper()
	for _, c := range []*pgx.Conn{d.c, d.plain} {
		var db string
		if err := c.QueryRow(context.Background(), "SELECT current_database()").Scan(&db); err != nil {
			d.t.Fatal(err)
		}
		mustExec(d.t, c, fmt.Sprintf(`ALTER DATABASE %q SET timezone TO '%s'`, db, zone))
		mustExec(d.t, c, fmt.Sprintf(`SET timezone TO '%s'`, zone))
	}
}

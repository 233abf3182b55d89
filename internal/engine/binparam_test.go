package engine_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestBinaryParamConversions: binary parameters of another type than
// their encrypted column's, as drivers send them (psycopg: a naive
// datetime as timestamp for a timestamptz column), are assigned as the
// server assigns them: through the session's TimeZone between timestamp
// and timestamptz, a date as midnight, an integer into a numeric.
func TestBinaryParamConversions(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, rekeyPolicy)
	conn := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	direct := db.direct(t)
	ddl := "CREATE TABLE %s (id int, tz timestamptz, ts timestamp, n numeric(10,2))"
	mustExec(t, conn, fmt.Sprintf(ddl, "bp"))
	mustExec(t, direct, fmt.Sprintf(ddl, "bp_plain"))
	for _, c := range []*pgx.Conn{conn, direct} {
		mustExec(t, c, "SET TimeZone = 'America/New_York'")
	}
	ts := func(us int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(us)) }
	date := func(d int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(d)) }
	i4 := func(i int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(i)) }
	const (
		oidInt4 = 23
		oidDate = 1082
		oidTS   = 1114
		oidTSTZ = 1184
	)
	summer := int64(772_124_400_123_456) // June 2024, daylight saving time in New York
	winter := int64(-31_536_000_000_000) // January 1999, standard time
	rows := []struct {
		vals [][]byte
		oids []uint32
	}{
		{[][]byte{i4(1), ts(summer), ts(summer), i4(7)}, []uint32{oidInt4, oidTS, oidTSTZ, oidInt4}},
		{[][]byte{i4(2), ts(winter), ts(winter), i4(-3)}, []uint32{oidInt4, oidTS, oidTSTZ, oidInt4}},
		{[][]byte{i4(3), date(8937), date(-1), nil}, []uint32{oidInt4, oidDate, oidDate, oidInt4}},
		{[][]byte{i4(4), ts(math.MaxInt64), ts(math.MinInt64), nil}, []uint32{oidInt4, oidTS, oidTSTZ, oidInt4}},
	}
	for _, r := range rows {
		formats := []int16{1, 1, 1, 1}
		for table, c := range map[string]*pgx.Conn{"bp": conn, "bp_plain": direct} {
			res := c.PgConn().ExecParams(ctx, fmt.Sprintf("INSERT INTO %s VALUES ($1, $2, $3, $4)", table), r.vals, r.oids, formats, nil).Read()
			if res.Err != nil {
				t.Fatalf("%s: %v", table, res.Err)
			}
		}
	}
	q := "SELECT id, tz, ts, n FROM %s ORDER BY id"
	got, want := queryStrings(t, conn, fmt.Sprintf(q, "bp")), queryStrings(t, direct, fmt.Sprintf(q, "bp_plain"))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("through the proxy: %v\nplaintext: %v", got, want)
	}
	t.Logf("%v", got)
}

// TestFloatParamComparedWithInteger: a double precision (or real)
// parameter compared with an encrypted smallint or integer column, as
// Django's server-side binding sends `year > 1999.5`, selects the rows
// plaintext PostgreSQL selects, in binary and text format.
func TestFloatParamComparedWithInteger(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	conn := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	direct := db.direct(t)
	for table, c := range map[string]*pgx.Conn{"fp": conn, "fp_plain": direct} {
		mustExec(t, c, fmt.Sprintf("CREATE TABLE %s (id int, y smallint, n int)", table))
		mustExec(t, c, fmt.Sprintf("INSERT INTO %s SELECT g, 1995 + g %% 11, g * 1000 - 20000 FROM generate_series(1, 40) g", table))
		mustExec(t, c, fmt.Sprintf("INSERT INTO %s VALUES (41, NULL, NULL), (42, 32767, 2147483647), (43, -32768, -2147483648)", table))
	}
	const oidFloat4, oidFloat8 = 700, 701
	f8 := func(f float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)) }
	f4 := func(f float32) []byte { return binary.BigEndian.AppendUint32(nil, math.Float32bits(f)) }
	for _, v := range []float64{1999.5, 2000, 2000.0000001, 0, -0.5, 0.1, 1e10, -1e10, 32767.5, 2147483646.5, -2147483648.25} {
		for _, col := range []string{"y", "n"} {
			for _, op := range []string{"=", "<>", "<", "<=", ">", ">="} {
				for _, arg := range []struct {
					val    []byte
					oid    uint32
					format int16
				}{
					{f8(v), oidFloat8, 1},
					{f4(float32(v)), oidFloat4, 1},
					{[]byte(fmt.Sprint(v)), oidFloat8, 0},
				} {
					var got, want []string
					for table, c := range map[string]*pgx.Conn{"fp": conn, "fp_plain": direct} {
						q := fmt.Sprintf("SELECT id FROM %s WHERE %s %s $1 ORDER BY id", table, col, op)
						res := c.PgConn().ExecParams(ctx, q, [][]byte{arg.val}, []uint32{arg.oid}, []int16{arg.format}, nil).Read()
						if res.Err != nil {
							t.Fatalf("%s %s %v (oid %d, format %d): %v", col, op, v, arg.oid, arg.format, res.Err)
						}
						var ids []string
						for _, r := range res.Rows {
							ids = append(ids, string(r[0]))
						}
						if table == "fp" {
							got = ids
						} else {
							want = ids
						}
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s %s %v (oid %d, format %d): proxy %v, direct %v", col, op, v, arg.oid, arg.format, got, want)
					}
				}
			}
		}
	}
}

// TestBinaryParamAsText: Django's bulk_update with server-side binding
// sends each CASE branch's value as a binary parameter of the column's
// type (inet), which the proxy reads as text before the CAST: the rows
// end as plaintext PostgreSQL stores them.
func TestBinaryParamAsText(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	conn := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	direct := db.direct(t)
	const oidInt4, oidInet, oidFloat8 = 23, 869, 701
	i4 := func(i int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(i)) }
	v4 := []byte{2, 32, 0, 4, 1, 2, 3, 4}
	v6 := append([]byte{3, 128, 0, 16, 0x20, 0x01}, append(make([]byte, 13), 1)...)
	net := []byte{2, 24, 0, 4, 10, 0, 0, 0}
	f8 := binary.BigEndian.AppendUint64(nil, math.Float64bits(0.1))
	for table, c := range map[string]*pgx.Conn{"ba": conn, "ba_plain": direct} {
		mustExec(t, c, fmt.Sprintf("CREATE TABLE %s (id int PRIMARY KEY, ip inet, f float8)", table))
		mustExec(t, c, fmt.Sprintf("INSERT INTO %s VALUES (1, '0.0.0.0', 1), (2, '0.0.0.0', 2), (3, '0.0.0.0', 3)", table))
		q := fmt.Sprintf(`UPDATE %s SET ip = CAST(CASE WHEN (%[1]s.id = $1) THEN $2 WHEN (%[1]s.id = $3) THEN $4 WHEN (%[1]s.id = $5) THEN $6 ELSE NULL END AS inet),
			f = CAST(CASE WHEN (%[1]s.id = $1) THEN $7 ELSE NULL END AS double precision) WHERE %[1]s.id IN ($1, $3, $5)`, table)
		res := c.PgConn().ExecParams(ctx, q, [][]byte{i4(1), v4, i4(2), v6, i4(3), net, f8},
			[]uint32{oidInt4, oidInet, oidInt4, oidInet, oidInt4, oidInet, oidFloat8}, []int16{1, 1, 1, 1, 1, 1, 1}, nil).Read()
		if res.Err != nil {
			t.Fatalf("%s: %v", table, res.Err)
		}
	}
	q := "SELECT id, ip, f FROM %s ORDER BY id"
	got, want := queryStrings(t, conn, fmt.Sprintf(q, "ba")), queryStrings(t, direct, fmt.Sprintf(q, "ba_plain"))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("through the proxy: %v\nplaintext: %v", got, want)
	}
}

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

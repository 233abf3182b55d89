package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// allTypes is a table with a column of every type the proxy encrypts.
const allTypes = `(k int4, i2 smallint, i4 integer, i8 bigint, n numeric(12,2), nu numeric, t text, vc varchar(20), ch char(5),
	d date, ts timestamp, tz timestamptz, b boolean, by bytea)`

// edgeRows are the values of the round-trip tests, as the parameters of
// one INSERT: extremes, empty and long values, unicode, NULLs.
func edgeRows() [][]any {
	long := strings.Repeat("long text with unicode ✓ 日本語 ", 400)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	ts := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil {
			panic(err)
		}
		return v
	}
	return [][]any{
		{1, int16(-32768), int32(-2147483648), int64(-9223372036854775808), "-9999999999.99", "-0.000000000000000000001", "", "", "",
			ts("0001-01-01 00:00:00").Add(0), ts("0001-01-01 00:00:00"), ts("1970-01-01 00:00:00").UTC(), false, []byte{}},
		{2, int16(32767), int32(2147483647), int64(9223372036854775807), "9999999999.99", "123456789012345678901234567890.123456789", long, "héllo wörld ✓ 日本", "ab",
			ts("9999-12-31 00:00:00"), ts("9999-12-31 23:59:59.999999"), ts("2262-04-11 23:47:16.854775").UTC(), true, all},
		{3, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{4, int16(0), int32(0), int64(0), "0", "0", "a'b\"c\\d\te\nf", "x", "a    ", ts("2000-02-29 00:00:00"), ts("2000-02-29 12:34:56.789"),
			ts("2000-02-29 12:34:56.789").In(time.FixedZone("x", 5*3600+1800)), true, []byte{0}},
	}
}

const insertAll = "INSERT INTO %s (k, i2, i4, i8, n, nu, t, vc, ch, d, ts, tz, b, by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"

// TestRoundTripEveryType writes the edge values of every type through the
// proxy into an encrypted table and reads them back, in every pgx mode
// (simple and extended protocol, text and binary formats), and compares
// with the same statements on a plaintext table directly.
func TestRoundTripEveryType(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	direct := db.direct(t)
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			enc := p.connect(t, mode)
			name := "rt_" + strings.ReplaceAll(mode.String(), " ", "_")
			mustExec(t, enc, "CREATE TABLE "+name+" "+allTypes)
			mustExec(t, direct, "CREATE TABLE plain_"+name+" "+allTypes)
			for _, row := range edgeRows() {
				mustExec(t, enc, fmt.Sprintf(insertAll, name), row...)
				if _, err := direct.Exec(ctx, fmt.Sprintf(insertAll, "plain_"+name), append([]any{mode}, row...)...); err != nil {
					t.Fatal(err)
				}
			}
			// The server stores no plaintext column of that name.
			var n int
			if err := direct.QueryRow(ctx, "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 AND column_name = 't'", name).Scan(&n); err != nil || n != 0 {
				t.Fatalf("physical table has a plaintext column t (n=%d, err=%v)", n, err)
			}
			for _, q := range []string{"SELECT * FROM %s", "SELECT t, k AS key, by, tz, ch FROM %s WHERE true", "SELECT x.* FROM %s x"} {
				got := queryAll(t, enc, mode, fmt.Sprintf(q, name))
				want := queryAll(t, direct, mode, fmt.Sprintf(q, "plain_"+name))
				if len(got.rows) != len(edgeRows()) {
					t.Fatalf("%s: %d rows through the proxy, want %d", q, len(got.rows), len(edgeRows()))
				}
				if !reflect.DeepEqual(got.fields, want.fields) {
					t.Errorf("%s: fields\n got %v\nwant %v", q, got.fields, want.fields)
				}
				if !reflect.DeepEqual(got.rows, want.rows) {
					t.Errorf("%s: rows differ\n got %v\nwant %v", q, got.rows, want.rows)
				}
			}
		})
	}
}

// result is a query's field names and types, and its rows as sorted text.
type result struct {
	fields []string
	rows   []string
}

func queryAll(t testing.TB, conn *pgx.Conn, mode pgx.QueryExecMode, sql string) result {
	t.Helper()
	rows, err := conn.Query(context.Background(), sql, mode)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var r result
	for _, f := range rows.FieldDescriptions() {
		r.fields = append(r.fields, fmt.Sprintf("%s:%d:%d:%d", f.Name, f.DataTypeOID, f.TypeModifier, f.DataTypeSize))
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		r.rows = append(r.rows, fmt.Sprintf("%#v", vals))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	slices.Sort(r.rows)
	return r
}

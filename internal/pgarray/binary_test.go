package pgarray

import (
	"context"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestBinaryAgainstServer: arrays the server sends (array_send) decode to
// their elements, and arrays AppendBinary writes are read back by the
// server (array_recv) as the same values.
func TestBinaryAgainstServer(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, tc := range []struct {
		sql  string
		oid  uint32
		want [][]byte
		dims []int
	}{
		{`SELECT array_send('{}'::bytea[])`, 17, [][]byte{}, nil},
		{`SELECT array_send(ARRAY['\x0102'::bytea, NULL, ''])`, 17, [][]byte{{1, 2}, nil, {}}, []int{3}},
		{`SELECT array_send(ARRAY['a', 'it''s']::text[])`, 25, [][]byte{[]byte("a"), []byte("it's")}, []int{2}},
		{`SELECT array_send('[3:4]={7,8}'::int4[])`, 23, [][]byte{{0, 0, 0, 7}, {0, 0, 0, 8}}, []int{2}},
		{`SELECT array_send('{{1,2},{3,NULL}}'::int2[])`, 21, [][]byte{{0, 1}, {0, 2}, {0, 3}, nil}, []int{2, 2}},
	} {
		var raw []byte
		if err := conn.QueryRow(ctx, tc.sql).Scan(&raw); err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		oid, elems, dims, err := DecodeBinary(raw)
		if err != nil || oid != tc.oid || !reflect.DeepEqual(dims, tc.dims) || len(elems) != len(tc.want) {
			t.Fatalf("%s: %d %q %v %v, want %d %q %v", tc.sql, oid, elems, dims, err, tc.oid, tc.want, tc.dims)
		}
		for i := range elems {
			if (elems[i] == nil) != (tc.want[i] == nil) || string(elems[i]) != string(tc.want[i]) {
				t.Fatalf("%s: element %d is %q, want %q", tc.sql, i, elems[i], tc.want[i])
			}
		}
	}
	for _, elems := range [][][]byte{{}, {{1, 2, 3}}, {nil, {}, {0xff}}, {[]byte("x"), nil}} {
		arr := AppendBinary(nil, 17, elems)
		res := conn.PgConn().ExecParams(ctx, "SELECT $1::bytea[]::text", [][]byte{arr}, []uint32{1001}, []int16{1}, nil).Read()
		if res.Err != nil {
			t.Fatalf("%q: %v", elems, res.Err)
		}
		want := "{"
		for i, e := range elems {
			if i > 0 {
				want += ","
			}
			if e == nil {
				want += "NULL"
			} else {
				want += `"\\x` + hex.EncodeToString(e) + `"`
			}
		}
		want += "}"
		if got := string(res.Rows[0][0]); got != want {
			t.Errorf("%q: the server read %s, want %s", elems, got, want)
		}
	}
}

func TestDecodeBinaryRefuses(t *testing.T) {
	good := AppendBinary(nil, 25, [][]byte{[]byte("ab"), nil})
	for name, b := range map[string][]byte{
		"empty":     nil,
		"short":     good[:10],
		"truncated": good[:len(good)-1],
		"trailing":  append(append([]byte{}, good...), 0),
		"7 dims":    {0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 25},
		"huge":      {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 25, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1},
	} {
		var pe *pgconn.PgError
		if _, _, _, err := DecodeBinary(b); !errors.As(err, &pe) || pe.Code != "22P03" {
			t.Errorf("%s: %v, want 22P03", name, err)
		}
	}
}

func FuzzDecodeBinary(f *testing.F) {
	f.Add(AppendBinary(nil, 25, [][]byte{[]byte("ab"), nil, {}}))
	f.Add(AppendBinary(nil, 17, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		oid, elems, dims, err := DecodeBinary(b)
		if err != nil || len(dims) > 1 {
			return
		}
		// What decodes re-encodes to the same bytes (lower bound 1).
		if len(dims) == 1 && len(elems) > 0 && string(b[16:20]) != "\x00\x00\x00\x01" {
			return
		}
		if len(elems) == 0 && len(dims) == 1 {
			return // a 1-D array of 0 elements re-encodes as 0-D
		}
		if again := AppendBinary(nil, oid, elems); string(again) != string(b) && b[7] == again[7] {
			t.Fatalf("%x re-encodes as %x", b, again)
		}
	})
}

package pgcopy

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/pgtest"
)

func TestWriter(t *testing.T) {
	var w Writer
	w.Reset([]byte("prefix|"))
	w.Field([]byte("a\tb\nc\rd\\e\x01"))
	w.Field(nil)
	w.Field([]byte{})
	w.Null()
	w.Bytea([]byte{0, 0xab})
	w.Bytea(nil)
	w.Int8Array([]int64{1, -2})
	w.Int8Array([]int64{})
	w.Int8Array(nil)
	w.UUID([]byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11})
	w.UUID(nil)
	w.EndRow()
	w.Field([]byte(`\.`))
	w.EndRow()
	want := "prefix|a\\tb\\nc\\rd\\\\e\x01\t\\N\t\t\\N\t\\\\x00ab\t\\N\t{1,-2}\t{}\t\\N\ta0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\t\\N\n\\\\.\n"
	if got := string(w.Bytes()); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := string(AppendRow(nil, [][]byte{[]byte("x\ty"), nil, {}})); got != "x\\ty\t\\N\t\n" {
		t.Errorf("AppendRow: %q", got)
	}
}

// TestBinaryWriter: rows of every value BinaryWriter writes, loaded by
// the server's binary COPY, read back as written.
func TestBinaryWriter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS binw; CREATE TABLE binw (b bytea, u uuid, a bigint[])").ReadAll(); err != nil {
		t.Fatal(err)
	}
	uuid := []byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}
	var w BinaryWriter
	w.Reset(BinaryHeader(nil))
	w.Bytea([]byte{0, 0xab, '\n', '\\'})
	w.UUID(uuid)
	w.Int8Array([]int64{1, -2, 1 << 62})
	w.EndRow()
	w.Bytea([]byte{})
	w.Null()
	w.Int8Array([]int64{})
	w.EndRow()
	w.Bytea(nil)
	w.UUID(nil)
	w.Int8Array(nil)
	w.EndRow()
	data := BinaryTrailer(w.Bytes())
	tag, err := conn.CopyFrom(ctx, bytes.NewReader(data), "COPY binw FROM STDIN (FORMAT binary)")
	if err != nil || tag.RowsAffected() != 3 {
		t.Fatalf("COPY: %v %v", tag, err)
	}
	res := conn.ExecParams(ctx, "SELECT concat_ws('|', coalesce(encode(b, 'hex'), 'null'), coalesce(u::text, 'null'), coalesce(a::text, 'null')) FROM binw", nil, nil, nil, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	var got []string
	for _, r := range res.Rows {
		got = append(got, string(r[0]))
	}
	want := []string{"00ab0a5c|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|{1,-2,4611686018427387904}", "|null|{}", "null|null|null"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

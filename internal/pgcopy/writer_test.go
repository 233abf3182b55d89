package pgcopy

import "testing"

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

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
	w.EndRow()
	w.Field([]byte(`\.`))
	w.EndRow()
	want := "prefix|a\\tb\\nc\\rd\\\\e\x01\t\\N\t\t\\N\t\\\\x00ab\t\\N\t{1,-2}\t{}\t\\N\n\\\\.\n"
	if got := string(w.Bytes()); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := string(AppendRow(nil, [][]byte{[]byte("x\ty"), nil, {}})); got != "x\\ty\t\\N\t\n" {
		t.Errorf("AppendRow: %q", got)
	}
}

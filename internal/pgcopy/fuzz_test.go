package pgcopy

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// fuzzOpts are the option sets FuzzReader picks from.
var fuzzOpts = []string{
	"", "(NULL '')", "(DELIMITER ',', NULL 'x')", "(HEADER)", "(HEADER MATCH)",
	"CSV", "CSV NULL 'N'", `CSV ESCAPE '\'`, `CSV QUOTE '''' ESCAPE '\'`, `CSV QUOTE '\'`,
	"(FORMAT csv, FORCE_NULL (a), FORCE_NOT_NULL (b))", "CSV HEADER", `CSV DELIMITER '\'`,
}

// FuzzReader checks, for any input: the outcome does not depend on where
// chunks end; rows have one field per column; and rows re-encoded by the
// Writer read back the same in text format.
func FuzzReader(f *testing.F) {
	for _, c := range diffCorpus {
		for i, o := range fuzzOpts {
			if o == c.opts {
				f.Add([]byte(c.data), uint8(i), uint8(c.ncols), uint16(len(c.data)/2))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, optIdx, ncols uint8, split uint16) {
		o := mustOpts(t, fuzzOpts[int(optIdx)%len(fuzzOpts)])
		cols := diffColumns[:1+int(ncols)%3]
		whole := readAll(o, cols, data)
		k := int(split) % (len(data) + 1)
		if got := readAll(o, cols, data, k, 1, 2, 3); got.String() != whole.String() {
			t.Fatalf("split at %d: got %s, want %s", k, got, whole)
		}
		if whole.err != "" {
			return
		}
		for _, r := range whole.rows {
			for _, f := range r {
				if f != nil && (!utf8.ValidString(*f) || bytes.IndexByte([]byte(*f), 0) >= 0) {
					t.Fatalf("field %q is not valid for the server", *f)
				}
			}
		}
		back := readAll(mustOpts(t, ""), cols, encode(whole.rows))
		if back.String() != whole.String() {
			t.Fatalf("re-encoded rows read back as %s, want %s", back, whole)
		}
	})
}

// FuzzWriter checks that any valid field reads back unchanged.
func FuzzWriter(f *testing.F) {
	for _, s := range []string{"", `\N`, `\.`, "a\tb\nc\rd\\e", "\\", "é\x01\x7f"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, null bool) {
		if !utf8.ValidString(s) || bytes.IndexByte([]byte(s), 0) >= 0 {
			return
		}
		var v []byte
		if !null {
			v = []byte(s)
		}
		row := AppendRow(nil, [][]byte{v, []byte("x")})
		got := readAll(mustOpts(t, ""), []string{"a", "b"}, row)
		want := outcome{rows: [][]*string{{nil, &[]string{"x"}[0]}}}
		if !null {
			want.rows[0][0] = &s
		}
		if got.String() != want.String() {
			t.Fatalf("%q encoded as %q reads back as %s", s, row, got)
		}
	})
}

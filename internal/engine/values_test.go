package engine

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"testing"
)

// escapeBytea is PostgreSQL's bytea escape output form.
func escapeBytea(b []byte) []byte {
	var out []byte
	for _, c := range b {
		switch {
		case c == '\\':
			out = append(out, `\\`...)
		case c < 0x20 || c > 0x7e:
			out = fmt.Appendf(out, `\%03o`, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// FuzzCellBytes decodes server bytea text in both forms: arbitrary input
// must not panic, and the encodings of any value must decode to it.
func FuzzCellBytes(f *testing.F) {
	for _, s := range []string{"", `\x`, `\x00ff`, `\\`, `\001abc`, `\x0`, `\9`, "plain"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = cellBytes(b, false)
		hexForm := append([]byte(`\x`), hex.EncodeToString(b)...)
		for _, form := range [][]byte{hexForm, escapeBytea(b)} {
			got, err := cellBytes(form, false)
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("cellBytes(%q) = %x, %v; want %x", form, got, err, b)
			}
		}
	})
}

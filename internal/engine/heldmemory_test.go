package engine

import (
	"bytes"
	"fmt"
	"testing"
)

// TestHeldMemoryClone: held values are copies, NULL stays nil and an
// empty value stays empty but not NULL, whatever is left in the chunk
// (the first row's values are all empty: nothing was allocated yet).
func TestHeldMemoryClone(t *testing.T) {
	var m heldMemory
	rows := [][][]byte{{{}, nil, {}}}
	for i := range 300 {
		rows = append(rows, [][]byte{[]byte(fmt.Sprint(i)), nil, {}, bytes.Repeat([]byte{'x'}, i)})
	}
	var held [][][]byte
	for _, r := range rows {
		src := make([][]byte, len(r))
		for i, v := range r {
			if v != nil {
				src[i] = append([]byte{}, v...)
			}
		}
		held = append(held, m.clone(src))
		for _, v := range src {
			for j := range v {
				v[j] = '!' // the source buffer is reused
			}
		}
	}
	for n, r := range rows {
		for i, want := range r {
			got := held[n][i]
			if (got == nil) != (want == nil) || !bytes.Equal(got, want) {
				t.Fatalf("row %d value %d: %q (nil %v), want %q (nil %v)", n, i, got, got == nil, want, want == nil)
			}
		}
	}
}

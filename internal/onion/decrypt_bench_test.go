package onion

import (
	"fmt"
	"testing"

	"github.com/pgonion/pgonion/internal/schemes/rnd"
)

// BenchmarkDecryptRND decrypts RND-layer Eq cells of a numeric(15,2)
// column as split execution does, over values that repeat (10 distinct,
// served by the plaintext cache) and values that do not (each distinct:
// the cache is bypassed).
func BenchmarkDecryptRND(b *testing.B) {
	typ := Type{Base: Numeric, Precision: 15, Scale: 2}
	c, err := NewColumn(typ, []byte("bench"), []Kind{KindEq}, testDeriver(b), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, distinct := range []int{10, 1 << 20} {
		b.Run(fmt.Sprintf("distinct=%d", distinct), func(b *testing.B) {
			const n = 4 * cacheSize
			cells := make([]Cells, n)
			salts := make([][]byte, n)
			for i := range n {
				salts[i] = rnd.NewSalt()
				v := mustParse(b, typ, fmt.Sprintf("%d.%02d", (i*7919)%distinct, i%100*(min(distinct, 100)/100)))
				if cells[i], err = c.Encrypt(v, salts[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := c.DecryptAt(cells[i%n], salts[i%n], LayerRND); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package onion

import (
	"fmt"
	"math/rand/v2"
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

// BenchmarkDecryptDETText decrypts DET-layer Eq cells of a character(120)
// column (sysbench's c) over 10,000 distinct values drawn at random, as
// sysbench draws rows: the plaintext cache against the decryption itself.
func BenchmarkDecryptDETText(b *testing.B) {
	typ := Type{Base: Char, Length: 120}
	c, err := NewColumn(typ, []byte("bench"), []Kind{KindEq}, testDeriver(b), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	const n = 10000
	cells := make([]Cells, n)
	for i := range n {
		v := mustParse(b, typ, fmt.Sprintf("%011d-%011d-%011d-%011d-%011d-%011d-%011d-%011d-%011d-%011d", i, i*3, i*7, i*11, i*13, i*17, i*19, i*23, i*29, i*31))
		if cells[i], err = c.EncryptAt(v, rnd.NewSalt(), LayerDET, LayerOPE); err != nil {
			b.Fatal(err)
		}
	}
	for _, cached := range []bool{true, false} {
		b.Run(fmt.Sprintf("cached=%v", cached), func(b *testing.B) {
			if !cached {
				c.eqMemo.bypass.Store(1 << 62)
			}
			r := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				if _, err := c.DecryptAt(cells[r.IntN(n)], nil, LayerDET); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecryptCompact decrypts RND-layer Eq cells of an integer
// column (FormatCompact: one AES block of DET inside) in parallel, as
// sessions reading one column do, over values that repeat and values
// that do not. Each cell is copied first, as if just read from the
// server, so that the cost measured is the decryption's.
func BenchmarkDecryptCompact(b *testing.B) {
	typ := Type{Base: Integer}
	for _, distinct := range []int{1, 10000, 1 << 20} {
		b.Run(fmt.Sprintf("distinct=%d", distinct), func(b *testing.B) {
			c, err := NewColumn(typ, []byte("bench"), []Kind{KindEq}, testDeriver(b), nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			const n = 1 << 12
			cells := make([]Cells, n)
			salts := make([][]byte, n)
			r := rand.New(rand.NewPCG(1, 2))
			for i := range n {
				salts[i] = rnd.NewSalt()
				v := mustParse(b, typ, fmt.Sprint(r.IntN(distinct)))
				if cells[i], err = c.Encrypt(v, salts[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				eq, salt := make([]byte, 64), make([]byte, SaltSize)
				for i := 0; pb.Next(); i++ {
					e := eq[:copy(eq, cells[i%n].Eq)]
					copy(salt, salts[i%n])
					if _, err := c.DecryptAt(Cells{Eq: e}, salt, LayerRND); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

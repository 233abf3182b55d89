package hom

import (
	"crypto/rand"
	"math/big"
	mrand "math/rand/v2"
	"testing"
)

func TestAddMulVVW(t *testing.T) {
	r := mrand.New(mrand.NewPCG(1, 1))
	for n := 1; n < 70; n++ {
		for it := 0; it < 20; it++ {
			z := make([]uint, n)
			x := make([]uint, n)
			for i := range z {
				z[i], x[i] = uint(r.Uint64()), uint(r.Uint64())
				if it%5 == 0 {
					z[i], x[i] = ^uint(0), ^uint(0)
				}
			}
			y := uint(r.Uint64())
			if it%5 == 0 {
				y = ^uint(0)
			}
			want := new(big.Int).Add(bigFromNat(z), new(big.Int).Mul(bigFromNat(x), new(big.Int).SetUint64(uint64(y))))
			c := addMulVVW(z, x, y)
			got := new(big.Int).Add(bigFromNat(z), new(big.Int).Lsh(new(big.Int).SetUint64(uint64(c)), uint(wordBits*n)))
			if got.Cmp(want) != 0 {
				t.Fatalf("n=%d: addMulVVW wrong", n)
			}
		}
	}
}

func TestMontgomery(t *testing.T) {
	for _, bits := range []int{64, 65, 1000, 2048, 3072, 6144} {
		m, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), uint(bits)))
		m.SetBit(m, 0, 1)
		m.SetBit(m, bits-1, 1)
		mm := newMontModulus(m)
		s := mm.scratch()
		n := mm.n
		edge := []*big.Int{big.NewInt(0), big.NewInt(1), new(big.Int).Sub(m, big.NewInt(1))}
		for i := 0; i < 20; i++ {
			var a, b *big.Int
			if i < 9 {
				a, b = edge[i%3], edge[i/3]
			} else {
				a, _ = rand.Int(rand.Reader, m)
				b, _ = rand.Int(rand.Reader, m)
			}
			am, bm := make([]uint, n), make([]uint, n)
			mm.toMont(am, natFromBig(a, n), s)
			mm.toMont(bm, natFromBig(b, n), s)
			sq := make([]uint, n)
			mm.sqr(sq, am, s)
			mm.fromMont(sq, sq, s)
			if bigFromNat(sq).Cmp(new(big.Int).Mod(new(big.Int).Mul(a, a), m)) != 0 {
				t.Fatalf("%d bits: sqr wrong", bits)
			}
			mm.mul(am, am, bm, s)
			mm.fromMont(am, am, s)
			want := new(big.Int).Mod(new(big.Int).Mul(a, b), m)
			if bigFromNat(am).Cmp(want) != 0 {
				t.Fatalf("%d bits: mul wrong", bits)
			}
			e, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 200))
			eb := make([]byte, 32)
			e.FillBytes(eb)
			z := make([]uint, n)
			mm.exp(z, natFromBig(a, n), eb)
			if bigFromNat(z).Cmp(new(big.Int).Exp(a, e, m)) != 0 {
				t.Fatalf("%d bits: exp wrong", bits)
			}
			// redc of a double-width product
			T := make([]uint, 2*n)
			copy(T, natFromBig(new(big.Int).Mul(a, b), 2*n))
			mm.redc(z, T)
			Rinv := new(big.Int).ModInverse(new(big.Int).Lsh(big.NewInt(1), uint(wordBits*n)), m)
			want = new(big.Int).Mod(new(big.Int).Mul(want, Rinv), m)
			if bigFromNat(z).Cmp(want) != 0 {
				t.Fatalf("%d bits: redc wrong", bits)
			}
		}
	}
}

func BenchmarkPaillierMontExpHalf3072(b *testing.B) {
	p, _ := rand.Prime(rand.Reader, 1536)
	psq := new(big.Int).Mul(p, p)
	mm := newMontModulus(psq)
	x, _ := rand.Int(rand.Reader, psq)
	xn := natFromBig(x, mm.n)
	e := new(big.Int).Sub(p, big.NewInt(1)).Bytes()
	z := make([]uint, mm.n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mm.exp(z, xn, e)
	}
}

func BenchmarkPaillierMontExpHalf2048(b *testing.B) {
	p, _ := rand.Prime(rand.Reader, 1024)
	psq := new(big.Int).Mul(p, p)
	mm := newMontModulus(psq)
	x, _ := rand.Int(rand.Reader, psq)
	xn := natFromBig(x, mm.n)
	e := new(big.Int).Sub(p, big.NewInt(1)).Bytes()
	z := make([]uint, mm.n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mm.exp(z, xn, e)
	}
}

func TestAddMulVVWVariants(t *testing.T) {
	for _, f := range addMulVariants() {
		r := mrand.New(mrand.NewPCG(2, 2))
		for n := 0; n < 120; n++ {
			for it := 0; it < 30; it++ {
				z := make([]uint, n)
				x := make([]uint, n)
				for i := range z {
					z[i], x[i] = uint(r.Uint64()), uint(r.Uint64())
					if it%3 == 0 {
						z[i], x[i] = ^uint(0), ^uint(0)
					}
				}
				y := uint(r.Uint64())
				if it%3 == 0 {
					y = ^uint(0)
				}
				z2 := append([]uint(nil), z...)
				c1 := f.fn(z, x, y)
				c2 := addMulGeneric(z2, x, y)
				if c1 != c2 || bigFromNat(z).Cmp(bigFromNat(z2)) != 0 {
					t.Fatalf("%s n=%d: differs from the generic version", f.name, n)
				}
			}
		}
	}
}

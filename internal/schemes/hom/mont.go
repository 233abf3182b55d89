package hom

import (
	"math/big"
	"math/bits"
)

// Constant-time Montgomery arithmetic on little-endian word-size limbs, for
// the exponentiations whose exponent or modulus is secret (decryption modulo
// p² and q², randomizers from fixed-base tables).
//
// filippo.io/bigmod does the same in constant time, but only has assembly
// for 1024-, 1536- and 2048-bit moduli; a 3072-bit Paillier key works
// modulo p² and q² of 3072 bits, where its generic loop is about 2.5 times
// slower than the row primitive below (addMulVVW, in assembly on amd64).
// Nothing here branches on or indexes memory by secret data: loops depend
// only on the limb count, the final subtraction and table lookups are
// masked selections.

// wordBits is the size of a limb (uint, as in math/big and bigmod).
const wordBits = bits.UintSize

type montModulus struct {
	m     []uint // odd modulus, n limbs, m[n-1] != 0
	n     int
	m0inv uint   // -m^-1 mod 2^wordBits
	rr    []uint // R² mod m, R = 2^(wordBits n)
	one   []uint // R mod m (1 in Montgomery form)
}

func newMontModulus(m *big.Int) *montModulus {
	if m.Bit(0) == 0 || m.Sign() <= 0 {
		panic("hom: Montgomery modulus must be odd and positive")
	}
	n := len(m.Bits())
	mm := &montModulus{m: natFromBig(m, n), n: n}
	// Newton iteration for m^-1 mod 2^wordBits: each step doubles the correct bits.
	inv := uint(1)
	m0 := mm.m[0]
	for i := 0; i < 6; i++ {
		inv *= 2 - m0*inv
	}
	mm.m0inv = -inv
	R := new(big.Int).Lsh(big.NewInt(1), uint(wordBits*n))
	mm.one = natFromBig(new(big.Int).Mod(R, m), n)
	mm.rr = natFromBig(new(big.Int).Mod(new(big.Int).Mul(R, R), m), n)
	return mm
}

// natFromBig returns x as n little-endian limbs (x must fit).
func natFromBig(x *big.Int, n int) []uint {
	z := make([]uint, n)
	for i, w := range x.Bits() {
		z[i] = uint(w)
	}
	return z
}

func bigFromNat(z []uint) *big.Int {
	w := make([]big.Word, len(z))
	for i, v := range z {
		w[i] = big.Word(v)
	}
	return new(big.Int).SetBits(w)
}

// montScratch holds the temporaries of one goroutine's operations.
type montScratch struct{ t []uint }

func (mm *montModulus) scratch() *montScratch { return &montScratch{t: make([]uint, 2*mm.n+1)} }

// mul sets z = a*b/R mod m. a and b are n limbs, reduced; z may alias a
// or b.
func (mm *montModulus) mul(z, a, b []uint, s *montScratch) {
	n := mm.n
	T := s.t[:2*n]
	clear(T)
	var c uint
	for i := 0; i < n; i++ {
		c1 := addMulVVW(T[i:n+i], a[:n], b[i])
		y := T[i] * mm.m0inv
		c2 := addMulVVW(T[i:n+i], mm.m, y)
		T[n+i], c = bits.Add(c1, c2, c)
	}
	mm.finish(z, T[n:], c)
}

// finish sets z = x + c*R - m if that is non-negative, else x + c*R, in
// constant time (x + c*R < 2m).
func (mm *montModulus) finish(z, x []uint, c uint) {
	n := mm.n
	var borrow uint
	d := z[:n]
	// Compute x - m into d unless d aliases x; use a stack copy of borrow.
	tmp := make([]uint, 0, 128)
	if cap(tmp) < n {
		tmp = make([]uint, n)
	}
	tmp = tmp[:n]
	for i := 0; i < n; i++ {
		tmp[i], borrow = bits.Sub(x[i], mm.m[i], borrow)
	}
	// Keep the difference when c == 1 or there was no borrow.
	keep := -(c | (borrow ^ 1)) // all ones to keep tmp
	for i := 0; i < n; i++ {
		d[i] = (tmp[i] & keep) | (x[i] &^ keep)
	}
}

// sqr sets z = a*a/R mod m: the cross products once, doubled, plus the
// squares, then a Montgomery reduction (about 3/4 of the work of mul).
func (mm *montModulus) sqr(z, a []uint, s *montScratch) {
	n := mm.n
	T := s.t[:2*n]
	clear(T)
	for i := 0; i < n-1; i++ {
		T[i+n] = addMulVVW(T[2*i+1:i+n], a[i+1:n], a[i])
	}
	// Double the cross products (they are below R²/2).
	var top uint
	for i := 0; i < 2*n; i++ {
		v := T[i]
		T[i] = v<<1 | top
		top = v >> (wordBits - 1)
	}
	var c uint
	for i := 0; i < n; i++ {
		hi, lo := bits.Mul(a[i], a[i])
		T[2*i], c = bits.Add(T[2*i], lo, c)
		T[2*i+1], c = bits.Add(T[2*i+1], hi, c)
	}
	mm.redc(z, T)
}

// toMont sets z = a*R mod m (a reduced).
func (mm *montModulus) toMont(z, a []uint, s *montScratch) { mm.mul(z, a, mm.rr, s) }

// fromMont sets z = a/R mod m.
func (mm *montModulus) fromMont(z, a []uint, s *montScratch) {
	n := mm.n
	T := s.t[:2*n]
	clear(T)
	copy(T, a[:n])
	var c uint
	for i := 0; i < n; i++ {
		y := T[i] * mm.m0inv
		c2 := addMulVVW(T[i:n+i], mm.m, y)
		T[n+i], c = bits.Add(T[n+i], c2, c)
	}
	mm.finish(z, T[n:], c)
}

// redc sets z = T/R mod m for a 2n-limb T < m*R (a Montgomery reduction of
// a double-width value). T is clobbered.
func (mm *montModulus) redc(z, T []uint) {
	n := mm.n
	var c uint
	for i := 0; i < n; i++ {
		y := T[i] * mm.m0inv
		c2 := addMulVVW(T[i:n+i], mm.m, y)
		T[n+i], c = bits.Add(T[n+i], c2, c)
	}
	mm.finish(z, T[n:2*n], c)
}

// selectEntry sets z = table[idx] without secret-dependent memory access.
func selectEntry(z []uint, table [][]uint, idx uint) {
	clear(z)
	for k, e := range table {
		mask := ctEqMask(uint(k), idx)
		for i := range z {
			z[i] |= e[i] & mask
		}
	}
}

// ctEqMask returns all ones if a == b, else 0, without branches.
func ctEqMask(a, b uint) uint {
	x := a ^ b
	// (x | -x) has its top bit set iff x != 0.
	return ((x | -x) >> (wordBits - 1)) - 1
}

const expWindow = 5

// exp sets z = x^e mod m (z, x plain, not Montgomery; x reduced) in
// constant time for a fixed length of e (big-endian bytes), with fixed
// 5-bit windows.
func (mm *montModulus) exp(z, x []uint, e []byte) {
	n := mm.n
	s := mm.scratch()
	table := make([][]uint, 1<<expWindow)
	back := make([]uint, n<<expWindow)
	for i := range table {
		table[i] = back[i*n : (i+1)*n]
	}
	copy(table[0], mm.one)
	mm.toMont(table[1], x, s)
	for i := 2; i < len(table); i++ {
		mm.mul(table[i], table[i-1], table[1], s)
	}
	acc := make([]uint, n)
	copy(acc, mm.one)
	sel := make([]uint, n)
	nbits := 8 * len(e)
	// Windows from the top; the first one takes the leftover bits.
	first := nbits % expWindow
	if first == 0 {
		first = expWindow
	}
	for pos := nbits; pos > 0; {
		w := expWindow
		if pos == nbits {
			w = first
		}
		pos -= w
		for k := 0; k < w; k++ {
			mm.sqr(acc, acc, s)
		}
		selectEntry(sel, table, expBits(e, pos, w))
		mm.mul(acc, acc, sel, s)
	}
	mm.fromMont(z, acc, s)
}

// expBits returns the w bits of the big-endian e starting at bit pos
// (counted from the least significant bit).
func expBits(e []byte, pos, w int) uint {
	var v uint
	for k := w - 1; k >= 0; k-- {
		b := pos + k
		byteIdx := len(e) - 1 - b/8
		v = v<<1 | uint(e[byteIdx]>>(b%8))&1
	}
	return v
}

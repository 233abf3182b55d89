package hom

import (
	"errors"
	"math/big"
)

// Accumulator multiplies ciphertexts modulo n² in the proxy: the
// client-side evaluation of SUM over ciphertexts fetched from the server.
// Each step is a Karatsuba product (math/big) and a Montgomery reduction
// (REDC) instead of a division: the running product carries a factor R^-k
// for k steps, removed once by Sum. It is not safe for concurrent use (use
// one per goroutine and Merge). Ciphertexts are public, so none of this
// needs to be constant time.
type Accumulator struct {
	pk    *PublicKey
	mm    *montModulus
	acc   []uint // product · R^-steps mod n², once count > 0
	prod  *big.Int
	c     *big.Int
	t     []uint
	count int
	steps int // Montgomery reductions done
}

// NewAccumulator returns an empty accumulator.
func (pk *PublicKey) NewAccumulator() *Accumulator {
	mm := pk.montNSquared()
	return &Accumulator{pk: pk, mm: mm, prod: new(big.Int), c: new(big.Int), t: make([]uint, 2*mm.n)}
}

func (pk *PublicKey) montNSquared() *montModulus {
	pk.montOnce.Do(func() { pk.mont = newMontModulus(pk.nsq) })
	return pk.mont
}

func (a *Accumulator) mulIn(c *big.Int) {
	a.count++
	if a.acc == nil {
		a.acc = natFromBig(c, a.mm.n)
		return
	}
	a.prod.Mul(bigFromNatNoCopy(a.acc, a.c), c)
	clear(a.t)
	for i, w := range a.prod.Bits() {
		a.t[i] = uint(w)
	}
	a.mm.redc(a.acc, a.t)
	a.steps++
}

// bigFromNatNoCopy returns z as a big.Int in dst (sharing nothing with z).
func bigFromNatNoCopy(z []uint, dst *big.Int) *big.Int {
	w := dst.Bits()
	if cap(w) < len(z) {
		w = make([]big.Word, len(z))
	}
	w = w[:len(z)]
	for i, v := range z {
		w[i] = big.Word(v)
	}
	return dst.SetBits(w)
}

// Add multiplies c into the accumulator.
func (a *Accumulator) Add(c *Ciphertext) { a.mulIn(c.c) }

// AddBytes multiplies the fixed-width encoding of a ciphertext into the
// accumulator. It checks only 0 < c < n² (a ciphertext sharing a factor with
// n makes the sum fail to decrypt, which decryption reports).
func (a *Accumulator) AddBytes(b []byte) error {
	if len(b) != a.pk.size {
		return ErrDecrypt
	}
	c := new(big.Int).SetBytes(b)
	if c.Sign() == 0 || c.Cmp(a.pk.nsq) >= 0 {
		return ErrDecrypt
	}
	a.mulIn(c)
	return nil
}

// Merge multiplies the product of another accumulator into a.
func (a *Accumulator) Merge(b *Accumulator) {
	if s := b.Sum(); s != nil {
		a.mulIn(s.c)
		a.count += b.count - 1
	}
}

// Count returns how many ciphertexts were added.
func (a *Accumulator) Count() int { return a.count }

// Sum returns the ciphertext of the sum, or nil when nothing was added (SQL
// SUM of no rows is NULL).
func (a *Accumulator) Sum() *Ciphertext {
	if a.acc == nil {
		return nil
	}
	// acc = product · R^-steps: multiply by R^steps mod n².
	steps := a.steps
	acc := bigFromNat(a.acc)
	if steps > 0 {
		R := new(big.Int).Lsh(big.NewInt(1), uint(wordBits*a.mm.n))
		R.Mod(R, a.pk.nsq)
		acc.Mul(acc, R.Exp(R, big.NewInt(int64(steps)), a.pk.nsq))
		acc.Mod(acc, a.pk.nsq)
	}
	return &Ciphertext{acc}
}

// Packing packs several signed integers into one plaintext, in slots of
// SlotBits bits (Monomi's packing): the homomorphic sum of packed
// ciphertexts is the packed vector of the sums of each slot, so one
// ciphertext multiplication adds up to Slots values at once (for example
// several columns of a row).
//
// A slot holds a value v with |v| < 2^(SlotBits-1), and so does every sum
// that is to be decoded: with SlotBits = 64 + h, up to 2^h int64 values can
// be added per slot. A 3072-bit key has 31 slots of 96 bits; a 2048-bit key
// 21.
type Packing struct {
	pk       *PublicKey
	slotBits uint
	slots    int
}

var errSlotBits = errors.New("hom: slot size must be between 8 and 1024 bits")

// NewPacking returns a packing of as many slots of slotBits bits as fit
// the plaintext space of pk.
func NewPacking(pk *PublicKey, slotBits int) (*Packing, error) {
	if slotBits < 8 || slotBits > 1024 {
		return nil, errSlotBits
	}
	// sum |v_i| 2^(b i) < 2^(b k - 1) (1 + 2^(1-b)) <= n/2 when b k <= bits - 2.
	return &Packing{pk: pk, slotBits: uint(slotBits), slots: (pk.Bits() - 2) / slotBits}, nil
}

// Slots returns the number of slots.
func (p *Packing) Slots() int { return p.slots }

// SlotBits returns the size of a slot in bits.
func (p *Packing) SlotBits() int { return int(p.slotBits) }

// Pack returns the plaintext holding vals[i] in slot i (at most Slots
// values, each with |v| < 2^(SlotBits-1)), to be encrypted.
func (p *Packing) Pack(vals []int64) (*big.Int, error) {
	if len(vals) > p.slots {
		return nil, ErrPlaintextRange
	}
	limit := new(big.Int).Lsh(big.NewInt(1), p.slotBits-1)
	m := new(big.Int)
	v := new(big.Int)
	for i := len(vals) - 1; i >= 0; i-- {
		v.SetInt64(vals[i])
		if v.CmpAbs(limit) >= 0 {
			return nil, ErrPlaintextRange
		}
		m.Lsh(m, p.slotBits)
		m.Add(m, v)
	}
	return m, nil
}

// Unpack returns the Slots values packed in the decrypted plaintext m (the
// per-slot sums after homomorphic additions). It returns ErrPlaintextRange
// when m is not such a packing (a slot sum overflowed).
func (p *Packing) Unpack(m *big.Int) ([]*big.Int, error) {
	s := new(big.Int).Set(m)
	mod := new(big.Int).Lsh(big.NewInt(1), p.slotBits)
	half := new(big.Int).Rsh(mod, 1)
	out := make([]*big.Int, p.slots)
	for i := range out {
		d := new(big.Int).Mod(s, mod) // in [0, 2^b)
		if d.Cmp(half) >= 0 {
			d.Sub(d, mod)
		}
		out[i] = d
		s.Sub(s, d)
		s.Rsh(s, p.slotBits)
	}
	if s.Sign() != 0 {
		return nil, ErrPlaintextRange
	}
	return out, nil
}

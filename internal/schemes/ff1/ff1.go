// Package ff1 implements FF1, the format-preserving encryption mode of
// NIST SP 800-38G (Rev. 1), over AES.
//
// FF1 is a tweakable pseudorandom permutation on the strings of n numerals
// in base radix. Cipher implements the general mode (radix 2 to 2^16) with
// math/big arithmetic; Uint64 is a fast, allocation-free special case for
// 64-bit strings in radix 2 (the domain of an int8 column) that gives
// exactly the same results as Cipher with radix 2 and 64 numerals.
//
// What FF1 leaks: it is deterministic, so equal (key, tweak, plaintext)
// triples give equal ciphertexts, which reveals equality. The ciphertext has
// exactly the length and alphabet of the plaintext. There is no
// authentication: every string of the right length and alphabet decrypts to
// some plaintext, so tampering is not detected.
//
// Warning: FF1 on small domains is weak. NIST requires radix^n >= 1,000,000,
// which New enforces; the published attacks on FF1 and FF3 target small
// domains, so prefer domains far larger than that bound (such as Uint64's
// 2^64).
package ff1

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"math/bits"
)

const (
	// MinRadix and MaxRadix bound the radix that New accepts (SP 800-38G
	// Rev. 1, section 5.2).
	MinRadix = 2
	MaxRadix = 1 << 16

	// MaxLen is the largest number of numerals that Encrypt and Decrypt
	// accept. SP 800-38G allows up to 2^32-1; this implementation stops
	// far earlier to bound the work a single call can cause (its
	// arithmetic is quadratic in the length).
	MaxLen = 1 << 12

	// MaxTweakLen is the largest tweak, in bytes, that Encrypt and Decrypt
	// accept (SP 800-38G allows up to 2^32-1).
	MaxTweakLen = 1 << 16

	// rounds is the number of Feistel rounds of FF1.
	rounds = 10
)

// ErrInput is returned for a numeral string or tweak that FF1 is not defined
// on: wrong length, or a numeral not smaller than the radix.
var ErrInput = errors.New("ff1: invalid input")

// Cipher is FF1 over AES for one key and one radix. It is safe for
// concurrent use.
type Cipher struct {
	block  cipher.Block
	radix  int
	minLen int
}

// New returns an FF1 cipher keyed with key (16, 24 or 32 bytes, selecting
// AES-128, AES-192 or AES-256) for numerals in base radix (2 to 65536).
func New(key []byte, radix int) (*Cipher, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return nil, fmt.Errorf("ff1: invalid key size %d, want 16, 24 or 32 bytes", len(key))
	}
	if radix < MinRadix || radix > MaxRadix {
		return nil, fmt.Errorf("ff1: invalid radix %d, want %d to %d", radix, MinRadix, MaxRadix)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("ff1: %v", err)
	}
	// minlen: the smallest n >= 2 with radix^n >= 1,000,000.
	minLen := 2
	for p := radix * radix; p < 1000000; p *= radix {
		minLen++
	}
	return &Cipher{block: block, radix: radix, minLen: minLen}, nil
}

// Radix returns the radix the cipher was created with.
func (c *Cipher) Radix() int { return c.radix }

// MinLen returns the smallest number of numerals the cipher accepts: the
// smallest n >= 2 with radix^n >= 1,000,000.
func (c *Cipher) MinLen() int { return c.minLen }

// Encrypt appends to dst the FF1 encryption of the numeral string x under
// tweak, and returns the extended slice. Each numeral must be smaller than
// the radix, and MinLen() <= len(x) <= MaxLen. x and tweak are not modified.
//
// Warning: the result is deterministic: equal (tweak, x) give equal
// ciphertexts.
func (c *Cipher) Encrypt(dst, x []uint16, tweak []byte) ([]uint16, error) {
	return c.crypt(dst, x, tweak, true)
}

// Decrypt appends to dst the FF1 decryption of the numeral string x under
// tweak, and returns the extended slice. The same bounds as for Encrypt
// apply. Every valid numeral string decrypts: FF1 has no authentication.
func (c *Cipher) Decrypt(dst, x []uint16, tweak []byte) ([]uint16, error) {
	return c.crypt(dst, x, tweak, false)
}

func (c *Cipher) crypt(dst, x []uint16, tweak []byte, encrypt bool) ([]uint16, error) {
	n := len(x)
	if n < c.minLen || n > MaxLen || len(tweak) > MaxTweakLen {
		return nil, ErrInput
	}
	for _, d := range x {
		if int(d) >= c.radix {
			return nil, ErrInput
		}
	}
	radix := c.radix
	t := len(tweak)
	u := n / 2
	v := n - u

	bigRadix := big.NewInt(int64(radix))
	modU := new(big.Int).Exp(bigRadix, big.NewInt(int64(u)), nil)
	modV := modU
	if v != u {
		modV = new(big.Int).Mul(modU, bigRadix)
	}
	// b = ceil(ceil(v*log2(radix))/8); ceil(v*log2(radix)) is the bit length
	// of radix^v - 1.
	b := (new(big.Int).Sub(modV, big.NewInt(1)).BitLen() + 7) / 8
	d := 4*((b+3)/4) + 4

	// P = [1]^1 || [2]^1 || [1]^1 || [radix]^3 || [10]^1 || [u mod 256]^1 ||
	//     [n]^4 || [t]^4
	var p [aes.BlockSize]byte
	p[0], p[1], p[2] = 1, 2, 1
	p[3], p[4], p[5] = byte(radix>>16), byte(radix>>8), byte(radix)
	p[6] = 10
	p[7] = byte(u)
	binary.BigEndian.PutUint32(p[8:12], uint32(n))
	binary.BigEndian.PutUint32(p[12:16], uint32(t))

	// Q = T || [0]^((-t-b-1) mod 16) || [i]^1 || [NUM_radix(B)]^b
	pad := (16 - (t+b+1)%16) % 16
	q := make([]byte, t+pad+1+b)
	copy(q, tweak)

	// The CBC-MAC of P is the same in every round.
	var h0 [aes.BlockSize]byte
	c.block.Encrypt(h0[:], p[:])

	numA := num(x[:u], radix)
	numB := num(x[u:], radix)
	if !encrypt {
		numA, numB = numB, numA // Decrypt runs the rounds on (B, A).
	}
	sBytes := make([]byte, (d+15)/16*16)
	y := new(big.Int)
	for j := 0; j < rounds; j++ {
		i := j
		if !encrypt {
			i = rounds - 1 - j
		}
		// Q's last b bytes hold NUM_radix of the half that is not changed.
		q[t+pad] = byte(i)
		clear(q[t+pad+1:])
		numB.FillBytes(q[t+pad+1:])
		// R = PRF(P || Q): CBC-MAC with a zero IV.
		r := h0
		for off := 0; off < len(q); off += aes.BlockSize {
			for k := range r {
				r[k] ^= q[off+k]
			}
			c.block.Encrypt(r[:], r[:])
		}
		// S = R || CIPH(R xor [1]^16) || CIPH(R xor [2]^16) || ..., first d bytes.
		copy(sBytes, r[:])
		for k := 1; k*aes.BlockSize < d; k++ {
			var blk [aes.BlockSize]byte
			binary.BigEndian.PutUint64(blk[8:], uint64(k))
			for z := range blk {
				blk[z] ^= r[z]
			}
			c.block.Encrypt(sBytes[k*aes.BlockSize:], blk[:])
		}
		y.SetBytes(sBytes[:d])
		m := u
		if i%2 == 1 {
			m = v
		}
		mod := modU
		if m != u {
			mod = modV
		}
		// Encrypt: c = (NUM(A) + y) mod radix^m; A = B; B = c.
		// Decrypt: c = (NUM(B) - y) mod radix^m; B = A; A = c.
		cNum := new(big.Int)
		if encrypt {
			cNum.Add(numA, y)
		} else {
			cNum.Sub(numA, y)
		}
		cNum.Mod(cNum, mod)
		numA, numB = numB, cNum
	}
	if !encrypt {
		numA, numB = numB, numA
	}
	dst = appendStr(dst, numA, radix, u)
	dst = appendStr(dst, numB, radix, v)
	return dst, nil
}

// num returns NUM_radix(x): the numerals of x read as a number in base
// radix, most significant first.
func num(x []uint16, radix int) *big.Int {
	r := new(big.Int)
	// Gather as many numerals as fit in a uint64 before touching big.Int.
	per := 63 / bits.Len(uint(radix))
	mult := new(big.Int)
	word := new(big.Int)
	for len(x) > 0 {
		k := min(per, len(x))
		var acc, pow uint64 = 0, 1
		for _, d := range x[:k] {
			acc = acc*uint64(radix) + uint64(d)
			pow *= uint64(radix)
		}
		r.Mul(r, mult.SetUint64(pow))
		r.Add(r, word.SetUint64(acc))
		x = x[k:]
	}
	return r
}

// appendStr appends STR^m_radix(v): v in base radix as exactly m numerals,
// most significant first.
func appendStr(dst []uint16, v *big.Int, radix, m int) []uint16 {
	start := len(dst)
	dst = append(dst, make([]uint16, m)...)
	out := dst[start:]
	v = new(big.Int).Set(v)
	// Divide by radix^per at a time, then split each remainder into per
	// numerals with machine arithmetic.
	per := 63 / bits.Len(uint(radix))
	pow := uint64(1)
	for range per {
		pow *= uint64(radix)
	}
	div := new(big.Int).SetUint64(pow)
	rem := new(big.Int)
	for i := m - 1; i >= 0; {
		v.QuoRem(v, div, rem)
		r := rem.Uint64()
		for k := 0; k < per && i >= 0; k++ {
			out[i] = uint16(r % uint64(radix))
			r /= uint64(radix)
			i--
		}
	}
	return dst
}

// Uint64 is FF1 with radix 2 on 64-numeral strings, that is a tweakable
// pseudorandom permutation of the 64-bit integers, for one key and one fixed
// tweak. Bit 63 of the integer is the first numeral. Uint64 gives exactly
// the results of Cipher with radix 2 on the 64 bits, and precomputes the
// parts of the CBC-MAC that depend only on the key and the tweak, so each
// call costs ten AES block encryptions and one 16-byte allocation. It is
// safe for concurrent use.
type Uint64 struct {
	block cipher.Block
	// h is the CBC-MAC chaining value after P and every block of Q but
	// the last.
	h [aes.BlockSize]byte
	// last is the last block of Q with the round number and B set to
	// zero.
	last [aes.BlockSize]byte
}

// NewUint64 returns the FF1 permutation of the 64-bit integers for key (16,
// 24 or 32 bytes) and tweak (at most MaxTweakLen bytes; it may be empty).
// The key and tweak are not retained.
func NewUint64(key, tweak []byte) (*Uint64, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return nil, fmt.Errorf("ff1: invalid key size %d, want 16, 24 or 32 bytes", len(key))
	}
	if len(tweak) > MaxTweakLen {
		return nil, fmt.Errorf("ff1: tweak of %d bytes is longer than %d", len(tweak), MaxTweakLen)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("ff1: %v", err)
	}
	const n, u, b = 64, 32, 4
	t := len(tweak)
	var p [aes.BlockSize]byte
	p[0], p[1], p[2] = 1, 2, 1
	p[3], p[4], p[5] = 0, 0, 2 // radix 2
	p[6] = 10
	p[7] = u
	binary.BigEndian.PutUint32(p[8:12], n)
	binary.BigEndian.PutUint32(p[12:16], uint32(t))
	pad := (16 - (t+b+1)%16) % 16
	q := make([]byte, t+pad+1+b)
	copy(q, tweak)

	c := &Uint64{block: block}
	block.Encrypt(c.h[:], p[:])
	lastOff := len(q) - aes.BlockSize
	for off := 0; off < lastOff; off += aes.BlockSize {
		for k := range c.h {
			c.h[k] ^= q[off+k]
		}
		block.Encrypt(c.h[:], c.h[:])
	}
	copy(c.last[:], q[lastOff:])
	return c, nil
}

// round returns the low 32 bits of y = NUM(S) for round i with the
// unchanged half equal to half (d = 8, so S is the first 8 bytes of R). r is
// scratch space: a buffer passed to the cipher.Block interface escapes to
// the heap, so each Encrypt or Decrypt allocates it once, not per round.
func (c *Uint64) round(r *[aes.BlockSize]byte, i byte, half uint32) uint32 {
	*r = c.last
	r[11] = i
	binary.BigEndian.PutUint32(r[12:], half)
	for k := range r {
		r[k] ^= c.h[k]
	}
	c.block.Encrypt(r[:], r[:])
	return binary.BigEndian.Uint32(r[4:8])
}

// Encrypt returns the FF1 encryption of x.
//
// Warning: the result is deterministic, and every uint64 is a valid
// ciphertext: Decrypt cannot detect tampering.
func (c *Uint64) Encrypt(x uint64) uint64 {
	r := new([aes.BlockSize]byte)
	a, b := uint32(x>>32), uint32(x)
	for i := byte(0); i < rounds; i++ {
		a, b = b, a+c.round(r, i, b)
	}
	return uint64(a)<<32 | uint64(b)
}

// Decrypt returns the FF1 decryption of y: the x with Encrypt(x) == y.
func (c *Uint64) Decrypt(y uint64) uint64 {
	r := new([aes.BlockSize]byte)
	a, b := uint32(y>>32), uint32(y)
	for i := byte(rounds); i > 0; i-- {
		a, b = b-c.round(r, i-1, a), a
	}
	return uint64(a)<<32 | uint64(b)
}

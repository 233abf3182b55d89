// Package ope implements the OPE layer of the Ord onion: the
// order-preserving encryption of Boldyreva, Chenette, Lee and O'Neill
// ("Order-Preserving Symmetric Encryption", EUROCRYPT 2009), the scheme
// CryptDB uses, which lets the server evaluate <, <=, >, >=, BETWEEN,
// ORDER BY, MIN and MAX over ciphertexts.
//
// Encryption is a deterministic, strictly increasing function chosen
// pseudorandomly by the key among all strictly increasing functions from
// the plaintext domain to the ciphertext range (a random order-preserving
// function, sampled lazily: every node of the recursion draws a
// hypergeometric variate from AES-256 coins keyed by the node).
//
// Two domains are provided:
//
//   - Cipher32: int32 (and uint32) plaintexts to 64-bit ciphertexts
//     (range = 2^32 times the domain). For int2, int4 and date columns.
//   - Cipher64: int64 (and uint64) plaintexts to 128-bit ciphertexts, the
//     same expansion. For int8 and scaled numeric columns.
//
// The range is 2^32 times larger than the domain for both, as in CryptDB:
// consecutive plaintexts are on average 2^32 apart, and the random
// function's hypergeometric splits stay far from their degenerate cases at
// every level. A larger range would not reduce what the scheme leaks (see
// below), and these sizes keep ciphertexts to machine words: a Cipher32
// ciphertext fits a PostgreSQL int8 (CiphertextToInt8) and a Cipher64
// ciphertext is 16 bytes of bytea.
//
// Ciphertext order on the server equals plaintext order when ciphertexts
// are stored as:
//
//   - Cipher32: int8 via CiphertextToInt8 (the sign bit is flipped so the
//     signed order of int8 is the unsigned order of the ciphertexts), or
//     8-byte big-endian bytea (AppendCiphertext32; bytea compares bytes
//     lexicographically like memcmp), or numeric (decimal text of the
//     uint64);
//   - Cipher64: 16-byte big-endian bytea (Uint128.Bytes), or numeric
//     (Uint128.String).
//
// Signed plaintexts are mapped to the unsigned domain by flipping their
// sign bit, an order-preserving bijection, so MinInt32 encrypts to the
// smallest ciphertext and MaxInt32 to the largest.
//
// What the server learns from a column at the OPE layer (its leakage):
//
//   - the order of all values, and so equality, the frequency of every
//     value and the rank of every value among the stored ones;
//   - more than order: a random order-preserving function leaks, per
//     Boldyreva, Chenette and O'Neill ("Order-Preserving Encryption
//     Revisited", CRYPTO 2011), roughly the upper half of the bits of each
//     plaintext (a ciphertext's position in the range approximates the
//     plaintext's position in the domain), and the distance between
//     plaintexts approximately;
//   - with a known or guessed distribution of the column (public data,
//     auxiliary data), inference attacks (sorting, cumulative attacks)
//     recover most values of dense columns;
//   - nullness (NULL stays NULL).
//
// Warning: OPE is the weakest layer of the design. Use it only for columns
// whose values may be revealed approximately, and only when range queries
// on the server are needed.
//
// Warning: encryption is deterministic and the same key gives the same
// ciphertexts in every process and on every architecture (the sampler uses
// only IEEE 754 operations with exactly specified results). Changing the
// algorithm, the key derivation or the sampler changes every ciphertext;
// testdata/kat.json freezes known answers to catch this.
//
// Ciphertexts are not authenticated: decrypting a value that is not a
// ciphertext under the key returns ErrDecrypt (most such values are
// rejected, since only one range value in 2^32 is a ciphertext), never
// which check failed.
//
// Performance: each encryption or decryption walks about log2 of the domain
// size levels of the tree (34 for Cipher32, 66 for Cipher64). The splits of
// the top levels (16 by default, WithCacheLevels) are cached per cipher
// after their first use, which saves half of the work for Cipher32.
// Ciphers are safe for concurrent use.
package ope

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
)

// KeySize is the size, in bytes, of an OPE key (an AES-256 key from which the
// node coin keys are derived).
const KeySize = 32

// ErrDecrypt is the only error the decryption methods and ciphertext parsers
// return. It does not say why decryption failed.
var ErrDecrypt = errors.New("ope: invalid ciphertext")

var (
	errKeySize     = errors.New("ope: key must be 32 bytes")
	errCacheLevels = errors.New("ope: cache levels must be between 0 and 24")
)

// Option configures a cipher.
type Option func(*options)

type options struct{ cacheLevels int }

// WithCacheLevels sets how many top levels of the tree a cipher caches
// (0 to 24; default 16). The cache holds 2^levels 8-byte entries (512 KiB for
// 16 levels), filled lazily.
func WithCacheLevels(levels int) Option {
	return func(o *options) { o.cacheLevels = levels }
}

func buildOptions(opts []Option) options {
	o := options{cacheLevels: defaultCacheLevels}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Cipher32 encrypts 32-bit plaintexts to 64-bit order-preserving
// ciphertexts.
type Cipher32 struct{ t *tree }

// New32 returns a Cipher32 for the given 32-byte key.
func New32(key []byte, opts ...Option) (*Cipher32, error) {
	o := buildOptions(opts)
	t, err := newTree(key, 32, 64, o.cacheLevels)
	if err != nil {
		return nil, err
	}
	return &Cipher32{t}, nil
}

// EncryptOrderPreserving returns the ciphertext of v: for all a < b,
// EncryptOrderPreserving(a) < EncryptOrderPreserving(b).
func (c *Cipher32) EncryptOrderPreserving(v int32) uint64 {
	return c.EncryptUint32OrderPreserving(uint32(v) ^ 1<<31)
}

// DecryptOrderPreserving returns the plaintext of ct, or ErrDecrypt.
func (c *Cipher32) DecryptOrderPreserving(ct uint64) (int32, error) {
	u, err := c.DecryptUint32OrderPreserving(ct)
	return int32(u ^ 1<<31), err
}

// EncryptUint32OrderPreserving returns the ciphertext of the unsigned v.
// Note that the unsigned and the signed methods map the same bits to
// different ciphertexts: use one of them per column.
func (c *Cipher32) EncryptUint32OrderPreserving(v uint32) uint64 {
	return c.t.encrypt(u64(uint64(v))).lo
}

// DecryptUint32OrderPreserving inverts EncryptUint32OrderPreserving.
func (c *Cipher32) DecryptUint32OrderPreserving(ct uint64) (uint32, error) {
	m, ok := c.t.decrypt(u64(ct))
	if !ok {
		return 0, ErrDecrypt
	}
	return uint32(m.lo), nil
}

// Cipher64 encrypts 64-bit plaintexts to 128-bit order-preserving
// ciphertexts.
type Cipher64 struct{ t *tree }

// New64 returns a Cipher64 for the given 32-byte key.
func New64(key []byte, opts ...Option) (*Cipher64, error) {
	o := buildOptions(opts)
	t, err := newTree(key, 64, 128, o.cacheLevels)
	if err != nil {
		return nil, err
	}
	return &Cipher64{t}, nil
}

// EncryptOrderPreserving returns the ciphertext of v: for all a < b,
// EncryptOrderPreserving(a) < EncryptOrderPreserving(b).
func (c *Cipher64) EncryptOrderPreserving(v int64) Uint128 {
	return c.EncryptUint64OrderPreserving(uint64(v) ^ 1<<63)
}

// DecryptOrderPreserving returns the plaintext of ct, or ErrDecrypt.
func (c *Cipher64) DecryptOrderPreserving(ct Uint128) (int64, error) {
	u, err := c.DecryptUint64OrderPreserving(ct)
	return int64(u ^ 1<<63), err
}

// EncryptUint64OrderPreserving returns the ciphertext of the unsigned v.
// The unsigned and the signed methods map the same bits to different
// ciphertexts: use one of them per column.
func (c *Cipher64) EncryptUint64OrderPreserving(v uint64) Uint128 {
	r := c.t.encrypt(u64(v))
	return Uint128{Hi: r.hi, Lo: r.lo}
}

// DecryptUint64OrderPreserving inverts EncryptUint64OrderPreserving.
func (c *Cipher64) DecryptUint64OrderPreserving(ct Uint128) (uint64, error) {
	m, ok := c.t.decrypt(u128{ct.Hi, ct.Lo})
	if !ok {
		return 0, ErrDecrypt
	}
	return m.lo, nil
}

// CiphertextToInt8 maps a Cipher32 ciphertext to an int64 whose signed order
// is the ciphertexts' unsigned order (it flips the sign bit), for an int8
// column.
func CiphertextToInt8(ct uint64) int64 { return int64(ct ^ 1<<63) }

// CiphertextFromInt8 inverts CiphertextToInt8.
func CiphertextFromInt8(v int64) uint64 { return uint64(v) ^ 1<<63 }

// AppendCiphertext32 appends the 8-byte big-endian form of a Cipher32
// ciphertext (for a bytea column) to dst.
func AppendCiphertext32(dst []byte, ct uint64) []byte {
	return binary.BigEndian.AppendUint64(dst, ct)
}

// ParseCiphertext32 parses the 8-byte big-endian form; any other length
// gives ErrDecrypt.
func ParseCiphertext32(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, ErrDecrypt
	}
	return binary.BigEndian.Uint64(b), nil
}

// Uint128 is a Cipher64 ciphertext.
type Uint128 struct{ Hi, Lo uint64 }

// Cmp returns -1, 0 or +1 as a is less than, equal to or greater than b.
func (a Uint128) Cmp(b Uint128) int { return u128{a.Hi, a.Lo}.cmp(u128{b.Hi, b.Lo}) }

// Bytes returns the 16-byte big-endian form (for a bytea column: bytea
// order is the numeric order).
func (a Uint128) Bytes() []byte { return a.AppendBytes(make([]byte, 0, 16)) }

// AppendBytes appends the 16-byte big-endian form to dst.
func (a Uint128) AppendBytes(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, a.Hi)
	return binary.BigEndian.AppendUint64(dst, a.Lo)
}

// String returns the decimal form (for a numeric column).
func (a Uint128) String() string {
	if a.Hi == 0 {
		return uitoa(a.Lo)
	}
	// Two divisions by 10^19 split a into base-10^19 digits.
	const e19 = 10_000_000_000_000_000_000
	q1, r1 := bits.Div64(0, a.Hi, e19)
	q0, r0 := bits.Div64(r1, a.Lo, e19) // a = (q1*2^64 + q0)*10^19 + r0
	high := Uint128{Hi: q1, Lo: q0}
	s := high.String()
	low := uitoa(r0)
	for len(low) < 19 {
		low = "0" + low
	}
	return s + low
}

func uitoa(v uint64) string { return strconv.FormatUint(v, 10) }

// Uint128FromBytes parses the 16-byte big-endian form; any other length
// gives ErrDecrypt.
func Uint128FromBytes(b []byte) (Uint128, error) {
	if len(b) != 16 {
		return Uint128{}, ErrDecrypt
	}
	return Uint128{Hi: binary.BigEndian.Uint64(b), Lo: binary.BigEndian.Uint64(b[8:])}, nil
}

// ParseUint128 parses the decimal form (digits only, as PostgreSQL prints
// an integral numeric); anything else, or a value of 2^128 or more, gives
// ErrDecrypt.
func ParseUint128(s string) (Uint128, error) {
	if len(s) == 0 || len(s) > 39 {
		return Uint128{}, ErrDecrypt
	}
	var hi, lo uint64
	for i := 0; i < len(s); i++ {
		d := s[i]
		if d < '0' || d > '9' {
			return Uint128{}, ErrDecrypt
		}
		// (hi, lo) = (hi, lo)*10 + d
		h1, l1 := bits.Mul64(lo, 10)
		h2, l2 := bits.Mul64(hi, 10)
		if h2 != 0 {
			return Uint128{}, ErrDecrypt
		}
		var c uint64
		hi, c = bits.Add64(l2, h1, 0)
		if c != 0 {
			return Uint128{}, ErrDecrypt
		}
		lo, c = bits.Add64(l1, uint64(d-'0'), 0)
		hi, c = bits.Add64(hi, 0, c)
		if c != 0 {
			return Uint128{}, ErrDecrypt
		}
	}
	return Uint128{Hi: hi, Lo: lo}, nil
}

// Package det implements the DET layer of the Eq onion: deterministic
// encryption, which lets the server evaluate =, <>, IN, GROUP BY, DISTINCT
// and equi-joins over ciphertexts.
//
// Three schemes are provided:
//
//   - Cipher: AES-SIV (RFC 5297, AES-CMAC-SIV with a 64-byte key, that is
//     AES-256 for both the S2V MAC and CTR), with the column identity as the
//     single associated data component: the construction and format of
//     tink-go's daead/subtle.AESSIV, which the tests use as the reference
//     (with the RFC 5297 vectors). This implementation computes the S2V
//     state of the column identity and the AES key schedules once per
//     column instead of once per value, which makes it several times
//     faster. For strings, byte strings and wide values; stored as bytea.
//     The ciphertext is the 16-byte synthetic IV followed by the
//     CTR-encrypted plaintext, so it is exactly 16 bytes longer than the
//     plaintext.
//   - Block: AES Key Wrap with Padding (RFC 5649) in its single-block
//     case, for plaintexts of 1 to 8 bytes such as the integer form of an
//     integer, date or timestamp: one 16-byte AES block, authenticated by
//     64 bits of redundancy, with no associated data (the key is the
//     column's). Stored as bytea.
//   - Int64: FF1 (NIST SP 800-38G) with radix 2 on 64 bits, a tweakable
//     pseudorandom permutation of the 64-bit integers, with the column
//     identity as the tweak. An integer encrypts to an integer, so DET
//     integers fit an int8 column and its compact, fast indexes.
//
// What the server learns from a column at the DET layer (its leakage):
//
//   - equality: which rows hold equal values, and so the frequency of every
//     value (frequency analysis against a known distribution can recover
//     values of low-entropy columns);
//   - for Cipher, the exact plaintext length (ciphertext length minus 16);
//     for Block, nothing (every ciphertext is 16 bytes);
//     for Int64, nothing about the magnitude: every integer maps to a
//     uniformly looking 64-bit integer;
//   - nullness, which the layer does not hide (NULL stays NULL).
//
// Ciphertexts are bound to their column: a Cipher ciphertext copied into
// another column fails to decrypt, and so does a Block ciphertext when the
// columns' keys differ (derive them from the column identity); an Int64 ciphertext copied into another
// column decrypts to an unrelated integer (Int64 has no authentication).
//
// Cipher.DecryptDeterministically and Block.DecryptDeterministically
// return ErrDecrypt for every failure, and never say which check failed.
package det

import (
	"errors"
	"fmt"

	"github.com/pgonion/pgonion/internal/schemes/ff1"
)

const (
	// KeySize is the size, in bytes, of a Cipher key (AES-SIV with two
	// AES-256 keys).
	KeySize = 64

	// Int64KeySize is the size, in bytes, of an Int64 key (AES-256).
	Int64KeySize = 32

	// Overhead is how much longer a Cipher ciphertext is than its
	// plaintext: the 16-byte synthetic IV.
	Overhead = 16

	// MaxPlaintextLen is the longest plaintext EncryptDeterministically
	// accepts (1 GiB, PostgreSQL's limit for a bytea value).
	MaxPlaintextLen = 1 << 30
)

// ErrDecrypt is the only error DecryptDeterministically returns. It does not
// say why decryption failed.
var ErrDecrypt = errors.New("det: message authentication failed")

// Cipher is AES-SIV deterministic authenticated encryption bound to one
// column. It is safe for concurrent use.
type Cipher struct {
	siv *siv
}

// New returns a Cipher with key (KeySize bytes) for the column identified by
// columnID, which becomes the associated data of every ciphertext. columnID
// should be the column's stable random id (not its name, so that renaming
// a column keeps its ciphertexts valid). key and columnID are not retained.
func New(key, columnID []byte) (*Cipher, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("det: invalid key size %d, want %d bytes", len(key), KeySize)
	}
	s, err := newSIV(key, columnID)
	if err != nil {
		return nil, fmt.Errorf("det: %v", err)
	}
	return &Cipher{siv: s}, nil
}

// EncryptDeterministically returns the AES-SIV encryption of plaintext with
// the column identity as associated data: a new slice of len(plaintext) +
// Overhead bytes. plaintext is not modified. The error is non-nil only for
// a plaintext too long to encrypt (more than MaxPlaintextLen bytes).
//
// Warning: the result is deterministic: equal plaintexts of the column give
// equal ciphertexts, which reveals equality and frequencies to whoever sees
// the ciphertexts. The ciphertext also reveals the plaintext's exact length.
func (c *Cipher) EncryptDeterministically(plaintext []byte) ([]byte, error) {
	if len(plaintext) > MaxPlaintextLen {
		return nil, errors.New("det: plaintext too long")
	}
	return c.siv.seal(plaintext), nil
}

// DecryptDeterministically authenticates and decrypts a ciphertext of
// EncryptDeterministically for this column and returns the plaintext in a
// new slice. Any failure (wrong length, wrong key or column, modified
// ciphertext) returns nil and ErrDecrypt. ciphertext is not modified.
func (c *Cipher) DecryptDeterministically(ciphertext []byte) ([]byte, error) {
	pt, ok := c.siv.open(ciphertext)
	if !ok {
		return nil, ErrDecrypt
	}
	return pt, nil
}

// Int64 is a deterministic encryption of 64-bit integers into 64-bit
// integers for one column: FF1 with radix 2 on 64 bits over AES-256, with
// the column identity as the FF1 tweak. It is a permutation: distinct
// integers have distinct ciphertexts, and every int64 is the ciphertext of
// exactly one int64. It is safe for concurrent use.
//
// Warning: Int64 is not authenticated. Any int8 value, including one a
// malicious server made up or copied from another column, decrypts to some
// integer; callers that know the plaintext type's range (int2, int4) should
// reject decrypted values outside it, which catches most but not all
// tampering.
type Int64 struct {
	prp *ff1.Uint64
}

// NewInt64 returns an Int64 with key (Int64KeySize bytes) for the column
// identified by columnID, used as the FF1 tweak (at most ff1.MaxTweakLen
// bytes). key and columnID are not retained.
func NewInt64(key, columnID []byte) (*Int64, error) {
	if len(key) != Int64KeySize {
		return nil, fmt.Errorf("det: invalid int64 key size %d, want %d bytes", len(key), Int64KeySize)
	}
	if len(columnID) > ff1.MaxTweakLen {
		return nil, fmt.Errorf("det: column id of %d bytes is longer than %d", len(columnID), ff1.MaxTweakLen)
	}
	prp, err := ff1.NewUint64(key, columnID)
	if err != nil {
		return nil, fmt.Errorf("det: %v", err)
	}
	return &Int64{prp: prp}, nil
}

// EncryptInt64Deterministically returns the encryption of v, an int64 to
// store in an int8 column. The two's-complement bits of v are the FF1 input
// and output.
//
// Warning: the result is deterministic (equal integers give equal
// ciphertexts, revealing equality and frequencies), and it is not
// authenticated (see Int64).
func (c *Int64) EncryptInt64Deterministically(v int64) int64 {
	return int64(c.prp.Encrypt(uint64(v)))
}

// DecryptInt64 returns the integer that EncryptInt64Deterministically maps
// to ct. It never fails: every int64 decrypts to some integer.
func (c *Int64) DecryptInt64(ct int64) int64 {
	return int64(c.prp.Decrypt(uint64(ct)))
}

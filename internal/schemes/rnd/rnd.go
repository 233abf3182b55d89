// Package rnd implements the RND layer, the outermost layer of the Eq and
// Ord onions: probabilistic encryption, under which the server can compute
// nothing over the ciphertexts.
//
// Two schemes are provided:
//
//   - Cipher: AES-CBC with PKCS#7 padding and a per-row IV derived from the
//     row's salt as IV = AES_K(salt), peelable on the server (below).
//   - AEAD: AES-GCM with a random 96-bit nonce and the column identity (and
//     optionally the row's salt) as associated data, for columns whose RND
//     layer is never peeled. It is authenticated: a modified, truncated or
//     moved ciphertext fails to decrypt.
//
// Cipher is designed to be removable on an unmodified server with the
// standard pgcrypto extension. With the onion's RND key bound to $1, the
// statement
//
//	UPDATE t SET c = decrypt_iv(c, $1, encrypt(salt, $1, 'aes-ecb/pad:none'), 'aes-cbc/pad:pkcs')
//
// replaces each RND ciphertext by the exact inner-layer bytes (a DET or OPE
// ciphertext): encrypt(salt, key, 'aes-ecb/pad:none') is the IV, and
// pgcrypto picks AES-128, AES-192 or AES-256 by key length, as New does.
// PeelExpr writes the expression.
//
// What the server learns from a column at the RND layer (its leakage):
//
//   - the length class: a Cipher ciphertext of a p-byte plaintext has
//     16*(p/16 + 1) bytes (the plaintext length rounded down to a multiple
//     of 16, plus 16), one without padding (NewUnpadded) exactly p bytes,
//     which its callers keep fixed per column; an AEAD ciphertext has
//     exactly p + 28 bytes. Since
//     the RND layer wraps an inner ciphertext whose length follows the
//     plaintext's, this is a function of the plaintext length;
//   - nullness (NULL stays NULL);
//   - for Cipher, when one row is rewritten with the same salt and key (the
//     salt is per row, not per write): whether the old and new values
//     share a prefix of whole 16-byte blocks, to whoever has kept the old
//     ciphertext (a WAL archive, a backup). Refresh the row's salt when
//     rewriting a value to avoid this;
//   - nothing else: there is no equality or order between ciphertexts.
//
// When a column's RND layer is peeled with pgcrypto, its RND key is sent to
// the server (in the UPDATE statement, so possibly in its logs), as in
// CryptDB: after that the server can remove the layer of every row of that
// onion, and the column leaks what its inner layer leaks.
//
// Cipher is not authenticated: a modified ciphertext decrypts either to
// ErrDecrypt (bad padding) or to garbage, which the inner layer (AES-SIV of
// package det) then rejects; OPE and FF1 inner layers do not detect it.
// Every failed decryption returns the same error, ErrDecrypt.
package rnd

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

const (
	// SaltSize is the size, in bytes, of the per-row salt from which Cipher
	// derives the IV. It is one AES block, so that pgcrypto can compute
	// the IV with encrypt(salt, key, 'aes-ecb/pad:none').
	SaltSize = aes.BlockSize

	// BlockSize is the AES block size; Cipher ciphertexts are multiples of it.
	BlockSize = aes.BlockSize

	// AEADOverhead is how much longer an AEAD ciphertext is than its
	// plaintext: a 12-byte nonce and a 16-byte tag.
	AEADOverhead = 12 + 16
)

// ErrDecrypt is the only error Decrypt returns. It does not say why
// decryption failed.
var ErrDecrypt = errors.New("rnd: message authentication failed")

// NewSalt returns a fresh random salt of SaltSize bytes from crypto/rand.
func NewSalt() []byte {
	s := make([]byte, SaltSize)
	rand.Read(s) // never fails (see crypto/rand.Read)
	return s
}

// NewSalts returns n fresh random salts back to back (n*SaltSize bytes)
// from one read of crypto/rand.
func NewSalts(n int) []byte {
	s := make([]byte, n*SaltSize)
	rand.Read(s) // never fails (see crypto/rand.Read)
	return s
}

// Cipher is the pgcrypto-peelable RND layer: AES-CBC, PKCS#7 padding, IV =
// AES_K(salt); or, made by NewUnpadded, AES-CBC without padding for
// plaintexts of a fixed length that is a multiple of 16 bytes. It is safe
// for concurrent use.
type Cipher struct {
	block    cipher.Block
	unpadded bool
}

// NewUnpadded returns a Cipher like New's but without padding: its
// plaintexts must be a positive multiple of 16 bytes long (such as the
// 16-byte ciphertexts of det.Block), and ciphertexts are exactly as long
// as their plaintexts, where PKCS#7 adds a whole block. Use it only for an
// inner layer whose length the column's type fixes, so that the length
// reveals nothing; PeelExpr then peels with pgcrypto's pad:none.
func NewUnpadded(key []byte) (*Cipher, error) {
	c, err := New(key)
	if err != nil {
		return nil, err
	}
	c.unpadded = true
	return c, nil
}

// New returns a Cipher with key, 16, 24 or 32 bytes (AES-128, AES-192 or
// AES-256). The key is not retained after the AES key schedule.
func New(key []byte) (*Cipher, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return nil, fmt.Errorf("rnd: invalid key size %d, want 16, 24 or 32 bytes", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("rnd: %v", err)
	}
	return &Cipher{block: block}, nil
}

// CiphertextLen returns the length of a Cipher ciphertext (from New) of
// an n-byte plaintext: n rounded down to a multiple of 16, plus 16.
func CiphertextLen(n int) int { return n - n%BlockSize + BlockSize }

// CiphertextLen returns the length of c's ciphertext of an n-byte
// plaintext: the package's CiphertextLen(n), or n without padding.
func (c *Cipher) CiphertextLen(n int) int {
	if c.unpadded {
		return n
	}
	return CiphertextLen(n)
}

// EncryptProbabilistically appends the encryption of plaintext under salt to
// dst and returns the extended slice. salt must be SaltSize bytes, and
// fresh and random for each row (see NewSalt); it is stored in the clear
// beside the ciphertext. plaintext and salt are not modified; dst may not
// overlap them. To avoid allocation, give dst a capacity of at least
// len(dst) + CiphertextLen(len(plaintext)).
//
// Warning: the randomness comes from the salt alone. Encrypting two
// plaintexts with the same key and salt reveals whether they begin with the
// same 16-byte blocks, and encrypting the same plaintext twice gives the
// same ciphertext. EncryptProbabilistically panics if salt is not SaltSize
// bytes, or if c has no padding and plaintext is not a positive multiple
// of 16 bytes.
func (c *Cipher) EncryptProbabilistically(dst, plaintext, salt []byte) []byte {
	if len(salt) != SaltSize {
		panic(fmt.Sprintf("rnd: salt of %d bytes, want %d", len(salt), SaltSize))
	}
	if c.unpadded && (len(plaintext) == 0 || len(plaintext)%BlockSize != 0) {
		panic(fmt.Sprintf("rnd: unpadded plaintext of %d bytes, want a positive multiple of %d", len(plaintext), BlockSize))
	}
	n := c.CiphertextLen(len(plaintext))
	start := len(dst)
	dst = grow(dst, n)
	out := dst[start : start+n]
	// out holds the IV in its first block until that block is encrypted.
	prev := out[:BlockSize]
	c.block.Encrypt(prev, salt)
	full := len(plaintext) - len(plaintext)%BlockSize
	for off := 0; off < n; off += BlockSize {
		blk := out[off : off+BlockSize]
		if off < full {
			subtle.XORBytes(blk, prev, plaintext[off:off+BlockSize])
		} else {
			// The last block: the plaintext's tail and PKCS#7 padding.
			pad := byte(BlockSize - len(plaintext)%BlockSize)
			tail := plaintext[off:]
			for i := range blk {
				var p byte = pad
				if i < len(tail) {
					p = tail[i]
				}
				blk[i] = prev[i] ^ p
			}
		}
		c.block.Encrypt(blk, blk)
		prev = blk
	}
	return dst
}

// Decrypt appends the decryption of ciphertext under salt to dst and
// returns the extended slice (give dst a spare capacity of
// len(ciphertext) + 16 bytes to avoid allocation). It returns nil and ErrDecrypt if the salt is
// not SaltSize bytes, the ciphertext is not a positive multiple of 16 bytes,
// or the padding is wrong; the padding is checked in constant time (a
// Cipher without padding checks nothing more).
// ciphertext and salt are not modified; dst may not overlap them.
//
// Warning: Cipher is not authenticated. A ciphertext modified by the server
// may decrypt without error to a wrong plaintext; rely on the inner layer to
// detect it.
func (c *Cipher) Decrypt(dst, ciphertext, salt []byte) ([]byte, error) {
	n := len(ciphertext)
	if len(salt) != SaltSize || n == 0 || n%BlockSize != 0 {
		return nil, ErrDecrypt
	}
	start := len(dst)
	// One block more than the plaintext holds the IV (a local array
	// passed to cipher.Block would escape to the heap on every call).
	dst = grow(dst, n+BlockSize)
	out := dst[start : start+n]
	iv := dst[start+n : start+n+BlockSize]
	c.block.Encrypt(iv, salt)
	prev := iv
	for off := 0; off < n; off += BlockSize {
		blk := ciphertext[off : off+BlockSize]
		c.block.Decrypt(out[off:off+BlockSize], blk)
		subtle.XORBytes(out[off:off+BlockSize], out[off:off+BlockSize], prev)
		prev = blk
	}
	clear(iv)
	dst = dst[:start+n]
	if c.unpadded {
		return dst, nil
	}
	// PKCS#7: the last byte p is in 1..16 and the last p bytes all equal p.
	last := out[n-BlockSize:]
	pad := last[BlockSize-1]
	good := subtle.ConstantTimeLessOrEq(1, int(pad)) & subtle.ConstantTimeLessOrEq(int(pad), BlockSize)
	for i := 0; i < BlockSize; i++ {
		// Byte i of the last block is padding if i + pad >= 16.
		isPad := subtle.ConstantTimeLessOrEq(BlockSize, i+int(pad))
		eq := subtle.ConstantTimeByteEq(last[i], pad)
		good &= subtle.ConstantTimeSelect(isPad, eq, 1)
	}
	if good != 1 {
		clear(out)
		return nil, ErrDecrypt
	}
	return dst[:start+n-int(pad)], nil
}

// PeelExpr returns the SQL expression that removes a Cipher layer on the
// server with pgcrypto: the inner-layer bytes of the bytea ciphertext
// column (or expression) ct, given the bytea salt column salt and the key
// expression key (normally a parameter such as "$1", bound to the RND key
// as bytea). The arguments are inserted verbatim: they must be trusted SQL
// (quoted identifiers or parameter references), never user input. For
// example PeelExpr(`"c_eq"`, `"salt"`, "$1") gives
//
//	decrypt_iv("c_eq", $1, encrypt("salt", $1, 'aes-ecb/pad:none'), 'aes-cbc/pad:pkcs')
//
// The expression fails (the statement errors) on a row whose padding is
// wrong, that is on a corrupt ciphertext or the wrong key. PeelExpr is for
// a Cipher from New; see Cipher.PeelExpr.
func PeelExpr(ct, salt, key string) string {
	return peelExpr(ct, salt, key, "pkcs")
}

// PeelExpr is the package's PeelExpr for c: with pgcrypto's pad:none for a
// Cipher without padding (which cannot detect a wrong key or a corrupt
// ciphertext: rely on the inner layer).
func (c *Cipher) PeelExpr(ct, salt, key string) string {
	if c.unpadded {
		return peelExpr(ct, salt, key, "none")
	}
	return peelExpr(ct, salt, key, "pkcs")
}

func peelExpr(ct, salt, key, pad string) string {
	var b strings.Builder
	b.WriteString("decrypt_iv(")
	b.WriteString(ct)
	b.WriteString(", ")
	b.WriteString(key)
	b.WriteString(", encrypt(")
	b.WriteString(salt)
	b.WriteString(", ")
	b.WriteString(key)
	b.WriteString(", 'aes-ecb/pad:none'), 'aes-cbc/pad:")
	b.WriteString(pad)
	b.WriteString("')")
	return b.String()
}

// grow extends b by n bytes, reallocating if needed, and returns it.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// AEAD is the authenticated RND layer for columns that are never peeled:
// AES-GCM with a random 96-bit nonce, bound to one column by associated
// data. A ciphertext is standard AES-GCM output prefixed with its nonce,
// nonce (12 bytes) || ciphertext || tag (16 bytes), with associated data
// uvarint(len(columnID)) || columnID || salt. It is safe for concurrent
// use.
type AEAD struct {
	aead cipher.AEAD
	// ad is the length-prefixed column identity; the salt is appended per
	// call.
	ad []byte
}

// NewAEAD returns an AEAD with key (16 or 32 bytes: AES-128-GCM or
// AES-256-GCM) for the column identified by columnID. key and columnID are
// not retained (columnID is copied).
func NewAEAD(key, columnID []byte) (*AEAD, error) {
	switch len(key) {
	case 16, 32:
	default:
		return nil, fmt.Errorf("rnd: invalid AEAD key size %d, want 16 or 32 bytes", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("rnd: %v", err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("rnd: %v", err)
	}
	ad := binary.AppendUvarint(nil, uint64(len(columnID)))
	ad = append(ad, columnID...)
	return &AEAD{aead: aead, ad: ad}, nil
}

func (a *AEAD) associatedData(salt []byte) []byte {
	if len(salt) == 0 {
		return a.ad
	}
	ad := make([]byte, 0, len(a.ad)+len(salt))
	return append(append(ad, a.ad...), salt...)
}

// EncryptProbabilistically appends to dst the encryption of plaintext, a
// random nonce followed by the AES-GCM ciphertext and tag
// (len(plaintext) + AEADOverhead bytes), and returns the extended slice.
// The associated data is the column identity followed by salt; salt may be
// nil, or the row's salt to bind the ciphertext to its row (then Decrypt
// needs the same salt). plaintext and salt are not modified.
//
// Warning: nonces are random 96-bit values, so a single key should encrypt
// no more than about 2^32 values (NIST SP 800-38D); derive one key per
// column. The ciphertext reveals the exact plaintext length.
func (a *AEAD) EncryptProbabilistically(dst, plaintext, salt []byte) []byte {
	return a.aead.Seal(dst, nil, plaintext, a.associatedData(salt))
}

// Decrypt authenticates and decrypts a ciphertext of EncryptProbabilistically
// made for this column with the same salt, appends the plaintext to dst and
// returns the extended slice. Any failure returns nil and ErrDecrypt.
// ciphertext and salt are not modified.
func (a *AEAD) Decrypt(dst, ciphertext, salt []byte) ([]byte, error) {
	if len(ciphertext) < AEADOverhead {
		return nil, ErrDecrypt
	}
	out, err := a.aead.Open(dst, nil, ciphertext, a.associatedData(salt))
	if err != nil {
		return nil, ErrDecrypt
	}
	return out, nil
}

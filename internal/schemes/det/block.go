package det

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
)

const (
	// BlockKeySize is the size, in bytes, of a Block key (AES-256).
	BlockKeySize = 32

	// BlockMaxPlaintextLen is the longest plaintext a Block encrypts.
	BlockMaxPlaintextLen = 8

	// BlockCiphertextLen is the length of every Block ciphertext: one AES
	// block.
	BlockCiphertextLen = aes.BlockSize
)

// aivPrefix is the constant first half of RFC 5649's alternative initial
// value (AIV); the second half is the plaintext length.
const aivPrefix = 0xA65959A6

// Block is deterministic authenticated encryption of short plaintexts (1
// to 8 bytes, such as the 8-byte integer form of an integer, date or
// timestamp) into exactly one AES block: AES Key Wrap with Padding (RFC
// 5649) in its single-block case, C = AES_K(0xA65959A6 || MLI || P), where
// MLI is the plaintext length as a 32-bit big-endian integer and P the
// plaintext zero-padded to 8 bytes. It is safe for concurrent use.
//
// It authenticates by redundancy (encode-then-encipher): decryption checks
// the constant, the length and the zero padding, 64 bits for an 8-byte
// plaintext, so a modified or made-up ciphertext is accepted with
// probability about 2^-64. A Block has no associated data: it is bound to
// its column by its key, which the caller derives from the column identity.
//
// Block ciphertexts are 16 bytes where Cipher's are len(plaintext)+16 (24
// for an 8-byte integer form), and the RND layer needs no padding block
// around them, so an integer column's Eq cell shrinks from 33 to 17 bytes
// on disk at RND and from 25 to 17 at DET.
//
// Warning: the result is deterministic: equal plaintexts give equal
// ciphertexts, which reveals equality and frequencies. The ciphertext
// length is constant and reveals nothing.
type Block struct {
	block cipher.Block
}

// NewBlock returns a Block with key (BlockKeySize bytes: AES-256; 16 and
// 24 bytes, AES-128 and AES-192, are accepted for the RFC 5649 test
// vectors). The key is not retained after the AES key schedule.
func NewBlock(key []byte) (*Block, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return nil, fmt.Errorf("det: invalid block key size %d, want %d bytes", len(key), BlockKeySize)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("det: %v", err)
	}
	return &Block{block: b}, nil
}

// EncryptDeterministically returns the encryption of plaintext (1 to
// BlockMaxPlaintextLen bytes) in a new slice of BlockCiphertextLen bytes.
// plaintext is not modified. The error is non-nil only for a plaintext of
// another length.
//
// Warning: the result is deterministic (see Block).
func (c *Block) EncryptDeterministically(plaintext []byte) ([]byte, error) {
	if len(plaintext) == 0 || len(plaintext) > BlockMaxPlaintextLen {
		return nil, fmt.Errorf("det: block plaintext of %d bytes, want 1 to %d", len(plaintext), BlockMaxPlaintextLen)
	}
	out := make([]byte, BlockCiphertextLen)
	binary.BigEndian.PutUint32(out[0:4], aivPrefix)
	binary.BigEndian.PutUint32(out[4:8], uint32(len(plaintext)))
	copy(out[8:], plaintext)
	c.block.Encrypt(out, out)
	return out, nil
}

// DecryptDeterministically authenticates and decrypts a ciphertext of
// EncryptDeterministically and returns the plaintext in a new slice. Any
// failure (wrong length, key or column, modified ciphertext) returns nil
// and ErrDecrypt. The checks are constant-time. ciphertext is not
// modified.
func (c *Block) DecryptDeterministically(ciphertext []byte) ([]byte, error) {
	return c.AppendDecryptDeterministically(nil, ciphertext)
}

// AppendDecryptDeterministically is DecryptDeterministically appending
// the plaintext to dst: with room for BlockCiphertextLen more bytes in
// dst it allocates nothing. On failure it returns nil, and the bytes it
// used past len(dst) are zeroed. ciphertext must not overlap dst's spare
// capacity.
func (c *Block) AppendDecryptDeterministically(dst, ciphertext []byte) ([]byte, error) {
	if len(ciphertext) != BlockCiphertextLen {
		return nil, ErrDecrypt
	}
	start := len(dst)
	// The block is decrypted in dst's spare room: a local array passed
	// to cipher.Block would escape to the heap at every call.
	dst = append(dst, make([]byte, BlockCiphertextLen)...)
	b := dst[start:]
	c.block.Decrypt(b, ciphertext)
	mli := binary.BigEndian.Uint32(b[4:8])
	var aiv [4]byte
	binary.BigEndian.PutUint32(aiv[:], aivPrefix)
	good := subtle.ConstantTimeCompare(b[0:4], aiv[:])
	good &= subtle.ConstantTimeLessOrEq(1, int(mli&0xff)) & subtle.ConstantTimeLessOrEq(int(mli&0xff), BlockMaxPlaintextLen)
	good &= subtle.ConstantTimeEq(int32(mli>>8), 0)
	n := int(mli & 0xff)
	for i := 0; i < BlockMaxPlaintextLen; i++ {
		// Byte i of P is padding if i >= n, and padding must be zero.
		isPad := subtle.ConstantTimeLessOrEq(n, i)
		good &= subtle.ConstantTimeSelect(isPad, subtle.ConstantTimeByteEq(b[8+i], 0), 1)
	}
	if good != 1 {
		clear(b)
		return nil, ErrDecrypt
	}
	copy(b, b[8:8+n])
	clear(b[n:])
	return dst[:start+n], nil
}

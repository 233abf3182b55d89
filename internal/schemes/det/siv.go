package det

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
)

// siv is AES-SIV (RFC 5297) with exactly one associated data component,
// fixed when it is created, so that the S2V work on the associated data is
// done once instead of on every call. Its output is byte for byte that of
// tink-go's daead/subtle.AESSIV with the same key and associated data (the
// tests check this, and the RFC 5297 vector A.1).
//
// Per message it costs one AES-CMAC over the plaintext and AES-CTR over the
// plaintext, with the AES key schedules and the CMAC subkeys computed once.
type siv struct {
	mac, ctr cipher.Block
	// k1 and k2 are the CMAC subkeys of the MAC key.
	k1, k2 [aes.BlockSize]byte
	// d is the S2V chaining value after the associated data,
	// dbl(CMAC(0^128)) xor CMAC(ad); dd is dbl(d), used for plaintexts
	// shorter than a block.
	d, dd [aes.BlockSize]byte
}

// ctrAsmThreshold is the plaintext length above which CTR uses the
// standard library's (assembly, multi-block) implementation rather than
// one block encryption at a time, which avoids its allocations for short
// values.
const ctrAsmThreshold = 128

// newSIV returns AES-SIV for key = K1 (S2V) || K2 (CTR), 32, 48 or 64 bytes,
// and the associated data ad.
func newSIV(key, ad []byte) (*siv, error) {
	switch len(key) {
	case 32, 48, 64:
	default:
		return nil, fmt.Errorf("det: invalid AES-SIV key size %d", len(key))
	}
	mac, err := aes.NewCipher(key[:len(key)/2])
	if err != nil {
		return nil, err
	}
	ctr, err := aes.NewCipher(key[len(key)/2:])
	if err != nil {
		return nil, err
	}
	s := &siv{mac: mac, ctr: ctr}
	var l [aes.BlockSize]byte
	mac.Encrypt(l[:], l[:])
	s.k1 = dbl(l)
	s.k2 = dbl(s.k1)

	// S2V over the associated data: D = CMAC(0); D = dbl(D) xor CMAC(ad).
	var zero [aes.BlockSize]byte
	d := dbl(s.cmac(zero[:]))
	adMac := s.cmac(ad)
	subtle.XORBytes(d[:], d[:], adMac[:])
	s.d = d
	s.dd = dbl(d)
	return s, nil
}

// dbl multiplies a block by x in GF(2^128) (RFC 5297 section 2.3), in
// constant time.
func dbl(b [aes.BlockSize]byte) [aes.BlockSize]byte {
	var out [aes.BlockSize]byte
	for i := 0; i < aes.BlockSize-1; i++ {
		out[i] = b[i]<<1 | b[i+1]>>7
	}
	out[aes.BlockSize-1] = b[aes.BlockSize-1]<<1 ^ byte(subtle.ConstantTimeSelect(int(b[0]>>7), 0x87, 0))
	return out
}

// cmac returns AES-CMAC (NIST SP 800-38B) of msg. It is used only when the
// cipher is created.
func (s *siv) cmac(msg []byte) [aes.BlockSize]byte {
	x := make([]byte, aes.BlockSize)
	s.cmacXorEnd(x, msg, nil)
	return [aes.BlockSize]byte(x)
}

// cmacXorEnd computes AES-CMAC of msg with its last 16 bytes xored with
// mask (if mask is not nil, len(msg) must be at least 16) into x, which must
// hold 16 zero bytes. x is the only buffer handed to the block cipher, so
// that callers can make it part of an existing allocation.
func (s *siv) cmacXorEnd(x, msg []byte, mask *[aes.BlockSize]byte) {
	n := len(msg)
	tail := n - aes.BlockSize // msg[tail:] is xored with mask
	blocks := (n + aes.BlockSize - 1) / aes.BlockSize
	if blocks == 0 {
		blocks = 1
	}
	for b := 0; b < blocks; b++ {
		lo := b * aes.BlockSize
		hi := min(lo+aes.BlockSize, n)
		subtle.XORBytes(x, x, msg[lo:hi])
		if mask != nil && hi > tail {
			for j := max(lo, tail); j < hi; j++ {
				x[j-lo] ^= mask[j-tail]
			}
		}
		if b == blocks-1 {
			if hi-lo == aes.BlockSize {
				subtle.XORBytes(x, x, s.k1[:])
			} else {
				x[hi-lo] ^= 0x80
				subtle.XORBytes(x, x, s.k2[:])
			}
		}
		s.mac.Encrypt(x, x)
	}
}

// s2v computes the synthetic IV of msg into v (16 zero bytes).
func (s *siv) s2v(v, msg []byte) {
	if len(msg) >= aes.BlockSize {
		s.cmacXorEnd(v, msg, &s.d)
		return
	}
	// T = dbl(D) xor pad(msg): one complete block.
	copy(v, s.dd[:])
	subtle.XORBytes(v, v, msg)
	v[len(msg)] ^= 0x80
	subtle.XORBytes(v, v, s.k1[:])
	s.mac.Encrypt(v, v)
}

// ctrXOR sets dst = src xor the CTR keystream starting at counter block q
// (16 bytes, modified). scratch is 16 bytes of working space.
func (s *siv) ctrXOR(dst, src, q, scratch []byte) {
	if len(src) > ctrAsmThreshold {
		cipher.NewCTR(s.ctr, q).XORKeyStream(dst, src)
		return
	}
	for off := 0; off < len(src); off += aes.BlockSize {
		s.ctr.Encrypt(scratch, q)
		end := min(off+aes.BlockSize, len(src))
		subtle.XORBytes(dst[off:end], src[off:end], scratch)
		// Increment the 128-bit big-endian counter.
		lo := binary.BigEndian.Uint64(q[8:]) + 1
		binary.BigEndian.PutUint64(q[8:], lo)
		if lo == 0 {
			binary.BigEndian.PutUint64(q[:8], binary.BigEndian.Uint64(q[:8])+1)
		}
	}
}

// seal returns V || CTR(plaintext) in a new slice.
func (s *siv) seal(plaintext []byte) []byte {
	n := len(plaintext)
	// One allocation: the ciphertext, then 32 bytes of hidden working
	// space for the counter and the keystream.
	buf := make([]byte, aes.BlockSize+n+2*aes.BlockSize)
	out := buf[:aes.BlockSize+n]
	q, scratch := buf[aes.BlockSize+n:aes.BlockSize+n+aes.BlockSize], buf[aes.BlockSize+n+aes.BlockSize:]
	v := out[:aes.BlockSize]
	s.s2v(v, plaintext)
	copy(q, v)
	q[8] &= 0x7f
	q[12] &= 0x7f
	s.ctrXOR(out[aes.BlockSize:], plaintext, q, scratch)
	clear(buf[len(out):])
	return out[:len(out):len(out)]
}

// open returns the plaintext of ciphertext in a new slice, or false if it
// is shorter than a block or its synthetic IV does not verify.
func (s *siv) open(ciphertext []byte) ([]byte, bool) {
	if len(ciphertext) < aes.BlockSize {
		return nil, false
	}
	v := ciphertext[:aes.BlockSize]
	n := len(ciphertext) - aes.BlockSize
	buf := make([]byte, n+3*aes.BlockSize)
	out := buf[:n]
	q := buf[n : n+aes.BlockSize]
	scratch := buf[n+aes.BlockSize : n+2*aes.BlockSize]
	check := buf[n+2*aes.BlockSize:]
	copy(q, v)
	q[8] &= 0x7f
	q[12] &= 0x7f
	s.ctrXOR(out, ciphertext[aes.BlockSize:], q, scratch)
	s.s2v(check, out)
	ok := subtle.ConstantTimeCompare(check, v) == 1
	if !ok {
		clear(buf)
		return nil, false
	}
	clear(buf[n:])
	return out[:n:n], true
}

package hom

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"math/big"
	"testing"
)

// Per-core figures: run with -cpu 1.

var benchSizes = []int{2048, 3072}

// BenchmarkPaillierEncryptWarm is the cost of an encryption when the pool
// has a randomizer ready (the refill runs in the background).
func BenchmarkPaillierEncryptWarm(b *testing.B) {
	for _, bits := range benchSizes {
		b.Run(fmt.Sprint(bits), func(b *testing.B) {
			sk := testKey(b, bits)
			e := newEnc(b, sk)
			e.Close() // no background work during the measurement
			rs := make([]randomizer, 64)
			for i := range rs {
				rs[i] = e.newRandomizer()
			}
			m := big.NewInt(-123456789)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				em, _ := sk.encode(m)
				r := rs[i%len(rs)]
				_ = &Ciphertext{sk.withRandomizer(em, r.rn, r.rnModN)}
			}
		})
	}
}

// BenchmarkPaillierRandomizer is the cost of one pool refill: the sustained
// per-core cost of encryption.
func BenchmarkPaillierRandomizer(b *testing.B) {
	for _, bits := range benchSizes {
		b.Run(fmt.Sprint(bits), func(b *testing.B) {
			e := newEnc(b, testKey(b, bits))
			e.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e.newRandomizer()
			}
		})
	}
}

func BenchmarkPaillierEncryptPublicKey(b *testing.B) {
	sk := testKey(b, 2048)
	for i := 0; i < b.N; i++ {
		sk.PublicKey.Encrypt(nil, big.NewInt(5))
	}
}

func BenchmarkPaillierDecrypt(b *testing.B) {
	for _, bits := range benchSizes {
		b.Run(fmt.Sprint(bits), func(b *testing.B) {
			sk := testKey(b, bits)
			e := newEnc(b, sk)
			c := e.EncryptInt64(-42)
			e.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := sk.Decrypt(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPaillierAdd(b *testing.B) {
	for _, bits := range benchSizes {
		b.Run(fmt.Sprint(bits), func(b *testing.B) {
			sk := testKey(b, bits)
			e := newEnc(b, sk)
			c1, c2 := e.EncryptInt64(1), e.EncryptInt64(2)
			e.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c1 = sk.Add(c1, c2)
			}
		})
	}
}

func BenchmarkPaillierAddPlain(b *testing.B) {
	for _, bits := range benchSizes {
		b.Run(fmt.Sprint(bits), func(b *testing.B) {
			sk := testKey(b, bits)
			e := newEnc(b, sk)
			c := e.EncryptInt64(1)
			e.Close()
			k := big.NewInt(-5)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c, _ = sk.AddPlain(c, k)
			}
		})
	}
}

func BenchmarkPaillierNewEncrypter(b *testing.B) {
	for _, bits := range benchSizes {
		b.Run(fmt.Sprint(bits), func(b *testing.B) {
			sk := testKey(b, bits)
			for i := 0; i < b.N; i++ {
				e, _ := NewEncrypter(sk, EncrypterOptions{PoolSize: 1})
				e.Close()
			}
		})
	}
}

// BenchmarkPaillierAccumulate is the in-proxy SUM cost per ciphertext
// (Karatsuba product + Montgomery reduction), without fetching.
func BenchmarkPaillierAccumulate(b *testing.B) {
	for _, bits := range benchSizes {
		b.Run(fmt.Sprint(bits), func(b *testing.B) {
			sk := testKey(b, bits)
			e := newEnc(b, sk)
			cs := []*Ciphertext{e.EncryptInt64(1), e.EncryptInt64(2), e.EncryptInt64(3)}
			e.Close()
			acc := sk.NewAccumulator()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				acc.Add(cs[i%3])
			}
		})
	}
}

// BenchmarkPaillierSumBaselineAESGCM is the per-row cost of the alternative
// to Paillier for in-proxy sums: decrypting an AES-256-GCM ciphertext of an
// int64 (an RND-layer value) and adding it. For comparison only.
func BenchmarkPaillierSumBaselineAESGCM(b *testing.B) {
	key := make([]byte, 32)
	blk, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(blk)
	nonce := make([]byte, aead.NonceSize())
	ct := aead.Seal(nil, nonce, binary.BigEndian.AppendUint64(nil, 12345), nil)
	var sum int64
	buf := make([]byte, 0, 8)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pt, err := aead.Open(buf[:0], nonce, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		sum += int64(binary.BigEndian.Uint64(pt))
	}
	_ = sum
}

package hom

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"sync"
	"testing"
)

func newEnc(t testing.TB, sk *PrivateKey) *Encrypter {
	t.Helper()
	e, err := NewEncrypter(sk, EncrypterOptions{PoolSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func TestRoundTrip(t *testing.T) {
	for _, bits := range []int{2048, 3072} {
		t.Run(fmt.Sprint(bits), func(t *testing.T) {
			sk := testKey(t, bits)
			e := newEnc(t, sk)
			half := new(big.Int).Rsh(sk.N(), 1)
			vals := []*big.Int{big.NewInt(0), big.NewInt(1), big.NewInt(-1), big.NewInt(1 << 62), big.NewInt(-1 << 63),
				half, new(big.Int).Neg(half), new(big.Int).Sub(half, big.NewInt(1))}
			for i, m := range vals {
				c, err := e.Encrypt(m)
				if err != nil {
					t.Fatal(err)
				}
				got, err := sk.Decrypt(c)
				if err != nil || got.Cmp(m) != 0 {
					t.Fatalf("round trip of %v: %v, %v", m, got, err)
				}
				if i < 3 { // the slow public-key path too
					c2, err := sk.PublicKey.Encrypt(nil, m)
					if err != nil {
						t.Fatal(err)
					}
					if got, err := sk.Decrypt(c2); err != nil || got.Cmp(m) != 0 {
						t.Fatalf("PublicKey.Encrypt round trip of %v: %v, %v", m, got, err)
					}
				}
			}
			for _, m := range []*big.Int{new(big.Int).Add(half, big.NewInt(1)), sk.N(), new(big.Int).Neg(new(big.Int).Add(half, big.NewInt(1)))} {
				if _, err := e.Encrypt(m); err != ErrPlaintextRange {
					t.Errorf("Encrypt(out of range) = %v", err)
				}
			}
		})
	}
}

func TestHomomorphism(t *testing.T) {
	sk := testKey(t, 2048)
	pk := sk.Public()
	e := newEnc(t, sk)
	r := mrand.New(mrand.NewPCG(1, 1))
	tests := [][]int64{
		{1, 2, 3},
		{-5, 3},
		{-1 << 63, -1 << 63, -1 << 63},
		{1<<63 - 1, 1<<63 - 1, 1},
		{0},
		{7, -7},
	}
	var random []int64
	for i := 0; i < 50; i++ {
		random = append(random, r.Int64()-r.Int64())
	}
	tests = append(tests, random)
	for _, vals := range tests {
		want := new(big.Int)
		var acc *Ciphertext
		for _, v := range vals {
			want.Add(want, big.NewInt(v))
			c := e.EncryptInt64(v)
			if acc == nil {
				acc = c
			} else {
				acc = pk.Add(acc, c)
			}
		}
		if got, err := sk.Decrypt(acc); err != nil || got.Cmp(want) != 0 {
			t.Errorf("sum of %v: %v, %v; want %v", vals, got, err, want)
		}
		// AddPlain shifts the sum.
		k := big.NewInt(-123456789)
		shifted, err := pk.AddPlain(acc, k)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := sk.Decrypt(shifted); err != nil || got.Cmp(new(big.Int).Add(want, k)) != 0 {
			t.Errorf("AddPlain: %v, %v", got, err)
		}
	}
	if v, err := sk.DecryptInt64(pk.Add(e.EncryptInt64(1<<62), e.EncryptInt64(1<<62))); err != ErrOverflow {
		t.Errorf("DecryptInt64 of 2^63: %d, %v", v, err)
	}
	if v, err := sk.DecryptInt64(e.EncryptInt64(-42)); err != nil || v != -42 {
		t.Errorf("DecryptInt64(-42) = %d, %v", v, err)
	}
}

func TestRandomized(t *testing.T) {
	sk := testKey(t, 2048)
	e := newEnc(t, sk)
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		c := e.EncryptInt64(5)
		if seen[c.Numeric()] {
			t.Fatal("two encryptions of 5 are equal")
		}
		seen[c.Numeric()] = true
		rr := e.Rerandomize(c)
		if rr.Equal(c) {
			t.Fatal("Rerandomize returned the same ciphertext")
		}
		if v, err := sk.DecryptInt64(rr); err != nil || v != 5 {
			t.Fatalf("rerandomized: %d, %v", v, err)
		}
	}
	// The pool drains and refills concurrently; inline computation when
	// empty still works.
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				if v, err := sk.DecryptInt64(e.EncryptInt64(int64(i))); err != nil || v != int64(i) {
					t.Errorf("concurrent: %d, %v", v, err)
				}
			}
		}()
	}
	wg.Wait()
	e.Close()
	if v, err := sk.DecryptInt64(e.EncryptInt64(9)); err != nil || v != 9 {
		t.Errorf("after Close: %d, %v", v, err)
	}
}

func TestInvalidCiphertexts(t *testing.T) {
	sk := testKey(t, 2048)
	pk := sk.Public()
	p, q := sk.crt[0].s, sk.crt[1].s
	nsq := pk.NSquared()
	bad := map[string]*big.Int{
		"0":       big.NewInt(0),
		"n²":      nsq,
		"n²+1":    new(big.Int).Add(nsq, big.NewInt(1)),
		"p":       p,
		"3p":      new(big.Int).Mul(p, big.NewInt(3)),
		"q":       q,
		"n":       pk.N(),
		"n²-n":    new(big.Int).Sub(nsq, pk.N()),
		"2^bits":  new(big.Int).Lsh(big.NewInt(1), uint(8*pk.CiphertextSize())),
		"p·q²-p²": new(big.Int).Mul(p, new(big.Int).Sub(new(big.Int).Mul(q, q), p)),
	}
	for name, c := range bad {
		if _, err := sk.Decrypt(&Ciphertext{c}); err != ErrDecrypt {
			t.Errorf("Decrypt(%s) = %v", name, err)
		}
		if c.Sign() >= 0 && c.BitLen() <= 8*pk.CiphertextSize() {
			b := c.FillBytes(make([]byte, pk.CiphertextSize()))
			if _, err := pk.ParseCiphertext(b); err != ErrDecrypt {
				t.Errorf("ParseCiphertext(%s) = %v", name, err)
			}
			if _, err := sk.DecryptBytes(b); err != ErrDecrypt {
				t.Errorf("DecryptBytes(%s) = %v", name, err)
			}
		}
		if _, err := pk.ParseCiphertextNumeric(c.String()); err != ErrDecrypt {
			t.Errorf("ParseCiphertextNumeric(%s) = %v", name, err)
		}
	}
	if _, err := sk.Decrypt(&Ciphertext{big.NewInt(-5)}); err != ErrDecrypt {
		t.Errorf("Decrypt(-5) = %v", err)
	}
	// 1 is a valid ciphertext (of 0 with r = 1).
	if m, err := sk.Decrypt(&Ciphertext{big.NewInt(1)}); err != nil || m.Sign() != 0 {
		t.Errorf("Decrypt(1) = %v, %v", m, err)
	}
	for _, s := range []string{"", "-1", "1.0", " 12", "1e5", "abc"} {
		if _, err := pk.ParseCiphertextNumeric(s); err != ErrDecrypt {
			t.Errorf("ParseCiphertextNumeric(%q) = %v", s, err)
		}
	}
	if _, err := pk.ParseCiphertext(make([]byte, pk.CiphertextSize()-1)); err != ErrDecrypt {
		t.Error("short ciphertext accepted")
	}
}

func TestEncodings(t *testing.T) {
	sk := testKey(t, 2048)
	pk := sk.Public()
	e := newEnc(t, sk)
	for _, v := range []int64{0, -1, 77} {
		c := e.EncryptInt64(v)
		b := pk.AppendCiphertext([]byte("x"), c)
		if len(b) != 1+pk.CiphertextSize() {
			t.Fatalf("AppendCiphertext length %d", len(b))
		}
		c2, err := pk.ParseCiphertext(b[1:])
		if err != nil || !c2.Equal(c) {
			t.Fatalf("ParseCiphertext: %v", err)
		}
		c3, err := pk.ParseCiphertextNumeric(c.Numeric())
		if err != nil || !c3.Equal(c) {
			t.Fatalf("ParseCiphertextNumeric: %v", err)
		}
		if m, err := sk.DecryptBytes(b[1:]); err != nil || m.Int64() != v {
			t.Fatalf("DecryptBytes: %v %v", m, err)
		}
	}
}

func TestKeySerialization(t *testing.T) {
	sk := testKey(t, 2048)
	b, _ := sk.MarshalBinary()
	sk2, err := UnmarshalPrivateKey(b)
	if err != nil || !sk2.Public().Equal(sk.Public()) {
		t.Fatalf("private key round trip: %v", err)
	}
	pb, _ := sk.Public().MarshalBinary()
	pk2, err := UnmarshalPublicKey(pb)
	if err != nil || !pk2.Equal(sk.Public()) {
		t.Fatalf("public key round trip: %v", err)
	}
	// A ciphertext under the reloaded public key decrypts under the key.
	c, _ := pk2.Encrypt(nil, big.NewInt(31337))
	if m, err := sk.Decrypt(c); err != nil || m.Int64() != 31337 {
		t.Fatalf("cross-key: %v %v", m, err)
	}
	p, q := sk.crt[0].s, sk.crt[1].s
	small, _ := rand.Prime(rand.Reader, 512)
	small2, _ := rand.Prime(rand.Reader, 512)
	enc := func(vals ...*big.Int) []byte {
		out := []byte{'S', 1}
		for _, v := range vals {
			out = append(out, byte(len(v.Bytes())>>8), byte(len(v.Bytes())))
			out = append(out, v.Bytes()...)
		}
		return out
	}
	badPriv := map[string][]byte{
		"empty":        nil,
		"wrong tag":    append([]byte{'P'}, b[1:]...),
		"version":      append([]byte{'S', 2}, b[2:]...),
		"truncated":    b[:len(b)-1],
		"trailing":     append(append([]byte{}, b...), 0),
		"p == q":       enc(p, p),
		"not prime":    enc(new(big.Int).Add(p, big.NewInt(2)), q),
		"1024 bits":    enc(small, small2),
		"even":         enc(new(big.Int).Add(p, big.NewInt(1)), q),
		"sizes differ": enc(p, new(big.Int).Mul(q, small)),
	}
	for name, raw := range badPriv {
		if _, err := UnmarshalPrivateKey(raw); err == nil {
			t.Errorf("UnmarshalPrivateKey accepted %s", name)
		}
	}
	n1024 := new(big.Int).Mul(small, small2)
	badPub := map[string][]byte{
		"empty":     nil,
		"truncated": pb[:len(pb)-1],
		"1024 bits": append([]byte{'P', 1, 0, byte(len(n1024.Bytes()))}, n1024.Bytes()...),
		"even":      append([]byte{'P', 1, 1, 0}, new(big.Int).Lsh(sk.N(), 1).Bytes()[:256]...),
	}
	for name, raw := range badPub {
		if _, err := UnmarshalPublicKey(raw); err == nil {
			t.Errorf("UnmarshalPublicKey accepted %s", name)
		}
	}
	if _, err := GenerateKey(nil, 1024); err == nil {
		t.Error("GenerateKey(1024) succeeded")
	}
}

func FuzzParseCiphertext(f *testing.F) {
	sk := testKey(f, 2048)
	pk := sk.Public()
	e, _ := NewEncrypter(sk, EncrypterOptions{PoolSize: 4})
	c := e.EncryptInt64(3)
	e.Close()
	f.Add(pk.AppendCiphertext(nil, c))
	f.Add([]byte(c.Numeric()))
	f.Add(make([]byte, pk.CiphertextSize()))
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, err := pk.ParseCiphertext(b); err == nil {
			if _, err := sk.Decrypt(c); err != nil {
				t.Fatalf("parsed ciphertext does not decrypt: %v", err)
			}
			if !bytes.Equal(pk.AppendCiphertext(nil, c), b) {
				t.Fatal("encoding does not round trip")
			}
		} else if err != ErrDecrypt {
			t.Fatalf("error %v", err)
		}
		if _, err := sk.DecryptBytes(b); err != nil && err != ErrDecrypt {
			t.Fatalf("DecryptBytes error %v", err)
		}
		if c, err := pk.ParseCiphertextNumeric(string(b)); err == nil {
			if _, err := sk.Decrypt(c); err != nil {
				t.Fatalf("parsed numeric does not decrypt: %v", err)
			}
		} else if err != ErrDecrypt {
			t.Fatalf("error %v", err)
		}
	})
}

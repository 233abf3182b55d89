package det

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBlockRFC5649 checks the single-block case of AES Key Wrap with
// Padding against RFC 5649, section 6 (the 7-octet key wrapped with a
// 192-bit KEK).
func TestBlockRFC5649(t *testing.T) {
	c, err := NewBlock(unhex(t, "5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8"))
	if err != nil {
		t.Fatal(err)
	}
	pt := unhex(t, "466f7250617369")
	want := unhex(t, "afbeb0f07dfbf5419200f2ccb50bb24f")
	ct, err := c.EncryptDeterministically(pt)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ct, want) {
		t.Fatalf("wrap = %x, want %x", ct, want)
	}
	got, err := c.DecryptDeterministically(want)
	if err != nil || !bytes.Equal(got, pt) {
		t.Fatalf("unwrap = %x, %v; want %x", got, err, pt)
	}
}

func TestBlockRoundTripAndTampering(t *testing.T) {
	key := bytes.Repeat([]byte{7}, BlockKeySize)
	c, err := NewBlock(key)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewBlock(bytes.Repeat([]byte{8}, BlockKeySize))
	for n := 1; n <= BlockMaxPlaintextLen; n++ {
		pt := bytes.Repeat([]byte{0}, n) // zero bytes: padding must not absorb them
		pt[0] = byte(n)
		ct, err := c.EncryptDeterministically(pt)
		if err != nil {
			t.Fatal(err)
		}
		if len(ct) != BlockCiphertextLen {
			t.Fatalf("%d bytes: ciphertext of %d bytes", n, len(ct))
		}
		again, _ := c.EncryptDeterministically(pt)
		if !bytes.Equal(ct, again) {
			t.Fatalf("%d bytes: not deterministic", n)
		}
		got, err := c.DecryptDeterministically(ct)
		if err != nil || !bytes.Equal(got, pt) {
			t.Fatalf("%d bytes: decrypt = %x, %v", n, got, err)
		}
		for i := range ct {
			bad := bytes.Clone(ct)
			bad[i] ^= 1
			if _, err := c.DecryptDeterministically(bad); !errors.Is(err, ErrDecrypt) {
				t.Fatalf("%d bytes: flipped byte %d accepted", n, i)
			}
		}
		if _, err := other.DecryptDeterministically(ct); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("%d bytes: accepted under another key", n)
		}
	}
	for _, n := range []int{0, 9, 16} {
		if _, err := c.EncryptDeterministically(make([]byte, n)); err == nil {
			t.Errorf("plaintext of %d bytes accepted", n)
		}
	}
	for _, ct := range [][]byte{nil, make([]byte, 15), make([]byte, 17), make([]byte, 32)} {
		if _, err := c.DecryptDeterministically(ct); !errors.Is(err, ErrDecrypt) {
			t.Errorf("ciphertext of %d bytes accepted", len(ct))
		}
	}
	// An encryption of a block with a wrong length field or non-zero
	// padding is refused: made with the raw cipher.
	for _, blk := range []string{
		"a65959a6000000000000000000000000", // MLI 0
		"a65959a6000000090000000000000000", // MLI 9
		"a65959a6000001010000000000000000", // MLI 257
		"a65959a6000000010100000000000001", // padding not zero
		"a65959a7000000010100000000000000", // wrong constant
	} {
		ct := make([]byte, 16)
		c.block.Encrypt(ct, unhex(t, blk))
		if _, err := c.DecryptDeterministically(ct); !errors.Is(err, ErrDecrypt) {
			t.Errorf("block %s accepted", blk)
		}
	}
}

// TestBlockAppendDecrypt checks the appending form: dst's bytes are kept,
// the plaintext follows them, and with room for a block it allocates
// nothing.
func TestBlockAppendDecrypt(t *testing.T) {
	c, _ := NewBlock(bytes.Repeat([]byte{7}, BlockKeySize))
	buf := make([]byte, 3, 64)
	copy(buf, "abc")
	for n := 1; n <= BlockMaxPlaintextLen; n++ {
		pt := bytes.Repeat([]byte{byte(n)}, n)
		ct, _ := c.EncryptDeterministically(pt)
		got, err := c.AppendDecryptDeterministically(buf, ct)
		if err != nil || string(got[:3]) != "abc" || !bytes.Equal(got[3:], pt) {
			t.Fatalf("%d bytes: append = %q, %v", n, got, err)
		}
		bad := bytes.Clone(ct)
		bad[n%BlockCiphertextLen] ^= 0x80
		if got, err := c.AppendDecryptDeterministically(buf, bad); !errors.Is(err, ErrDecrypt) || got != nil {
			t.Fatalf("%d bytes: modified ciphertext gave %q, %v", n, got, err)
		}
	}
	ct, _ := c.EncryptDeterministically([]byte("12345678"))
	if n := testing.AllocsPerRun(100, func() { c.AppendDecryptDeterministically(buf[:0], ct) }); n != 0 {
		t.Errorf("AppendDecryptDeterministically with room allocates %v times, want 0", n)
	}
}

func FuzzBlockDecrypt(f *testing.F) {
	c, _ := NewBlock(bytes.Repeat([]byte{7}, BlockKeySize))
	ct, _ := c.EncryptDeterministically([]byte{1, 2, 3})
	f.Add(ct)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, ct []byte) {
		pt, err := c.DecryptDeterministically(ct)
		if err != nil {
			return
		}
		again, err := c.EncryptDeterministically(pt)
		if err != nil || !bytes.Equal(again, ct) {
			t.Fatalf("decrypted %x to %x, which encrypts to %x (%v)", ct, pt, again, err)
		}
	})
}

func BenchmarkBlockEncrypt8(b *testing.B) {
	c, _ := NewBlock(bytes.Repeat([]byte{7}, BlockKeySize))
	pt := make([]byte, 8)
	for b.Loop() {
		c.EncryptDeterministically(pt)
	}
}

func BenchmarkBlockDecrypt8(b *testing.B) {
	c, _ := NewBlock(bytes.Repeat([]byte{7}, BlockKeySize))
	ct, _ := c.EncryptDeterministically(make([]byte, 8))
	for b.Loop() {
		c.DecryptDeterministically(ct)
	}
}

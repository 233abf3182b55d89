package ff1

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

type nistFile struct {
	Alphabet string `json:"alphabet"`
	Vectors  []struct {
		Sample     int    `json:"sample"`
		Key        string `json:"key"`
		Radix      int    `json:"radix"`
		Tweak      string `json:"tweak"`
		Plaintext  string `json:"plaintext"`
		Ciphertext string `json:"ciphertext"`
	} `json:"vectors"`
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func toNumerals(t testing.TB, alphabet, s string) []uint16 {
	t.Helper()
	out := make([]uint16, 0, len(s))
	for _, r := range s {
		i := strings.IndexRune(alphabet, r)
		if i < 0 {
			t.Fatalf("numeral %q not in alphabet", r)
		}
		out = append(out, uint16(i))
	}
	return out
}

func fromNumerals(alphabet string, x []uint16) string {
	var sb strings.Builder
	for _, d := range x {
		sb.WriteByte(alphabet[d])
	}
	return sb.String()
}

// TestNISTSamples checks every FF1 sample of NIST SP 800-38G (AES-128,
// AES-192 and AES-256; radix 10 and 36; empty and non-empty tweaks).
func TestNISTSamples(t *testing.T) {
	raw, err := os.ReadFile("testdata/nist_sp800_38g_ff1.json")
	if err != nil {
		t.Fatal(err)
	}
	var f nistFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Vectors) != 9 {
		t.Fatalf("got %d vectors, want the 9 NIST samples", len(f.Vectors))
	}
	for _, v := range f.Vectors {
		t.Run("sample"+string(rune('0'+v.Sample)), func(t *testing.T) {
			c, err := New(mustHex(t, v.Key), v.Radix)
			if err != nil {
				t.Fatal(err)
			}
			tweak := mustHex(t, v.Tweak)
			pt := toNumerals(t, f.Alphabet, v.Plaintext)
			ptCopy := slices.Clone(pt)
			tweakCopy := slices.Clone(tweak)
			ct, err := c.Encrypt(nil, pt, tweak)
			if err != nil {
				t.Fatal(err)
			}
			if got := fromNumerals(f.Alphabet, ct); got != v.Ciphertext {
				t.Errorf("Encrypt = %s, want %s", got, v.Ciphertext)
			}
			back, err := c.Decrypt(nil, ct, tweak)
			if err != nil {
				t.Fatal(err)
			}
			if got := fromNumerals(f.Alphabet, back); got != v.Plaintext {
				t.Errorf("Decrypt = %s, want %s", got, v.Plaintext)
			}
			if !slices.Equal(pt, ptCopy) || !bytes.Equal(tweak, tweakCopy) {
				t.Error("inputs were modified")
			}
		})
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name  string
		key   int
		radix int
	}{
		{"key 0", 0, 10},
		{"key 15", 15, 10},
		{"key 17", 17, 10},
		{"key 64", 64, 10},
		{"radix 0", 16, 0},
		{"radix 1", 16, 1},
		{"radix 65537", 16, 65537},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(make([]byte, tt.key), tt.radix); err == nil {
				t.Error("New accepted invalid parameters")
			}
		})
	}
	for _, n := range []int{0, 8, 33} {
		if _, err := NewUint64(make([]byte, n), nil); err == nil {
			t.Errorf("NewUint64 accepted a %d-byte key", n)
		}
	}
	if _, err := NewUint64(make([]byte, 16), make([]byte, MaxTweakLen+1)); err == nil {
		t.Error("NewUint64 accepted an over-long tweak")
	}
}

func TestMinLen(t *testing.T) {
	tests := []struct{ radix, minLen int }{
		{2, 20}, {10, 6}, {36, 4}, {256, 3}, {1000, 2}, {1 << 16, 2},
	}
	for _, tt := range tests {
		c, err := New(make([]byte, 16), tt.radix)
		if err != nil {
			t.Fatal(err)
		}
		if c.MinLen() != tt.minLen {
			t.Errorf("radix %d: MinLen = %d, want %d", tt.radix, c.MinLen(), tt.minLen)
		}
	}
}

func TestInvalidInput(t *testing.T) {
	c, err := New(make([]byte, 16), 10)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		x     []uint16
		tweak []byte
	}{
		{"too short", make([]uint16, 5), nil},
		{"numeral = radix", []uint16{0, 1, 2, 3, 4, 5, 6, 7, 8, 10}, nil},
		{"too long", make([]uint16, MaxLen+1), nil},
		{"tweak too long", make([]uint16, 10), make([]byte, MaxTweakLen+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := c.Encrypt(nil, tt.x, tt.tweak); !errors.Is(err, ErrInput) {
				t.Errorf("Encrypt err = %v, want ErrInput", err)
			}
			if _, err := c.Decrypt(nil, tt.x, tt.tweak); !errors.Is(err, ErrInput) {
				t.Errorf("Decrypt err = %v, want ErrInput", err)
			}
		})
	}
}

// TestRoundTrip covers odd and even lengths, several radixes (including
// the largest), and tweak lengths around the 16-byte block boundaries of Q.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, radix := range []int{2, 3, 10, 26, 255, 256, 1000, 65535, 65536} {
		c, err := New(bytes.Repeat([]byte{7}, 32), radix)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{c.MinLen(), c.MinLen() + 1, 31, 32, 33, 64, 65, 200} {
			for _, tl := range []int{0, 1, 10, 11, 12, 16, 27, 100} {
				x := make([]uint16, n)
				for i := range x {
					x[i] = uint16(rng.IntN(radix))
				}
				tweak := make([]byte, tl)
				for i := range tweak {
					tweak[i] = byte(rng.Uint32())
				}
				ct, err := c.Encrypt([]uint16{42}, x, tweak)
				if err != nil {
					t.Fatal(err)
				}
				if len(ct) != n+1 || ct[0] != 42 {
					t.Fatalf("Encrypt did not append to dst")
				}
				ct = ct[1:]
				for _, d := range ct {
					if int(d) >= radix {
						t.Fatalf("radix %d: ciphertext numeral %d out of range", radix, d)
					}
				}
				back, err := c.Decrypt(nil, ct, tweak)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(back, x) {
					t.Fatalf("radix %d n %d tweak %d: round trip failed", radix, n, tl)
				}
				if n >= 32 && slices.Equal(ct, x) {
					t.Fatalf("radix %d n %d: ciphertext equals plaintext", radix, n)
				}
			}
		}
	}
}

// bits64 returns x as 64 radix-2 numerals, most significant bit first.
func bits64(x uint64) []uint16 {
	out := make([]uint16, 64)
	for i := range out {
		out[i] = uint16(x >> (63 - i) & 1)
	}
	return out
}

func fromBits64(b []uint16) uint64 {
	var x uint64
	for _, d := range b {
		x = x<<1 | uint64(d)
	}
	return x
}

// TestUint64MatchesGeneral checks the fast path against the general
// implementation for several keys and tweak lengths.
func TestUint64MatchesGeneral(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, keyLen := range []int{16, 24, 32} {
		for _, tl := range []int{0, 1, 10, 11, 12, 16, 17, 40} {
			key := make([]byte, keyLen)
			tweak := make([]byte, tl)
			for i := range key {
				key[i] = byte(rng.Uint32())
			}
			for i := range tweak {
				tweak[i] = byte(rng.Uint32())
			}
			gen, err := New(key, 2)
			if err != nil {
				t.Fatal(err)
			}
			fast, err := NewUint64(key, tweak)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range []uint64{0, 1, 1 << 63, ^uint64(0), rng.Uint64(), rng.Uint64(), rng.Uint64()} {
				want, err := gen.Encrypt(nil, bits64(x), tweak)
				if err != nil {
					t.Fatal(err)
				}
				got := fast.Encrypt(x)
				if got != fromBits64(want) {
					t.Fatalf("key %d tweak %d x %#x: Uint64.Encrypt = %#x, general = %#x", keyLen, tl, x, got, fromBits64(want))
				}
				if back := fast.Decrypt(got); back != x {
					t.Fatalf("Uint64.Decrypt(%#x) = %#x, want %#x", got, back, x)
				}
			}
		}
	}
}

// TestUint64Tweak checks that the tweak selects a different permutation.
func TestUint64Tweak(t *testing.T) {
	key := bytes.Repeat([]byte{1}, 16)
	a, _ := NewUint64(key, []byte("column-a"))
	b, _ := NewUint64(key, []byte("column-b"))
	same := 0
	for x := uint64(0); x < 100; x++ {
		if a.Encrypt(x) == b.Encrypt(x) {
			same++
		}
	}
	if same > 0 {
		t.Errorf("%d of 100 values encrypt equally under two tweaks", same)
	}
}

// TestUint64Permutation checks injectivity on a sample and the round trip
// on random values.
func TestUint64Permutation(t *testing.T) {
	c, err := NewUint64(bytes.Repeat([]byte{9}, 32), []byte("t"))
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[uint64]uint64)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 20000; i++ {
		x := rng.Uint64()
		if i < 1000 {
			x = uint64(i) // small consecutive integers, the common case
		}
		y := c.Encrypt(x)
		if prev, ok := seen[y]; ok && prev != x {
			t.Fatalf("Encrypt(%d) = Encrypt(%d)", x, prev)
		}
		seen[y] = x
		if c.Decrypt(y) != x {
			t.Fatalf("Decrypt(Encrypt(%d)) != %d", x, x)
		}
	}
}

func FuzzDecrypt(f *testing.F) {
	c, err := New(bytes.Repeat([]byte{3}, 16), 10)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("0123456789"), []byte("tweak"))
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, digits, tweak []byte) {
		x := make([]uint16, len(digits))
		for i, d := range digits {
			x[i] = uint16(d % 12) // sometimes out of range
		}
		pt, err := c.Decrypt(nil, x, tweak)
		if err != nil {
			return
		}
		ct, err := c.Encrypt(nil, pt, tweak)
		if err != nil || !slices.Equal(ct, x) {
			t.Fatalf("Encrypt(Decrypt(x)) != x")
		}
	})
}

func FuzzUint64(f *testing.F) {
	c, err := NewUint64(bytes.Repeat([]byte{3}, 16), []byte("fuzz"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint64(0))
	f.Fuzz(func(t *testing.T, y uint64) {
		if c.Encrypt(c.Decrypt(y)) != y {
			t.Fatal("Encrypt(Decrypt(y)) != y")
		}
	})
}

func BenchmarkFF1Uint64Encrypt(b *testing.B) {
	c, err := NewUint64(make([]byte, 32), []byte("0123456789abcdef"))
	if err != nil {
		b.Fatal(err)
	}
	var x uint64
	for b.Loop() {
		x = c.Encrypt(x)
	}
	var sink [8]byte
	binary.BigEndian.PutUint64(sink[:], x)
}

func BenchmarkFF1GeneralRadix10(b *testing.B) {
	c, err := New(make([]byte, 16), 10)
	if err != nil {
		b.Fatal(err)
	}
	x := []uint16{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5}
	dst := make([]uint16, 0, len(x))
	for b.Loop() {
		dst, _ = c.Encrypt(dst[:0], x, nil)
	}
}

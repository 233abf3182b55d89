package schemestest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

var errToy = errors.New("toy: decryption failed")

// gcm returns a toy AES-GCM scheme. With deterministic set it uses a fixed
// nonce (insecure, but deterministic and authenticated: enough to exercise
// the suite).
func gcm(t testing.TB, key byte, deterministic bool) (enc, dec func([]byte) ([]byte, error)) {
	block, err := aes.NewCipher(bytes.Repeat([]byte{key}, 16))
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	enc = func(p []byte) ([]byte, error) {
		nonce := make([]byte, 12)
		if !deterministic {
			rand.Read(nonce)
		}
		return aead.Seal(nonce, nonce, p, nil), nil
	}
	dec = func(c []byte) ([]byte, error) {
		if len(c) < 12 {
			return nil, errToy
		}
		p, err := aead.Open(nil, c[:12], c[12:], nil)
		if err != nil {
			return nil, errToy
		}
		return p, nil
	}
	return enc, dec
}

// ctr returns a toy unauthenticated probabilistic scheme: AES-CTR with a
// random IV.
func ctr(t testing.TB) (enc, dec func([]byte) ([]byte, error)) {
	block, err := aes.NewCipher(make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	enc = func(p []byte) ([]byte, error) {
		out := make([]byte, 16+len(p))
		rand.Read(out[:16])
		cipher.NewCTR(block, out[:16]).XORKeyStream(out[16:], p)
		return out, nil
	}
	dec = func(c []byte) ([]byte, error) {
		if len(c) < 16 {
			return nil, errToy
		}
		out := make([]byte, len(c)-16)
		cipher.NewCTR(block, c[:16]).XORKeyStream(out, c[16:])
		return out, nil
	}
	return enc, dec
}

func TestGoodSchemesPass(t *testing.T) {
	t.Run("DeterministicAEAD", func(t *testing.T) {
		enc, dec := gcm(t, 1, true)
		_, other := gcm(t, 2, true)
		TestDeterministic(t, Scheme{Encrypt: enc, Decrypt: dec, OtherDecrypt: other, Authenticated: true, ErrDecrypt: errToy})
	})
	t.Run("ProbabilisticAEAD", func(t *testing.T) {
		enc, dec := gcm(t, 1, false)
		_, other := gcm(t, 2, false)
		TestProbabilistic(t, Scheme{Encrypt: enc, Decrypt: dec, OtherDecrypt: other, Authenticated: true, ErrDecrypt: errToy})
	})
	t.Run("ProbabilisticUnauthenticated", func(t *testing.T) {
		enc, dec := ctr(t)
		TestProbabilistic(t, Scheme{Encrypt: enc, Decrypt: dec})
	})
	t.Run("ManyToOne", func(t *testing.T) {
		enc, dec := ignoresLastByte(ctr(t))
		TestProbabilistic(t, Scheme{Encrypt: enc, Decrypt: dec, ManyToOne: true})
	})
}

// ignoresLastByte appends a byte to every ciphertext that decryption
// ignores.
func ignoresLastByte(enc, dec func([]byte) ([]byte, error)) (func([]byte) ([]byte, error), func([]byte) ([]byte, error)) {
	return func(p []byte) ([]byte, error) {
			c, err := enc(p)
			return append(c, 0), err
		}, func(c []byte) ([]byte, error) {
			if len(c) == 0 {
				return nil, errToy
			}
			return dec(c[:len(c)-1])
		}
}

// brokenSchemes are schemes the suite must reject. Each runs in a child
// process (see TestBrokenSchemesFail), since a failing suite fails its test.
var brokenSchemes = map[string]func(t *testing.T){
	"identity": func(t *testing.T) {
		id := func(b []byte) ([]byte, error) { return bytes.Clone(b), nil }
		TestDeterministic(t, Scheme{Encrypt: id, Decrypt: id})
	},
	"probabilistic-as-deterministic": func(t *testing.T) {
		enc, dec := gcm(t, 1, false)
		TestDeterministic(t, Scheme{Encrypt: enc, Decrypt: dec, Authenticated: true})
	},
	"deterministic-as-probabilistic": func(t *testing.T) {
		enc, dec := gcm(t, 1, true)
		TestProbabilistic(t, Scheme{Encrypt: enc, Decrypt: dec, Authenticated: true})
	},
	"unauthenticated-as-authenticated": func(t *testing.T) {
		enc, dec := ctr(t)
		TestProbabilistic(t, Scheme{Encrypt: enc, Decrypt: dec, Authenticated: true})
	},
	"ignores-last-byte": func(t *testing.T) {
		enc, dec := ignoresLastByte(gcm(t, 1, true))
		TestDeterministic(t, Scheme{Encrypt: enc, Decrypt: dec, Authenticated: true})
	},
	"ignores-last-byte-unauthenticated": func(t *testing.T) {
		enc, dec := ignoresLastByte(ctr(t))
		TestProbabilistic(t, Scheme{Encrypt: enc, Decrypt: dec})
	},
	"modifies-input": func(t *testing.T) {
		enc, dec := gcm(t, 1, true)
		TestDeterministic(t, Scheme{
			Encrypt: func(p []byte) ([]byte, error) {
				c, err := enc(p)
				clear(p)
				return c, err
			},
			Decrypt: dec, Authenticated: true,
		})
	},
	"revealing-errors": func(t *testing.T) {
		enc, dec := gcm(t, 1, true)
		TestDeterministic(t, Scheme{
			Encrypt: enc,
			Decrypt: func(c []byte) ([]byte, error) {
				if len(c) < 28 {
					return nil, errors.New("too short")
				}
				return dec(c)
			},
			Authenticated: true,
		})
	},
	"wrong-error": func(t *testing.T) {
		enc, dec := gcm(t, 1, true)
		TestDeterministic(t, Scheme{Encrypt: enc, Decrypt: dec, Authenticated: true, ErrDecrypt: errors.New("other")})
	},
	"panics": func(t *testing.T) {
		enc, dec := gcm(t, 1, true)
		TestDeterministic(t, Scheme{
			Encrypt: enc,
			Decrypt: func(c []byte) ([]byte, error) {
				_ = c[27] // panics on short input
				return dec(c)
			},
			Authenticated: true,
		})
	},
	"other-key-accepted": func(t *testing.T) {
		enc, dec := gcm(t, 1, true)
		TestDeterministic(t, Scheme{Encrypt: enc, Decrypt: dec, OtherDecrypt: dec, Authenticated: true})
	},
	"wrong-plaintext": func(t *testing.T) {
		enc, dec := gcm(t, 1, true)
		TestDeterministic(t, Scheme{
			Encrypt: enc,
			Decrypt: func(c []byte) ([]byte, error) {
				p, err := dec(c)
				if len(p) > 100 {
					p[100]++
				}
				return p, err
			},
			Authenticated: true,
		})
	},
}

func TestBrokenSchemesFail(t *testing.T) {
	if name := os.Getenv("SCHEMESTEST_BROKEN"); name != "" {
		brokenSchemes[name](t)
		return
	}
	if testing.Short() {
		t.Skip("runs child processes")
	}
	for name := range brokenSchemes {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenSchemesFail$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SCHEMESTEST_BROKEN="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite accepted the broken scheme %q:\n%s", name, out)
			}
			if !strings.Contains(string(out), "--- FAIL") {
				t.Fatalf("the child process failed without a test failure:\n%s", out)
			}
		})
	}
}

func TestNextFlip(t *testing.T) {
	for _, tc := range []struct {
		step, bits int
		want       []int
	}{
		{1, 4, []int{0, 1, 2, 3}},
		{3, 10, []int{0, 3, 6, 9}},
		{4, 10, []int{0, 4, 8, 9}},
		{20, 10, []int{0, 9}},
	} {
		var got []int
		for b := 0; b < tc.bits; b = nextFlip(b, tc.step, tc.bits) {
			got = append(got, b)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("step %d over %d bits: %v, want %v", tc.step, tc.bits, got, tc.want)
		}
	}
}

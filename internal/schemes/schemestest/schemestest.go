// Package schemestest is a conformance suite for the encryption schemes of
// package internal/schemes, in the spirit of testing/fstest and
// golang.org/x/net/nettest.
//
// A scheme's test wraps it in a Scheme, a pair of functions over byte
// strings, and calls TestDeterministic or TestProbabilistic:
//
//	func TestConformance(t *testing.T) {
//		c, _ := det.New(key, columnID)
//		schemestest.TestDeterministic(t, schemestest.Scheme{
//			Encrypt:       c.EncryptDeterministically,
//			Decrypt:       c.DecryptDeterministically,
//			Authenticated: true,
//			ErrDecrypt:    det.ErrDecrypt,
//		})
//	}
//
// The suite checks, each in its own subtest:
//   - RoundTrip: Decrypt(Encrypt(p)) == p for every plaintext (by default
//     random bytes of each of EdgeLengths), and neither call modifies its
//     input;
//   - Deterministic: equal plaintexts give equal ciphertexts and distinct
//     plaintexts distinct ones; or Probabilistic: repeated encryptions of
//     one plaintext all differ;
//   - for authenticated schemes: every single-bit flip, every truncation,
//     an appended byte, and decryption under another key (OtherDecrypt)
//     fail, with nil plaintext, errors.Is(err, ErrDecrypt), and the same
//     error text for every failure (so a failure never says which check
//     failed);
//   - for unauthenticated schemes: the same malformed inputs never panic,
//     and no single-bit flip decrypts to the original plaintext (of 8
//     bytes or more): every ciphertext bit matters (unless ManyToOne);
//   - Concurrent: the functions can be called from several goroutines.
//
// Run the tests with -race so that Concurrent finds unsynchronised state.
package schemestest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// EdgeLengths are the plaintext lengths the suite uses by default: empty,
// around one and two AES blocks, 255 and 4096 bytes.
var EdgeLengths = []int{0, 1, 15, 16, 17, 31, 32, 33, 255, 4096}

// Scheme is the scheme under test.
type Scheme struct {
	// Encrypt encrypts plaintext. Required. It must not modify plaintext,
	// and must return a slice that does not alias it.
	Encrypt func(plaintext []byte) ([]byte, error)

	// Decrypt decrypts ciphertext. Required. It must not modify
	// ciphertext, and must return a nil plaintext when it fails.
	Decrypt func(ciphertext []byte) ([]byte, error)

	// OtherDecrypt, if set, decrypts with a different key or for a
	// different column. For authenticated schemes the suite checks that it
	// rejects every ciphertext of Encrypt; for the others, that it does not
	// return the original plaintext of ciphertexts of 16 bytes or more.
	OtherDecrypt func(ciphertext []byte) ([]byte, error)

	// Authenticated says that every ciphertext not produced by Encrypt
	// must fail to decrypt.
	Authenticated bool

	// ManyToOne says that several ciphertexts may decrypt to one
	// plaintext (an unauthenticated scheme that ignores some ciphertext
	// bits, such as an OPE whose decryption does not check the exact
	// ciphertext). It turns off the check that every single-bit flip
	// changes the plaintext of an unauthenticated scheme.
	ManyToOne bool

	// ErrDecrypt, if set, is the error every failed decryption must match
	// with errors.Is.
	ErrDecrypt error

	// Plaintexts, if set, replaces the default plaintexts (random bytes of
	// each of EdgeLengths). Use it for schemes with a restricted domain,
	// such as fixed 8-byte integers. The plaintexts should be distinct.
	Plaintexts [][]byte

	// Seed seeds the random plaintexts; tests are reproducible for a
	// given seed.
	Seed uint64

	// MaxBitFlips, if positive, limits BitFlips to about this many bit
	// positions per ciphertext, spread evenly over it (the first and last
	// bits included), for schemes whose decryption is slow (Paillier: a
	// 512-byte ciphertext has 4096 bits at milliseconds each). Zero flips
	// every bit.
	MaxBitFlips int
}

// TestDeterministic runs the suite for a deterministic scheme: a plaintext
// always encrypts to the same ciphertext.
func TestDeterministic(t *testing.T, s Scheme) {
	t.Helper()
	run(t, s, true)
}

// TestProbabilistic runs the suite for a probabilistic scheme: encrypting
// the same plaintext twice gives different ciphertexts (with overwhelming
// probability).
func TestProbabilistic(t *testing.T, s Scheme) {
	t.Helper()
	run(t, s, false)
}

func run(t *testing.T, s Scheme, deterministic bool) {
	t.Helper()
	if s.Encrypt == nil || s.Decrypt == nil {
		t.Fatal("schemestest: Scheme.Encrypt and Scheme.Decrypt are required")
	}
	pts := s.Plaintexts
	if pts == nil {
		rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
		for _, n := range EdgeLengths {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			pts = append(pts, p)
		}
	}
	// Encrypt every plaintext once; the subtests share the ciphertexts.
	cts := make([][]byte, len(pts))
	for i, p := range pts {
		ct, err := s.Encrypt(bytes.Clone(p))
		if err != nil {
			t.Fatalf("Encrypt(%d bytes): %v", len(p), err)
		}
		cts[i] = ct
	}

	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, s, pts) })
	if deterministic {
		t.Run("Deterministic", func(t *testing.T) { testDeterministic(t, s, pts, cts) })
	} else {
		t.Run("Probabilistic", func(t *testing.T) { testProbabilistic(t, s, pts) })
	}
	t.Run("BitFlips", func(t *testing.T) { testBitFlips(t, s, pts, cts) })
	t.Run("Truncations", func(t *testing.T) { testTruncations(t, s, pts, cts) })
	t.Run("Garbage", func(t *testing.T) { testGarbage(t, s) })
	if s.OtherDecrypt != nil {
		t.Run("OtherKey", func(t *testing.T) { testOtherKey(t, s, pts, cts) })
	}
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, s, pts) })
}

func testRoundTrip(t *testing.T, s Scheme, pts [][]byte) {
	for _, p := range pts {
		in := bytes.Clone(p)
		ct, err := s.Encrypt(in)
		if err != nil {
			t.Fatalf("Encrypt(%d bytes): %v", len(p), err)
		}
		if !bytes.Equal(in, p) {
			t.Fatalf("Encrypt modified its %d-byte plaintext", len(p))
		}
		if len(p) >= 16 && bytes.Contains(ct, p) {
			t.Errorf("the %d-byte ciphertext contains the plaintext", len(p))
		}
		ctCopy := bytes.Clone(ct)
		got, err := s.Decrypt(ct)
		if err != nil {
			t.Fatalf("Decrypt(Encrypt(%d bytes)): %v", len(p), err)
		}
		if !bytes.Equal(ct, ctCopy) {
			t.Fatalf("Decrypt modified its %d-byte ciphertext", len(ct))
		}
		if !bytes.Equal(got, p) {
			t.Fatalf("Decrypt(Encrypt(p)) != p for %d bytes: got %x", len(p), trunc(got))
		}
		// The results must not alias the inputs.
		if len(p) > 0 {
			in[0] ^= 0xff
			if len(got) > 0 && got[0] != p[0] {
				t.Fatalf("the plaintext returned by Decrypt aliases Encrypt's input")
			}
			if !bytes.Equal(ct, ctCopy) {
				t.Fatalf("the ciphertext aliases Encrypt's input")
			}
		}
	}
}

func testDeterministic(t *testing.T, s Scheme, pts, cts [][]byte) {
	seen := make(map[string]int)
	for i, p := range pts {
		again, err := s.Encrypt(bytes.Clone(p))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, cts[i]) {
			t.Errorf("two encryptions of the same %d-byte plaintext differ", len(p))
		}
		if j, ok := seen[string(cts[i])]; ok && !bytes.Equal(pts[j], p) {
			t.Errorf("plaintexts %d and %d (distinct) have the same ciphertext", j, i)
		}
		seen[string(cts[i])] = i
	}
}

func testProbabilistic(t *testing.T, s Scheme, pts [][]byte) {
	const n = 8
	for _, p := range pts {
		seen := make(map[string]bool, n)
		for range n {
			ct, err := s.Encrypt(bytes.Clone(p))
			if err != nil {
				t.Fatal(err)
			}
			if seen[string(ct)] {
				t.Fatalf("two of %d encryptions of the same %d-byte plaintext are equal", n, len(p))
			}
			seen[string(ct)] = true
		}
	}
}

// failure checks the outcome of decrypting a ciphertext that Encrypt did not
// produce. For authenticated schemes it must fail opaquely; otherwise it only
// must not have panicked (the caller's deferred recover reports panics).
type failure struct {
	s    Scheme
	text string // the error text of the first failure
}

func (f *failure) check(t *testing.T, what string, pt []byte, err error) {
	t.Helper()
	if err != nil && pt != nil {
		t.Fatalf("%s: Decrypt returned a plaintext with error %v", what, err)
	}
	if err != nil && f.s.ErrDecrypt != nil && !errors.Is(err, f.s.ErrDecrypt) {
		t.Fatalf("%s: error %q does not match ErrDecrypt %q", what, err, f.s.ErrDecrypt)
	}
	if !f.s.Authenticated {
		return
	}
	if err == nil {
		t.Fatalf("%s: Decrypt succeeded, want an error from an authenticated scheme", what)
	}
	if f.text == "" {
		f.text = err.Error()
	} else if err.Error() != f.text {
		t.Fatalf("%s: error %q differs from an earlier failure's %q: failures must not say which check failed", what, err, f.text)
	}
}

func decryptNoPanic(t *testing.T, dec func([]byte) ([]byte, error), ct []byte, what string) (pt []byte, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: Decrypt panicked: %v", what, r)
		}
	}()
	return dec(ct)
}

// nextFlip returns the bit position after bit when flipping every step-th
// bit of a bits-long ciphertext, making sure the last bit is flipped too.
func nextFlip(bit, step, bits int) int {
	if next := bit + step; next < bits || bit == bits-1 {
		return next
	}
	return bits - 1
}

func testBitFlips(t *testing.T, s Scheme, pts, cts [][]byte) {
	f := &failure{s: s}
	for i, ct := range cts {
		buf := bytes.Clone(ct)
		bits := len(buf) * 8
		step := 1
		if s.MaxBitFlips > 0 && bits > s.MaxBitFlips {
			step = (bits + s.MaxBitFlips - 1) / s.MaxBitFlips
		}
		for bit := 0; bit < bits; bit = nextFlip(bit, step, bits) {
			buf[bit/8] ^= 1 << (bit % 8)
			what := fmt.Sprintf("plaintext of %d bytes, bit %d flipped", len(pts[i]), bit)
			pt, err := decryptNoPanic(t, s.Decrypt, buf, what)
			f.check(t, what, pt, err)
			if err == nil && !s.ManyToOne && len(pts[i]) >= 8 && bytes.Equal(pt, pts[i]) {
				// Even an unauthenticated scheme must not ignore a
				// ciphertext bit. (Short plaintexts are left out: a
				// flip can give a random plaintext equal to them by
				// chance.)
				t.Fatalf("%s: decrypted to the original plaintext", what)
			}
			buf[bit/8] ^= 1 << (bit % 8)
		}
	}
}

func testTruncations(t *testing.T, s Scheme, pts, cts [][]byte) {
	f := &failure{s: s}
	for i, ct := range cts {
		for n := range len(ct) {
			what := fmt.Sprintf("ciphertext of a %d-byte plaintext truncated to %d bytes", len(pts[i]), n)
			pt, err := decryptNoPanic(t, s.Decrypt, bytes.Clone(ct[:n]), what)
			f.check(t, what, pt, err)
		}
		for _, extra := range [][]byte{{0}, make([]byte, 16)} {
			what := fmt.Sprintf("ciphertext of a %d-byte plaintext with %d bytes appended", len(pts[i]), len(extra))
			pt, err := decryptNoPanic(t, s.Decrypt, append(bytes.Clone(ct), extra...), what)
			f.check(t, what, pt, err)
		}
	}
}

func testGarbage(t *testing.T, s Scheme) {
	rng := rand.New(rand.NewPCG(s.Seed, 0x6a5b))
	f := &failure{s: s}
	for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 48, 64, 100, 1000} {
		for range 4 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			what := fmt.Sprintf("%d random bytes", n)
			pt, err := decryptNoPanic(t, s.Decrypt, b, what)
			f.check(t, what, pt, err)
		}
	}
}

func testOtherKey(t *testing.T, s Scheme, pts, cts [][]byte) {
	f := &failure{s: s}
	for i, ct := range cts {
		what := fmt.Sprintf("ciphertext of a %d-byte plaintext under another key", len(pts[i]))
		pt, err := decryptNoPanic(t, s.OtherDecrypt, bytes.Clone(ct), what)
		f.check(t, what, pt, err)
		if err == nil && len(pts[i]) >= 16 && bytes.Equal(pt, pts[i]) {
			t.Errorf("%s: decrypted to the original plaintext", what)
		}
	}
}

func testConcurrent(t *testing.T, s Scheme, pts [][]byte) {
	const workers, rounds = 4, 20
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				p := pts[(w+r)%len(pts)]
				ct, err := s.Encrypt(bytes.Clone(p))
				if err != nil {
					errc <- err
					return
				}
				got, err := s.Decrypt(ct)
				if err != nil {
					errc <- err
					return
				}
				if !bytes.Equal(got, p) {
					errc <- fmt.Errorf("concurrent round trip of %d bytes failed", len(p))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

func trunc(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

package ope

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/kat.json")

func testKey(label string) []byte {
	k := sha256.Sum256([]byte("ope test key " + label))
	return k[:]
}

func TestNewRejectsBadKeys(t *testing.T) {
	for _, n := range []int{0, 1, 16, 24, 31, 33, 64} {
		if _, err := New32(make([]byte, n)); err == nil {
			t.Errorf("New32 accepted a %d-byte key", n)
		}
		if _, err := New64(make([]byte, n)); err == nil {
			t.Errorf("New64 accepted a %d-byte key", n)
		}
	}
	for _, l := range []int{-1, 25, 64} {
		if _, err := New32(testKey("a"), WithCacheLevels(l)); err == nil {
			t.Errorf("New32 accepted %d cache levels", l)
		}
	}
}

// pool32 returns n random int32 values plus the edges and duplicates.
func pool32(r *rand.Rand, n int) []int32 {
	v := []int32{math.MinInt32, math.MinInt32 + 1, -2, -1, 0, 1, 2, math.MaxInt32 - 1, math.MaxInt32, 0, -1, math.MaxInt32}
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0:
			v = append(v, int32(r.Uint32()))
		case 1: // small magnitudes, many neighbours
			v = append(v, int32(r.IntN(2001)-1000))
		case 2: // duplicates of earlier values
			v = append(v, v[r.IntN(len(v))])
		default: // neighbours of earlier values
			v = append(v, v[r.IntN(len(v))]+int32(r.IntN(3)-1))
		}
	}
	return v
}

func pool64(r *rand.Rand, n int) []int64 {
	v := []int64{math.MinInt64, math.MinInt64 + 1, -2, -1, 0, 1, 2, math.MaxInt64 - 1, math.MaxInt64, 0, math.MinInt64,
		math.MinInt32, math.MaxInt32, 1 << 32, -1 << 53}
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0:
			v = append(v, int64(r.Uint64()))
		case 1:
			v = append(v, int64(r.IntN(2001)-1000))
		case 2:
			v = append(v, v[r.IntN(len(v))])
		default:
			v = append(v, v[r.IntN(len(v))]+int64(r.IntN(3)-1))
		}
	}
	return v
}

// checkOrder checks the order of one million random pairs of the pool, and
// of all pairs through sorting.
func checkOrder[P int32 | int64, C any](t *testing.T, pts []P, cts []C, cmp func(a, b C) int) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 8))
	const pairs = 1_000_000
	for i := 0; i < pairs; i++ {
		a, b := r.IntN(len(pts)), r.IntN(len(pts))
		want := 0
		if pts[a] < pts[b] {
			want = -1
		} else if pts[a] > pts[b] {
			want = 1
		}
		if got := cmp(cts[a], cts[b]); got != want {
			t.Fatalf("order of %d, %d: ciphertexts compare %d, plaintexts %d", pts[a], pts[b], got, want)
		}
	}
	idx := make([]int, len(pts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp(cts[a], cts[b]) })
	for i := 1; i < len(idx); i++ {
		p, q := pts[idx[i-1]], pts[idx[i]]
		c := cmp(cts[idx[i-1]], cts[idx[i]])
		if p > q || (p == q) != (c == 0) {
			t.Fatalf("sorted ciphertexts: %d before %d (cmp %d)", p, q, c)
		}
	}
}

func TestCipher32(t *testing.T) {
	c, err := New32(testKey("32"))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	pts := pool32(r, 30000)
	cts := make([]uint64, len(pts))
	for i, v := range pts {
		cts[i] = c.EncryptOrderPreserving(v)
		got, err := c.DecryptOrderPreserving(cts[i])
		if err != nil || got != v {
			t.Fatalf("round trip of %d: got %d, %v", v, got, err)
		}
	}
	checkOrder(t, pts, cts, func(a, b uint64) int {
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	})
	// The representations keep the order.
	for i := 1; i < 2000; i++ {
		a, b := cts[i-1], cts[i]
		if (a < b) != (CiphertextToInt8(a) < CiphertextToInt8(b)) {
			t.Fatal("CiphertextToInt8 does not keep the order")
		}
		if CiphertextFromInt8(CiphertextToInt8(a)) != a {
			t.Fatal("CiphertextFromInt8 does not invert CiphertextToInt8")
		}
		ba, bb := AppendCiphertext32(nil, a), AppendCiphertext32(nil, b)
		if (a < b) != (bytes.Compare(ba, bb) < 0) {
			t.Fatal("AppendCiphertext32 does not keep the order")
		}
		if p, err := ParseCiphertext32(ba); err != nil || p != a {
			t.Fatal("ParseCiphertext32 does not invert AppendCiphertext32")
		}
	}
	if c.EncryptOrderPreserving(math.MinInt32) >= c.EncryptOrderPreserving(math.MinInt32+1) ||
		c.EncryptOrderPreserving(math.MaxInt32-1) >= c.EncryptOrderPreserving(math.MaxInt32) {
		t.Fatal("edges out of order")
	}
}

func TestCipher64(t *testing.T) {
	c, err := New64(testKey("64"))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2, 2))
	pts := pool64(r, 12000)
	cts := make([]Uint128, len(pts))
	for i, v := range pts {
		cts[i] = c.EncryptOrderPreserving(v)
		got, err := c.DecryptOrderPreserving(cts[i])
		if err != nil || got != v {
			t.Fatalf("round trip of %d: got %d, %v", v, got, err)
		}
	}
	checkOrder(t, pts, cts, Uint128.Cmp)
	for i := 1; i < len(cts); i++ {
		a, b := cts[i-1], cts[i]
		if bytes.Compare(a.Bytes(), b.Bytes()) != a.Cmp(b) {
			t.Fatal("Bytes does not keep the order")
		}
	}
}

func TestUnsignedMethods(t *testing.T) {
	c32, _ := New32(testKey("u"))
	c64, _ := New64(testKey("u"))
	for _, v := range []uint32{0, 1, 1 << 31, math.MaxUint32} {
		ct := c32.EncryptUint32OrderPreserving(v)
		if got, err := c32.DecryptUint32OrderPreserving(ct); err != nil || got != v {
			t.Errorf("uint32 round trip of %d: %d, %v", v, got, err)
		}
	}
	if c32.EncryptUint32OrderPreserving(0) >= c32.EncryptUint32OrderPreserving(math.MaxUint32) {
		t.Error("uint32 order")
	}
	for _, v := range []uint64{0, 1, 1 << 63, math.MaxUint64} {
		ct := c64.EncryptUint64OrderPreserving(v)
		if got, err := c64.DecryptUint64OrderPreserving(ct); err != nil || got != v {
			t.Errorf("uint64 round trip of %d: %d, %v", v, got, err)
		}
	}
}

func TestDeterminismAndKeys(t *testing.T) {
	a, _ := New32(testKey("k1"))
	b, _ := New32(testKey("k1"), WithCacheLevels(0))
	c, _ := New32(testKey("k1"), WithCacheLevels(24))
	other, _ := New32(testKey("k2"))
	a64, _ := New64(testKey("k1"))
	b64, _ := New64(testKey("k1"), WithCacheLevels(0))
	other64, _ := New64(testKey("k2"))
	r := rand.New(rand.NewPCG(5, 5))
	same := 0
	for i := 0; i < 3000; i++ {
		v := int32(r.Uint32())
		ca := a.EncryptOrderPreserving(v)
		if ca != a.EncryptOrderPreserving(v) || ca != b.EncryptOrderPreserving(v) || ca != c.EncryptOrderPreserving(v) {
			t.Fatalf("encryption of %d is not deterministic across calls and cache sizes", v)
		}
		co := other.EncryptOrderPreserving(v)
		if co == ca {
			same++
		}
		// A ciphertext under another key does not decrypt (or, rarely, to
		// garbage: only 2^-32 of the range are ciphertexts).
		if got, err := a.DecryptOrderPreserving(co); err == nil && got == v {
			t.Fatalf("ciphertext under another key decrypted to the plaintext")
		}
		w := int64(r.Uint64())
		c64 := a64.EncryptOrderPreserving(w)
		if c64 != b64.EncryptOrderPreserving(w) {
			t.Fatal("Cipher64 not deterministic across cache sizes")
		}
		if c64 == other64.EncryptOrderPreserving(w) {
			same++
		}
	}
	if same > 0 {
		t.Errorf("%d ciphertexts equal under two keys", same)
	}
	// The signed and unsigned domains of one cipher are different maps.
	if a.EncryptOrderPreserving(5) == a.EncryptUint32OrderPreserving(5) {
		t.Error("signed and unsigned encryptions of 5 are equal")
	}
}

func TestDecryptRejects(t *testing.T) {
	c, _ := New32(testKey("rej"))
	c64, _ := New64(testKey("rej"))
	r := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 2000; i++ {
		v := int32(r.Uint32())
		ct := c.EncryptOrderPreserving(v)
		for _, bad := range []uint64{ct + 1, ct - 1, ct ^ 1<<20, r.Uint64()} {
			if bad == ct {
				continue
			}
			if got, err := c.DecryptOrderPreserving(bad); err != ErrDecrypt {
				t.Fatalf("decrypting %d (near the ciphertext of %d) gave %d, %v", bad, v, got, err)
			}
		}
		ct64 := c64.EncryptOrderPreserving(int64(r.Uint64()))
		for _, bad := range []Uint128{{ct64.Hi, ct64.Lo + 1}, {ct64.Hi, ct64.Lo - 1}, {ct64.Hi ^ 1, ct64.Lo}, {r.Uint64(), r.Uint64()}} {
			if _, err := c64.DecryptOrderPreserving(bad); err != ErrDecrypt {
				t.Fatalf("decrypting a modified Cipher64 ciphertext: %v", err)
			}
		}
	}
	for _, ct := range []uint64{0, math.MaxUint64} {
		if _, err := c.DecryptOrderPreserving(ct); err != ErrDecrypt {
			t.Errorf("decrypting %d: %v", ct, err)
		}
	}
}

// TestDeepTree exercises the coins of nodes deeper than 80 levels (two-block
// CBC-MAC) with a domain of 2^100 values in a 2^128 range.
func TestDeepTree(t *testing.T) {
	tr, err := newTree(testKey("deep"), 100, 128, 8)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 4))
	var pts []u128
	for i := 0; i < 300; i++ {
		p := u128{r.Uint64() >> 28, r.Uint64()}
		pts = append(pts, p, p.add64(1))
	}
	pts = append(pts, u128{}, pow2(100).sub64(1))
	slices.SortFunc(pts, u128.cmp)
	pts = slices.Compact(pts)
	prev := u128{}
	for i, p := range pts {
		ct := tr.encrypt(p)
		if i > 0 && !prev.less(ct) {
			t.Fatalf("deep tree: order broken at %v", p)
		}
		prev = ct
		if got, ok := tr.decrypt(ct); !ok || got != p {
			t.Fatalf("deep tree: round trip of %v gave %v, %v", p, got, ok)
		}
	}
}

func TestConcurrentEncryption(t *testing.T) {
	c, _ := New32(testKey("conc"))
	ref, _ := New32(testKey("conc"), WithCacheLevels(0))
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 0))
			for i := 0; i < 500; i++ {
				v := int32(r.Uint32())
				if c.EncryptOrderPreserving(v) != ref.EncryptOrderPreserving(v) {
					errs <- fmt.Errorf("goroutine %d: %d encrypts differently", g, v)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestLastPathReuse: reusing the previous path's nodes gives the same
// ciphertexts as sampling every node, for ascending, clustered, random
// and repeated values, in both directions, on several goroutines.
func TestLastPathReuse(t *testing.T) {
	for _, dbits := range []uint{32, 64} {
		reuse, err := newTree(testKey("reuse"), dbits, 2*dbits, 4)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := newTree(testKey("reuse"), dbits, 2*dbits, 0)
		ref.paths = nil
		r := rand.New(rand.NewPCG(9, uint64(dbits)))
		mid := pow2(dbits - 1)
		var vals []u128
		for i := range uint64(300) {
			vals = append(vals, mid.add64(i)) // ascending keys
		}
		for range 300 {
			vals = append(vals, mid.add64(r.Uint64N(1<<12))) // a cluster
		}
		for range 300 {
			vals = append(vals, u128{lo: r.Uint64()}.lowBits(dbits)) // anywhere
		}
		vals = append(vals, vals[:50]...) // repeated, descending
		slices.Reverse(vals[len(vals)-50:])
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < len(vals); i += 4 {
					v := vals[i]
					ct := reuse.encrypt(v)
					if want := ref.encrypt(v); ct != want {
						errs <- fmt.Errorf("%d bits: %v encrypts to %v, want %v", dbits, v, ct, want)
						return
					}
					if m, ok := reuse.decrypt(ct); !ok || m != v {
						errs <- fmt.Errorf("%d bits: %v decrypts to %v, %v", dbits, v, m, ok)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}

func TestUint128Encoding(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	vals := []Uint128{{}, {0, 1}, {0, math.MaxUint64}, {1, 0}, {math.MaxUint64, math.MaxUint64}, {0, 10_000_000_000_000_000_000}, {1, 1}}
	for i := 0; i < 2000; i++ {
		vals = append(vals, Uint128{r.Uint64() >> r.UintN(64), r.Uint64()})
	}
	for _, v := range vals {
		want := new(big.Int).Lsh(new(big.Int).SetUint64(v.Hi), 64)
		want.Or(want, new(big.Int).SetUint64(v.Lo))
		if s := v.String(); s != want.String() {
			t.Fatalf("String(%v) = %s, want %s", v, s, want)
		}
		if p, err := ParseUint128(v.String()); err != nil || p != v {
			t.Fatalf("ParseUint128(%s) = %v, %v", v, p, err)
		}
		if p, err := Uint128FromBytes(v.Bytes()); err != nil || p != v {
			t.Fatalf("Uint128FromBytes: %v, %v", p, err)
		}
	}
	for _, s := range []string{"", "-1", "1.5", " 1", "340282366920938463463374607431768211456", "1e5", "0x10", "3402823669209384634633746074317682114550"} {
		if _, err := ParseUint128(s); err != ErrDecrypt {
			t.Errorf("ParseUint128(%q): %v", s, err)
		}
	}
	if v, err := ParseUint128("340282366920938463463374607431768211455"); err != nil || v != (Uint128{math.MaxUint64, math.MaxUint64}) {
		t.Errorf("max: %v %v", v, err)
	}
	for _, n := range []int{0, 15, 17} {
		if _, err := Uint128FromBytes(make([]byte, n)); err != ErrDecrypt {
			t.Errorf("Uint128FromBytes(%d bytes): %v", n, err)
		}
	}
	for _, n := range []int{0, 7, 9, 16} {
		if _, err := ParseCiphertext32(make([]byte, n)); err != ErrDecrypt {
			t.Errorf("ParseCiphertext32(%d bytes): %v", n, err)
		}
	}
}

type kat struct {
	Key  string            `json:"key"`
	V32  map[string]string `json:"int32"`
	V64  map[string]string `json:"int64"`
	Note string            `json:"note"`
}

// TestKnownAnswers freezes ciphertexts for a fixed key: any change to the
// algorithm, key derivation or sampler shows up here (and would make
// existing encrypted data unreadable).
func TestKnownAnswers(t *testing.T) {
	key := testKey("kat")
	c32, _ := New32(key)
	c64, _ := New64(key)
	got := kat{Key: fmt.Sprintf("%x", key), V32: map[string]string{}, V64: map[string]string{},
		Note: "regenerate only on a deliberate format change: go test -run KnownAnswers -update"}
	for _, v := range []int32{math.MinInt32, -1000000, -1, 0, 1, 2, 42, 1 << 20, math.MaxInt32} {
		got.V32[fmt.Sprint(v)] = fmt.Sprint(c32.EncryptOrderPreserving(v))
	}
	for _, v := range []int64{math.MinInt64, -1 << 40, -1, 0, 1, 2, 42, 1 << 50, math.MaxInt64} {
		got.V64[fmt.Sprint(v)] = c64.EncryptOrderPreserving(v).String()
	}
	path := "testdata/kat.json"
	if *update {
		b, _ := json.MarshalIndent(got, "", "  ")
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want kat
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if want.Key != got.Key || len(want.V32) != len(got.V32) || len(want.V64) != len(got.V64) {
		t.Fatal("testdata/kat.json does not match the test")
	}
	for k, v := range want.V32 {
		if got.V32[k] != v {
			t.Errorf("int32 %s: got %s, want %s", k, got.V32[k], v)
		}
	}
	for k, v := range want.V64 {
		if got.V64[k] != v {
			t.Errorf("int64 %s: got %s, want %s", k, got.V64[k], v)
		}
	}
}

func FuzzDecrypt64(f *testing.F) {
	c, _ := New64(testKey("fuzz"))
	ct := c.EncryptOrderPreserving(12345)
	f.Add(ct.Bytes())
	f.Add([]byte(ct.String()))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, parse := range []func([]byte) (Uint128, error){
			Uint128FromBytes,
			func(b []byte) (Uint128, error) { return ParseUint128(string(b)) },
		} {
			v, err := parse(b)
			if err != nil {
				if err != ErrDecrypt {
					t.Fatalf("parse error %v", err)
				}
				continue
			}
			m, err := c.DecryptOrderPreserving(v)
			if err != nil {
				if err != ErrDecrypt {
					t.Fatalf("decrypt error %v", err)
				}
				continue
			}
			if c.EncryptOrderPreserving(m) != v {
				t.Fatalf("decrypted %v to %d which does not encrypt back", v, m)
			}
		}
	})
}

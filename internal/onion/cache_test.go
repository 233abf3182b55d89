package onion

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestPlainCacheRepeatedValuesHit(t *testing.T) {
	var c plainCache
	v := Value{}
	for i := range 3 * cacheSize {
		ct := []byte(strconv.Itoa(i % 10))
		if _, ok := c.lookup(ct); !ok {
			c.store(ct, v)
		}
	}
	if _, ok := c.lookup([]byte("7")); !ok {
		t.Fatal("a value repeated thousands of times is not cached")
	}
	if c.bypass.Load() != 0 {
		t.Fatalf("cache of repeated values bypassed (%d)", c.bypass.Load())
	}
}

func TestPlainCacheBypassedWithoutHits(t *testing.T) {
	var c plainCache
	v := Value{}
	distinct := 0
	next := func() []byte {
		distinct++
		return []byte("ct" + strconv.Itoa(distinct))
	}
	// One filling of distinct values, then one more store: bypassed.
	for range cacheSize + 1 {
		ct := next()
		if _, ok := c.lookup(ct); ok {
			t.Fatal("hit on a value never stored")
		}
		c.store(ct, v)
	}
	if c.bypass.Load() == 0 {
		t.Fatal("a cache without hits is not bypassed")
	}
	ct := next()
	c.store(ct, v)
	if _, ok := c.lookup(ct); ok {
		t.Fatal("a bypassed cache stored a value")
	}
	// After the bypass span the cache is tried again.
	for c.bypass.Load() > 0 {
		c.store(next(), v)
	}
	ct = next()
	c.store(ct, v)
	if _, ok := c.lookup(ct); !ok {
		t.Fatal("the cache is not tried again after the bypass")
	}
}

// TestDetCacheBypass: a cache of computations whose inputs repeat keeps
// hitting; one whose inputs never repeat is turned off after a filling,
// computes every value meanwhile, and is tried again after bypassSpan.
func TestDetCacheBypass(t *testing.T) {
	calls := 0
	square := func(k int64) int64 { calls++; return k * k }
	var repeated detCache[int64, int64]
	for i := range int64(3 * cacheSize) {
		if got := repeated.get(i%10, square); got != (i%10)*(i%10) {
			t.Fatalf("get(%d) = %d", i%10, got)
		}
	}
	if calls != 10 || repeated.bypass.Load() != 0 {
		t.Fatalf("repeated inputs: %d computations, bypass %d; want 10, 0", calls, repeated.bypass.Load())
	}
	var unique detCache[int64, int64]
	k := int64(0)
	for range cacheSize + 1 {
		k++
		unique.get(k, square)
	}
	if unique.bypass.Load() == 0 {
		t.Fatal("a cache without hits is not bypassed")
	}
	calls = 0
	unique.get(k, square) // in the map, but the map is not looked at
	if calls != 1 {
		t.Fatal("a bypassed cache answered from its map")
	}
	for unique.bypass.Load() > 0 {
		k++
		unique.get(k, square)
	}
	unique.get(k, square)
	calls = 0
	if unique.get(k, square); calls != 0 {
		t.Fatal("the cache is not tried again after the bypass")
	}
}

// TestCacheKeepsWorkingSetOfTwoGenerations: values drawn at random from
// more than one generation's worth (sysbench's 10,000 rows) all stay in
// the cache once seen. Moving old hits to the current generation missed
// one in ten; emptying one full map missed about half.
func TestCacheKeepsWorkingSetOfTwoGenerations(t *testing.T) {
	const n = cacheSize + cacheSize/4
	r := rand.New(rand.NewPCG(1, 2))
	var pc plainCache
	var dc detCache[int64, int64]
	computed := 0
	compute := func(k int64) int64 { computed++; return k }
	draw := func() int64 { return r.Int64N(n) }
	for range 20 * n { // warm up
		k := draw()
		ct := []byte(strconv.FormatInt(k, 10))
		if _, ok := pc.lookup(ct); !ok {
			pc.store(ct, Value{})
		}
		dc.get(k, compute)
	}
	misses := 0
	computed = 0
	const draws = 10 * n
	for range draws {
		k := draw()
		ct := []byte(strconv.FormatInt(k, 10))
		if _, ok := pc.lookup(ct); !ok {
			misses++
			pc.store(ct, Value{})
		}
		if got := dc.get(k, compute); got != k {
			t.Fatalf("get(%d) = %d", k, got)
		}
	}
	if max := draws / 100; misses > max || computed > max {
		t.Errorf("%d values drawn %d times: %d plaintext misses, %d computations; want at most %d", n, draws, misses, computed, max)
	}
}

// TestPlainCacheMatchesWholeCiphertext: a ciphertext that shares another's
// first 16 bytes (the AES-SIV synthetic IV, which the server could copy
// onto a forged body) is not answered from the cache.
func TestPlainCacheMatchesWholeCiphertext(t *testing.T) {
	var c plainCache
	stored := []byte("0123456789abcdef-the body")
	c.store(stored, TextValue("stored"))
	if v, ok := c.lookup(stored); !ok || v.Str() != "stored" {
		t.Fatalf("lookup(stored) = %v, %v", v, ok)
	}
	for _, ct := range []string{"0123456789abcdef-another body", "0123456789abcdef", "0123456789abcdef-the bod"} {
		if v, ok := c.lookup([]byte(ct)); ok {
			t.Errorf("lookup(%q) = %v from the entry of %q", ct, v, stored)
		}
	}
}

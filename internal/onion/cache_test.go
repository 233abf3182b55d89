package onion

import (
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
	if c.bypass != 0 {
		t.Fatalf("cache of repeated values bypassed (%d)", c.bypass)
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
	if c.bypass == 0 {
		t.Fatal("a cache without hits is not bypassed")
	}
	ct := next()
	c.store(ct, v)
	if _, ok := c.lookup(ct); ok {
		t.Fatal("a bypassed cache stored a value")
	}
	// After the bypass span the cache is tried again.
	for c.bypass > 0 {
		c.store(next(), v)
	}
	ct = next()
	c.store(ct, v)
	if _, ok := c.lookup(ct); !ok {
		t.Fatal("the cache is not tried again after the bypass")
	}
}

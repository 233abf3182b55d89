package onion

import (
	"sync"
	"sync/atomic"
)

// cacheSize bounds each deterministic-result cache of a column.
const cacheSize = 8192

// detCache remembers the results of a deterministic, keyed computation
// (OPE ciphertexts, search tokens) for recently seen inputs: loads repeat
// values (dates, cities, amounts), and these computations cost tens of
// microseconds. When full it is emptied (cheaper than LRU bookkeeping,
// and as good for the skewed inputs that benefit).
//
// It holds plaintexts next to their ciphertexts in the proxy's memory,
// which already holds the keys that relate them: it reveals nothing a
// memory dump would not. Results are shared: callers must not modify them.
//
// A column whose values rarely repeat (keys, timestamps) would pay the
// lock and the map for no hit: as plainCache does, a filling with fewer
// than one hit for every four stores turns the cache off for the next
// bypassSpan computations. Checked without the lock, so that parallel
// encryption of unique values does not contend on it.
type detCache[K comparable, V any] struct {
	mu           sync.Mutex
	m            map[K]V
	hits, stores int
	bypass       atomic.Int64 // computations left that skip the cache
}

func (c *detCache[K, V]) get(k K, compute func(K) V) V {
	if c.bypass.Load() > 0 {
		c.bypass.Add(-1)
		return compute(k)
	}
	c.mu.Lock()
	v, ok := c.m[k]
	if ok {
		c.hits++
	}
	c.mu.Unlock()
	if ok {
		return v
	}
	v = compute(k)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= cacheSize {
		if c.m != nil && c.hits < c.stores/4 {
			c.bypass.Store(bypassSpan)
		}
		c.m, c.hits, c.stores = make(map[K]V, 64), 0, 0
	}
	c.m[k] = v
	c.stores++
	return v
}

// plainCache remembers the plaintexts of recently decrypted DET
// ciphertexts of a column (bounded, emptied when full, like detCache).
// Only ciphertexts that decrypted are stored.
//
// Warning: a cache hit is faster than a decryption, so the time the proxy
// takes to decrypt a result depends on how often its values repeat. The
// server sees the result it sends and the time the proxy takes to read
// it; at the DET layer it knows the repetitions anyway, and at the RND
// layer timing over a whole result is a coarse and noisy signal of them.
//
// A column whose values rarely repeat (prices, comments) would pay for
// the cache without hits: when a filling of the cache saw fewer than one
// hit for every four stores, the cache is bypassed for the next
// bypassSpan decryptions, then tried again.
type plainCache struct {
	mu           sync.Mutex
	m            map[string]Value
	hits, stores int
	bypass       int // decryptions left that skip the cache
}

// bypassSpan is how many decryptions skip a cache that did not pay.
const bypassSpan = 8 * cacheSize

// lookup returns the plaintext of ct if the cache holds it; ok is false
// too while the cache is bypassed.
func (c *plainCache) lookup(ct []byte) (Value, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bypass > 0 {
		return Value{}, false
	}
	v, ok := c.m[string(ct)]
	if ok {
		c.hits++
	}
	return v, ok
}

// store remembers the plaintext of ct (unless the cache is bypassed).
func (c *plainCache) store(ct []byte, v Value) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bypass > 0 {
		c.bypass--
		return
	}
	if c.m == nil || len(c.m) >= cacheSize {
		if c.m != nil && c.hits < c.stores/4 {
			c.bypass = bypassSpan
		}
		c.m, c.hits, c.stores = make(map[string]Value, 64), 0, 0
		if c.bypass > 0 {
			return
		}
	}
	c.m[string(ct)] = v
	c.stores++
}

package onion

import (
	"sync"
	"sync/atomic"
)

// cacheSize bounds each generation of a deterministic-result cache of a
// column.
const cacheSize = 8192

// detCache remembers the results of a deterministic, keyed computation
// (OPE ciphertexts, search tokens) for recently seen inputs: loads repeat
// values (dates, cities, amounts), and these computations cost tens of
// microseconds. It keeps two generations of at most cacheSize entries:
// misses go into the current one; when it is full it becomes the old one
// and the old one is dropped. A hit in the old one stays there. Moving it
// to the current one (close to LRU) filled the current generation with
// hits: of sysbench's 10,000 values drawn at random one in ten missed,
// and each filling allocated a new map. Without the move all 10,000 fit
// in the two generations and none misses; a value used often is dropped
// at most once a filling.
//
// It holds plaintexts next to their ciphertexts in the proxy's memory,
// which already holds the keys that relate them: it reveals nothing a
// memory dump would not. Results are shared: callers must not modify them.
//
// A column whose values rarely repeat (keys, timestamps) would pay the
// lock and the map for no hit (payoff turns it off).
type detCache[K comparable, V any] struct {
	mu     sync.Mutex
	m, old map[K]V // the current generation and the one before
	payoff
}

// payoff turns a cache off for bypassSpan uses after a filling that did
// not pay: fewer than one hit for every four stores. The switch is read
// without the cache's lock, so that workers encrypting or decrypting
// values that do not repeat do not contend on it.
type payoff struct {
	hits, stores int          // of the current filling, under the cache's lock
	bypass       atomic.Int64 // uses left that skip the cache, read without the lock
}

// skip reports whether the cache is off, counting one use if so.
func (p *payoff) skip() bool {
	if p.bypass.Load() > 0 {
		p.bypass.Add(-1)
		return true
	}
	return false
}

// refilled starts a filling (under the cache's lock), turning the cache
// off if the last one did not pay; it reports whether the cache is on.
func (p *payoff) refilled(first bool) bool {
	if !first && p.hits < p.stores/4 {
		p.bypass.Store(bypassSpan)
	}
	p.hits, p.stores = 0, 0
	return p.bypass.Load() == 0
}

func (c *detCache[K, V]) get(k K, compute func(K) V) V {
	if c.skip() {
		return compute(k)
	}
	c.mu.Lock()
	v, ok := c.m[k]
	if !ok {
		v, ok = c.old[k]
	}
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
	c.putLocked(k, v)
	return v
}

// putLocked stores v for k in the current generation, starting a new one
// when it is full.
func (c *detCache[K, V]) putLocked(k K, v V) {
	if c.m == nil || len(c.m) >= cacheSize {
		on := c.refilled(c.m == nil)
		c.old, c.m = c.m, make(map[K]V, 64)
		if !on {
			c.old = nil
		}
	}
	c.m[k] = v
	c.stores++
}

// plainCache remembers the plaintexts of recently decrypted DET
// ciphertexts of a column (two bounded generations, like detCache).
// Only ciphertexts that decrypted are stored. Compact columns (one AES
// block of DET) do without it: their decryption costs less than a lookup
// once sessions contend for the lock (BenchmarkDecryptCompact).
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
	mu     sync.Mutex
	m, old map[ctHead]plainEntry // generations, as in detCache
	payoff
}

// ctHead keys plainCache by a ciphertext's first 16 bytes: the synthetic
// IV of an AES-SIV ciphertext, the whole of a Block one. A fixed-size key
// hashes and compares in a few instructions; hashing a 136-byte
// ciphertext made a hit cost nearly half a decryption.
type ctHead [16]byte

// headOf returns ct's first 16 bytes, zero-padded.
func headOf(ct []byte) (h ctHead) {
	copy(h[:], ct)
	return h
}

// plainEntry is a plaintext with its whole ciphertext: a hit must match
// it, so that a ciphertext sharing another's head (one forged by the
// server) is decrypted, and fails, rather than answered from the cache.
type plainEntry struct {
	ct string
	v  Value
}

// bypassSpan is how many uses skip a cache that did not pay.
const bypassSpan = 8 * cacheSize

// lookup returns the plaintext of ct if the cache holds it; ok is false
// too while the cache is bypassed.
func (c *plainCache) lookup(ct []byte) (Value, bool) {
	if c.bypass.Load() > 0 {
		return Value{}, false
	}
	h := headOf(ct)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[h]
	if !ok {
		e, ok = c.old[h]
	}
	if !ok || e.ct != string(ct) {
		return Value{}, false
	}
	c.hits++
	return e.v, true
}

// store remembers the plaintext of ct (unless the cache is bypassed).
func (c *plainCache) store(ct []byte, v Value) {
	if c.skip() {
		return
	}
	h := headOf(ct)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(h, plainEntry{ct: string(ct), v: v})
}

// putLocked is detCache.putLocked. A generation after a full one is made
// full-sized: it fills too, and growing a map rehashes every key again.
func (c *plainCache) putLocked(h ctHead, e plainEntry) {
	if c.m == nil || len(c.m) >= cacheSize {
		full := c.m != nil
		on := c.refilled(!full)
		size := 64
		if full && on {
			size = cacheSize
		}
		c.old, c.m = c.m, make(map[ctHead]plainEntry, size)
		if !on {
			c.old = nil
			return
		}
	}
	c.m[h] = e
	c.stores++
}

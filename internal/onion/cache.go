package onion

import "sync"

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
type detCache[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]V
}

func (c *detCache[K, V]) get(k K, compute func(K) V) V {
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = compute(k)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheSize {
		c.m = make(map[K]V, 64)
	}
	c.m[k] = v
	c.mu.Unlock()
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
type plainCache struct {
	mu sync.Mutex
	m  map[string]Value
}

func (c *plainCache) lookup(ct []byte) (Value, bool) {
	c.mu.Lock()
	v, ok := c.m[string(ct)]
	c.mu.Unlock()
	return v, ok
}

func (c *plainCache) store(ct []byte, v Value) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheSize {
		c.m = make(map[string]Value, 64)
	}
	c.m[string(ct)] = v
	c.mu.Unlock()
}

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

package ope

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"math"
	"sync"
	"sync/atomic"
)

// The tree of the lazy-sampling algorithm of Boldyreva, Chenette, Lee and
// O'Neill ("Order-Preserving Symmetric Encryption", EUROCRYPT 2009).
//
// The domain is [0, 2^dbits), the range [0, 2^rbits). A node is a range
// interval of size 2^j, j = rbits - depth, identified by its depth and by
// path, the depth high bits of every ciphertext in it. Because the range of
// every node is a power of two, splitting it in half is exact and the node
// identity needs no domain information: the node's domain interval follows
// from the key and the path.
//
// At a node with K > 1 plaintexts, X ~ HG(N, K, N/2) of them (sampled from
// coins that are a pseudorandom function of the key and the node) go to the
// lower half of the range, the others to the upper half. A node with one
// plaintext maps it to a ciphertext drawn uniformly from its whole range,
// again with coins from the key and the node. This is the algorithm of the
// paper with TapeGen instantiated by AES-256, except that the leaf coins
// are keyed by the leaf's range alone (the leaf's single plaintext is a
// function of it).

const (
	kindSplit = 1
	kindLeaf  = 2
	kindDeep  = 0x80 // node coins from the two-block CBC-MAC

	// maxShallowDepth is the deepest node whose path fits the one-block
	// coin input (80 bits of path).
	maxShallowDepth = 80

	maxCacheLevels     = 24
	defaultCacheLevels = 16
)

type tree struct {
	dbits, rbits uint
	tag          byte
	blk          cipher.Block // node coins, one block per 128 bits
	mac          cipher.Block // node coins of deep nodes (CBC-MAC of two blocks)

	cacheLevels uint
	// cache[1<<depth | path] holds X+1 for the nodes of depth < cacheLevels
	// (0: not computed yet). Filled lazily; every writer writes the same
	// value.
	cache []atomic.Uint64

	// paths recycles the last path walked, per goroutine in practice
	// (sync.Pool keeps one per P): values that are close share the nodes
	// of their path below the cached top levels, and a load of ascending
	// keys or dates then samples only the few nodes where its value's
	// path leaves the previous one's. nil turns it off (tests).
	paths *sync.Pool
}

// lastPath is the nodes below the cached levels that one encryption or
// decryption walked: at each depth, the node's path and its split X.
// A node is identified by its depth and path alone, so an entry whose
// path matches is that node, and its X is the one split would sample.
type lastPath struct {
	path [maxDepth]u128
	x    [maxDepth]u128
	set  [maxDepth]bool
}

// maxDepth bounds the depth of a split: a node of depth rbits has a
// range of one ciphertext, so one plaintext at most.
const maxDepth = 129

func newTree(key []byte, dbits, rbits uint, cacheLevels int) (*tree, error) {
	if len(key) != KeySize {
		return nil, errKeySize
	}
	if cacheLevels < 0 || cacheLevels > maxCacheLevels {
		return nil, errCacheLevels
	}
	root, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	derive := func(label byte) cipher.Block {
		var in [16]byte
		k := make([]byte, 32)
		copy(in[:], "pgonion ope key")
		in[15] = label
		root.Encrypt(k[:16], in[:])
		in[14] = 1
		root.Encrypt(k[16:], in[:])
		b, err := aes.NewCipher(k)
		if err != nil {
			panic(err) // 32-byte key: cannot fail
		}
		clear(k)
		return b
	}
	t := &tree{
		dbits:       dbits,
		rbits:       rbits,
		tag:         byte(dbits/8) << 2,
		blk:         derive(1),
		mac:         derive(2),
		cacheLevels: uint(cacheLevels),
	}
	if cacheLevels > 0 {
		t.cache = make([]atomic.Uint64, 1<<cacheLevels)
	}
	t.paths = &sync.Pool{New: func() any { return new(lastPath) }}
	return t, nil
}

// nodeCoins is the random tape of one node: 64-bit words from AES-256 in a
// counter mode whose input encodes the node.
type nodeCoins struct {
	t     *tree
	in    [16]byte
	in2   [16]byte
	out   [16]byte
	ctr   uint32
	spare uint64
	have  bool
	deep  bool
}

func (c *nodeCoins) reset(kind byte, depth uint, path u128) {
	c.ctr = 0
	c.have = false
	c.in = [16]byte{}
	c.in[0] = c.t.tag | kind
	c.in[1] = byte(depth)
	if depth <= maxShallowDepth {
		c.deep = false
		binary.BigEndian.PutUint16(c.in[6:8], uint16(path.hi))
		binary.BigEndian.PutUint64(c.in[8:16], path.lo)
		return
	}
	c.deep = true
	c.in[0] |= kindDeep
	binary.BigEndian.PutUint64(c.in[8:16], path.hi)
	c.in2 = [16]byte{}
	binary.BigEndian.PutUint64(c.in2[0:8], path.lo)
}

// next returns the next 64 random bits of the node's tape. The 32-bit
// block counter cannot wrap in practice (a node consumes a few blocks).
func (c *nodeCoins) next() uint64 {
	if c.have {
		c.have = false
		return c.spare
	}
	binary.BigEndian.PutUint32(c.in[2:6], c.ctr)
	c.ctr++
	if !c.deep {
		c.t.blk.Encrypt(c.out[:], c.in[:])
	} else {
		c.t.mac.Encrypt(c.out[:], c.in[:])
		for i := range c.out {
			c.out[i] ^= c.in2[i]
		}
		c.t.mac.Encrypt(c.out[:], c.out[:])
	}
	c.spare = binary.LittleEndian.Uint64(c.out[8:])
	c.have = true
	return binary.LittleEndian.Uint64(c.out[:8])
}

// split returns X, the number of the node's K plaintexts that go to the
// lower half of its range. last, when not nil, is the path walked before
// (below the cached levels).
func (t *tree) split(c *nodeCoins, depth uint, path, K u128, last *lastPath) u128 {
	cached := depth < t.cacheLevels
	var idx uint64
	if cached {
		idx = 1<<depth | path.lo
		if v := t.cache[idx].Load(); v != 0 {
			return u64(v - 1)
		}
	} else if last != nil && last.set[depth] && last.path[depth] == path {
		return last.x[depth]
	}
	c.reset(kindSplit, depth, path)
	X := sampleHalf(t.rbits-depth, K, c)
	if cached && X.hi == 0 && X.lo != math.MaxUint64 {
		t.cache[idx].Store(X.lo + 1)
	} else if !cached && last != nil {
		last.path[depth], last.x[depth], last.set[depth] = path, X, true
	}
	return X
}

// lastPath returns a path to reuse and the function that gives it back;
// nil when reuse is off.
func (t *tree) lastPath() (*lastPath, func()) {
	if t.paths == nil {
		return nil, func() {}
	}
	last := t.paths.Get().(*lastPath)
	return last, func() { t.paths.Put(last) }
}

// leaf returns the ciphertext of the only plaintext of a node.
func (t *tree) leaf(c *nodeCoins, depth uint, path u128) u128 {
	j := t.rbits - depth
	c.reset(kindLeaf, depth, path)
	hi := c.next()
	lo := c.next()
	return path.shl(j).add(u128{hi, lo}.lowBits(j))
}

// encrypt maps m in [0, 2^dbits) to its ciphertext in [0, 2^rbits).
func (t *tree) encrypt(m u128) u128 {
	c := &nodeCoins{t: t}
	last, done := t.lastPath()
	defer done()
	var dlo, path u128
	K := pow2(t.dbits)
	for depth := uint(0); ; depth++ {
		if K.isOne() {
			return t.leaf(c, depth, path)
		}
		X := t.split(c, depth, path, K, last)
		if lim := dlo.add(X); m.less(lim) {
			K = X
			path = path.shl(1)
		} else {
			dlo = lim
			K = K.sub(X)
			path = path.shl(1).add64(1)
		}
	}
}

// decrypt inverts encrypt; ok is false when ct is not the ciphertext of
// any plaintext.
func (t *tree) decrypt(ct u128) (m u128, ok bool) {
	if t.rbits < 128 && !ct.less(pow2(t.rbits)) {
		return u128{}, false
	}
	c := &nodeCoins{t: t}
	last, done := t.lastPath()
	defer done()
	var dlo u128
	K := pow2(t.dbits)
	for depth := uint(0); ; depth++ {
		path := ct.shr(t.rbits - depth)
		if K.isOne() {
			return dlo, t.leaf(c, depth, path) == ct
		}
		X := t.split(c, depth, path, K, last)
		if ct.shr(t.rbits-depth-1).lo&1 == 0 {
			K = X
		} else {
			dlo = dlo.add(X)
			K = K.sub(X)
		}
		if K.isZero() {
			return u128{}, false
		}
	}
}

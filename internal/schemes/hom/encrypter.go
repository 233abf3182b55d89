package hom

import (
	"crypto/rand"
	"math/big"
	"sync"

	"filippo.io/bigmod"
)

// fbWindow is the window of the fixed-base tables: 2^5 entries per 5
// exponent bits.
const fbWindow = 5

// fixedBase computes B^a mod s² for a fixed B and secret exponents a, with
// one Montgomery multiplication per 5 exponent bits and constant-time table
// lookups.
type fixedBase struct {
	mm     *montModulus
	tables [][][]uint // tables[i][d] = B^(d 2^(5i)) in Montgomery form
	bound  *big.Int   // exponents are uniform in [0, bound)
	ebytes int
}

func newFixedBase(mm *montModulus, base []uint, bound *big.Int) *fixedBase {
	n := mm.n
	s := mm.scratch()
	windows := (bound.BitLen() + fbWindow - 1) / fbWindow
	fb := &fixedBase{mm: mm, bound: bound, ebytes: (bound.BitLen() + 7) / 8}
	back := make([]uint, windows*(1<<fbWindow)*n)
	g := make([]uint, n) // B^(2^(5i)) in Montgomery form
	mm.toMont(g, base, s)
	fb.tables = make([][][]uint, windows)
	for i := range fb.tables {
		t := make([][]uint, 1<<fbWindow)
		for d := range t {
			t[d], back = back[:n:n], back[n:]
		}
		copy(t[0], mm.one)
		copy(t[1], g)
		for d := 2; d < len(t); d++ {
			mm.mul(t[d], t[d-1], g, s)
		}
		mm.mul(g, t[len(t)-1], g, s)
		fb.tables[i] = t
	}
	return fb
}

// random returns B^a mod s² (plain form) for a fresh uniform a in [0, bound).
func (fb *fixedBase) random(s *montScratch) []uint {
	a, err := rand.Int(rand.Reader, fb.bound)
	if err != nil {
		panic("hom: crypto/rand failed: " + err.Error())
	}
	e := a.FillBytes(make([]byte, fb.ebytes))
	n := fb.mm.n
	acc := make([]uint, n)
	copy(acc, fb.mm.one)
	sel := make([]uint, n)
	for i, t := range fb.tables {
		w := fbWindow
		if rem := 8*len(e) - i*fbWindow; rem < w {
			w = rem
		}
		if w <= 0 {
			break
		}
		selectEntry(sel, t, expBits(e, i*fbWindow, w))
		fb.mm.mul(acc, acc, sel, s)
	}
	fb.mm.fromMont(acc, acc, s)
	clear(e)
	return acc
}

// EncrypterOptions configures an Encrypter.
type EncrypterOptions struct {
	// PoolSize is how many randomizers are kept ready (default 256; each
	// takes 2 ciphertexts of memory, 1.5 KiB at 3072 bits).
	PoolSize int
	// Workers is how many goroutines refill the pool (default 1).
	Workers int
}

// Encrypter encrypts with randomizers precomputed by background goroutines.
// It is safe for concurrent use. Close stops the goroutines.
type Encrypter struct {
	sk   *PrivateKey
	fb   [2]*fixedBase // modulo p², q²
	psq  *bigmod.Modulus
	qInv *bigmod.Nat // (q²)^-1 mod p²
	qsqN *bigmod.Nat // q² mod n²

	pool      chan randomizer
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	scratch   sync.Pool
}

type randomizer struct{ rn, rnModN *big.Int }

// NewEncrypter builds the fixed-base tables of a fresh base h^n (about 0.1 s
// and 7 MiB for a 3072-bit key) and starts the refilling goroutines.
func NewEncrypter(sk *PrivateKey, opts EncrypterOptions) (*Encrypter, error) {
	if opts.PoolSize <= 0 {
		opts.PoolSize = 256
	}
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	e := &Encrypter{
		sk:   sk,
		pool: make(chan randomizer, opts.PoolSize),
		done: make(chan struct{}),
	}
	// h = -x² mod n for a random x prime to n; the base is h^n mod n²,
	// computed modulo p² and q² with exponents n mod s(s-1).
	var x *big.Int
	for {
		var err error
		if x, err = rand.Int(rand.Reader, sk.n); err != nil {
			return nil, err
		}
		if x.Sign() > 0 && new(big.Int).GCD(nil, nil, x, sk.n).Cmp(big.NewInt(1)) == 0 {
			break
		}
	}
	h := new(big.Int).Mul(x, x)
	h.Neg(h).Mod(h, sk.n)
	one := big.NewInt(1)
	for i, half := range sk.crt {
		ssq := new(big.Int).Mul(half.s, half.s)
		order := new(big.Int).Mul(half.s, new(big.Int).Sub(half.s, one))
		base := make([]uint, half.sq.n)
		half.sq.exp(base, natFromBig(new(big.Int).Mod(h, ssq), half.sq.n), new(big.Int).Mod(sk.n, order).Bytes())
		// The base has order dividing s-1: exponents uniform modulo s-1.
		e.fb[i] = newFixedBase(half.sq, base, new(big.Int).Sub(half.s, one))
	}
	e.psq = sk.crt[0].sqMod
	p, q := sk.crt[0].s, sk.crt[1].s
	psq, qsq := new(big.Int).Mul(p, p), new(big.Int).Mul(q, q)
	var err error
	if e.qInv, err = bigmod.NewNat().SetBytes(new(big.Int).ModInverse(qsq, psq).FillBytes(make([]byte, e.psq.Size())), e.psq); err != nil {
		return nil, err
	}
	if e.qsqN, err = bigmod.NewNat().SetBytes(qsq.FillBytes(make([]byte, sk.nsqMod.Size())), sk.nsqMod); err != nil {
		return nil, err
	}
	for i := 0; i < opts.Workers; i++ {
		e.wg.Add(1)
		go e.refill()
	}
	return e, nil
}

func (e *Encrypter) refill() {
	defer e.wg.Done()
	for {
		r := e.newRandomizer()
		select {
		case e.pool <- r:
		case <-e.done:
			return
		}
	}
}

// newRandomizer returns r^n mod n² and its residue mod n for a fresh
// randomizer: (B_p^a, B_q^b) joined by the CRT, in constant time.
func (e *Encrypter) newRandomizer() randomizer {
	sk := e.sk
	var parts [2][]uint
	for i, fb := range e.fb {
		s, _ := e.scratch.Get().(*montScratch)
		if s == nil || len(s.t) < 2*fb.mm.n+1 {
			s = &montScratch{t: make([]uint, 2*fb.mm.n+1)}
		}
		parts[i] = fb.random(s)
		e.scratch.Put(s)
	}
	// r = rq + q² ((rp - rq) (q²)^-1 mod p²)
	rp := bigmod.NewNat().ExpandFor(e.psq)
	copy(rp.Bits(), parts[0])
	rqNat := bigmod.NewNat().ExpandFor(sk.crt[1].sqMod)
	copy(rqNat.Bits(), parts[1])
	rqp := bigmod.NewNat().Mod(rqNat, e.psq)
	t := rp.Sub(rqp, e.psq).Mul(e.qInv, e.psq)
	r := bigmod.NewNat().ExpandFor(sk.nsqMod)
	copy(r.Bits(), t.Bits())
	r.Mul(e.qsqN, sk.nsqMod)
	rq := bigmod.NewNat().ExpandFor(sk.nsqMod)
	copy(rq.Bits(), parts[1])
	r.Add(rq, sk.nsqMod)
	rModN := bigmod.NewNat().Mod(r, sk.nMod)
	clear(parts[0])
	clear(parts[1])
	return randomizer{
		rn:     new(big.Int).SetBytes(r.Bytes(sk.nsqMod)),
		rnModN: new(big.Int).SetBytes(rModN.Bytes(sk.nMod)),
	}
}

func (e *Encrypter) randomizer() randomizer {
	select {
	case r := <-e.pool:
		return r
	default:
		return e.newRandomizer() // pool empty: compute inline
	}
}

// Encrypt encrypts m (-n/2 < m < n/2).
func (e *Encrypter) Encrypt(m *big.Int) (*Ciphertext, error) {
	em, err := e.sk.encode(m)
	if err != nil {
		return nil, err
	}
	r := e.randomizer()
	return &Ciphertext{e.sk.withRandomizer(em, r.rn, r.rnModN)}, nil
}

// EncryptInt64 encrypts v.
func (e *Encrypter) EncryptInt64(v int64) *Ciphertext {
	c, err := e.Encrypt(big.NewInt(v))
	if err != nil {
		panic(err) // an int64 is always in range of a >= 2048-bit modulus
	}
	return c
}

// Rerandomize returns a fresh ciphertext of the same plaintext as c
// (c·r^n mod n²), unlinkable to c.
func (e *Encrypter) Rerandomize(c *Ciphertext) *Ciphertext {
	r := e.randomizer()
	t := new(big.Int).Mul(c.c, r.rn)
	return &Ciphertext{t.Mod(t, e.sk.nsq)}
}

// Close stops the refilling goroutines. The Encrypter stays usable (it then
// computes randomizers inline).
func (e *Encrypter) Close() {
	e.closeOnce.Do(func() {
		close(e.done)
		e.wg.Wait()
	})
}

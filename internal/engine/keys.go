package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/keyring"
	"github.com/pgonion/pgonion/internal/procs"
	"github.com/pgonion/pgonion/internal/recrypt"
	"github.com/pgonion/pgonion/internal/schemes/hom"
)

// The engine's keys come from the key store's ring, by root key
// generation: each column's from the generation the catalog records for
// it, the catalog's own from the generation recorded with the key store
// binding. After a root rotation by another process (proxy keys
// rotate-root), the catalog or a column names a generation the store
// loaded at start lacks: the engine then reads the key store file again
// (Config.Reopen), at most once per reopenEvery.

// reopenEvery bounds how often the key store file is read again.
const reopenEvery = time.Second

// catalogKey is the catalog's authentication key and its generation.
type catalogKey struct {
	gen int
	key []byte
}

// keysFor returns a ring holding root key generation gen, reading the key
// store file again when the current one lacks it.
func (e *Engine) keysFor(gen int) (*keyring.Ring, error) {
	r := e.ring.Load()
	if r.Has(gen) {
		return r, nil
	}
	e.keyMu.Lock()
	defer e.keyMu.Unlock()
	if r = e.ring.Load(); r.Has(gen) || e.reopen == nil || time.Since(e.reopened) < reopenEvery {
		if r.Has(gen) {
			return r, nil
		}
		_, err := r.Deriver(gen)
		return nil, err
	}
	e.reopened = time.Now()
	store, err := e.reopen()
	if err != nil {
		return nil, fmt.Errorf("engine: reading the key store again for root key generation %d: %w", gen, err)
	}
	if store.ID() != r.Store().ID() {
		return nil, fmt.Errorf("engine: the key store file now holds key store %s, not %s", store.ID(), r.Store().ID())
	}
	nr, err := keyring.New(store)
	if err != nil {
		return nil, err
	}
	e.ring.Store(nr)
	e.log.Info("key store read again", "generations", fmt.Sprint(store.Generations()))
	if !nr.Has(gen) {
		_, err := nr.Deriver(gen)
		return nil, err
	}
	return nr, nil
}

// catalogKeyOf returns the catalog's authentication key as q sees the
// catalog (its recorded generation), and remembers it for the proxy's
// own catalog writes.
func (e *Engine) catalogKeyOf(ctx context.Context, q catalog.Querier) ([]byte, error) {
	gen, err := catalog.MACGeneration(ctx, q)
	if err != nil {
		return nil, err
	}
	if k := e.catKey.Load(); k != nil && k.gen == gen {
		return k.key, nil
	}
	r, err := e.keysFor(gen)
	if err != nil {
		return nil, fmt.Errorf("%w: the catalog is authenticated under root key generation %d: %v", catalog.ErrTampered, gen, err)
	}
	key, err := r.MACKey(gen)
	if err != nil {
		return nil, err
	}
	e.catKey.Store(&catalogKey{gen: gen, key: key})
	return key, nil
}

// macKey returns the catalog key of the catalog last loaded. A change
// sealed with it after the catalog moved to another key fails on the
// catalog's version (40001), never seals under a stale key.
func (e *Engine) macKey() []byte { return e.catKey.Load().key }

// generation returns the root key generation of the catalog last loaded:
// new encrypted columns get it.
func (e *Engine) generation() int { return e.catKey.Load().gen }

// rewriteKeys are the keys of a rewrite the proxy runs itself on conn.
func (e *Engine) rewriteKeys(ctx context.Context, q catalog.Querier) (recrypt.Keys, error) {
	key, err := e.catalogKeyOf(ctx, q)
	if err != nil {
		return recrypt.Keys{}, err
	}
	k := e.catKey.Load()
	return recrypt.Keys{MACKey: key, Ring: e.ring.Load(), Generation: k.gen}, nil
}

// paillier returns the shared pooled Paillier encrypter of root key
// generation gen, started on first use (its fixed-base tables take about
// 0.1 s to build).
func (e *Engine) paillier(gen int, sk *hom.PrivateKey) (*hom.Encrypter, error) {
	e.homMu.Lock()
	defer e.homMu.Unlock()
	if enc := e.homEnc[gen]; enc != nil {
		return enc, nil
	}
	enc, err := hom.NewEncrypter(sk, hom.EncrypterOptions{PoolSize: 1024, Workers: max(1, procs.Full()/2)})
	if err != nil {
		return nil, err
	}
	e.homEnc[gen] = enc
	return enc, nil
}

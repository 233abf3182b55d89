// Package keyring gives the key material of each root key generation a
// key store holds: the Deriver of its column keys, its Paillier key pair
// and the catalog's authentication key. A column's keys come from the
// generation the catalog records for it; the catalog's own key from the
// generation recorded with the key store binding.
package keyring

import (
	"fmt"
	"strconv"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/keys"
	"github.com/pgonion/pgonion/internal/schemes/hom"
)

// PaillierSecret returns the name of the key store secret that holds the
// Paillier private key of root key generation gen: "paillier" for the
// first, "paillier.GEN" for the later ones.
func PaillierSecret(gen int) string {
	if gen == 0 {
		return "paillier"
	}
	return "paillier." + strconv.Itoa(gen)
}

// Ring is the key material of a key store, by root key generation. It is
// safe for concurrent use.
type Ring struct {
	store *keys.Store
	hom   map[int]*hom.PrivateKey
}

// New returns the ring of store, with the Paillier keys of its
// generations parsed.
func New(store *keys.Store) (*Ring, error) {
	r := &Ring{store: store, hom: map[int]*hom.PrivateKey{}}
	for _, g := range store.Generations() {
		b, ok := store.Secret(PaillierSecret(g))
		if !ok {
			continue
		}
		sk, err := hom.UnmarshalPrivateKey(b)
		if err != nil {
			return nil, fmt.Errorf("the key store's Paillier key of root key generation %d: %w", g, err)
		}
		r.hom[g] = sk
	}
	return r, nil
}

// Store returns the key store.
func (r *Ring) Store() *keys.Store { return r.store }

// Current returns the generation of the store's current root key.
func (r *Ring) Current() int { return r.store.Generation() }

// Has reports whether the store holds root key generation gen.
func (r *Ring) Has(gen int) bool {
	_, ok := r.store.DeriverAt(gen)
	return ok
}

// Deriver returns the Deriver of root key generation gen, or an error
// naming the generations the store holds.
func (r *Ring) Deriver(gen int) (*keys.Deriver, error) {
	d, ok := r.store.DeriverAt(gen)
	if !ok {
		return nil, &MissingError{Generation: gen, Holds: r.store.Generations()}
	}
	return d, nil
}

// Paillier returns the Paillier private key of generation gen, or nil
// when the store holds none.
func (r *Ring) Paillier(gen int) *hom.PrivateKey { return r.hom[gen] }

// MACKey returns the catalog's authentication key under root key
// generation gen.
func (r *Ring) MACKey(gen int) ([]byte, error) {
	d, err := r.Deriver(gen)
	if err != nil {
		return nil, err
	}
	return catalog.MACKey(d)
}

// MissingError is the error for a root key generation the key store does
// not hold: retired, or from a newer copy of the store than the one given.
type MissingError struct {
	Generation int
	Holds      []int
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("the key store holds no root key of generation %d (it holds %v): the data needs a newer copy of the key store, or the key was retired", e.Generation, e.Holds)
}

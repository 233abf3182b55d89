package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/keyring"
	"github.com/pgonion/pgonion/internal/keys"
)

// admin is what the administrative commands work with: the key store, the
// backend and its verified catalog.
type admin struct {
	store *keys.Store
	ring  *keyring.Ring
	// macKey is the catalog's key, of root key generation gen.
	macKey []byte
	gen    int
	conn   *pgx.Conn
	snap   *catalog.Snapshot
}

// openAdmin opens the key store, connects to the backend and loads the
// catalog, checking it belongs to the key store (unless the database is
// not bound to one yet).
// With migrate set, it first applies the migrations (for commands that
// write, e.g. declaring policies before the first start of the proxy).
func openAdmin(ctx context.Context, backend string, k *keyFlags, migrate bool) (*admin, error) {
	if backend == "" {
		return nil, usagef("--backend is required")
	}
	store, err := k.open()
	if err != nil {
		return nil, err
	}
	ring, err := keyring.New(store)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, backend)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the backend: %w\nhint: check --backend", err)
	}
	if migrate {
		// Only a catalog from before root rotations needs the key.
		if _, err := applyMigrations(ctx, conn, func() ([]byte, error) { return ring.MACKey(0) }); err != nil {
			conn.Close(ctx)
			return nil, fmt.Errorf("migrating the backend's pgonion schema: %w", err)
		}
	}
	gen, macKey, err := catalogKey(ctx, conn, ring)
	if err != nil {
		conn.Close(ctx)
		return nil, err
	}
	snap, err := catalog.Load(ctx, conn, macKey)
	if err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("%w\nhint: has the database been migrated (proxy migrate)? A metadata error means someone changed the schema pgonion directly", err)
	}
	if snap.StoreID != "" && !strings.EqualFold(snap.StoreID, store.ID().String()) {
		conn.Close(ctx)
		return nil, fmt.Errorf("this database's encrypted data belongs to key store %s, not to %s\nhint: give the key store that encrypted it with --keystore", snap.StoreID, store.ID())
	}
	return &admin{store: store, ring: ring, macKey: macKey, gen: gen, conn: conn, snap: snap}, nil
}

// catalogKey returns the generation and key the catalog q reads is
// authenticated under.
func catalogKey(ctx context.Context, q catalog.Querier, ring *keyring.Ring) (int, []byte, error) {
	gen, err := catalog.MACGeneration(ctx, q)
	if err != nil {
		return 0, nil, err
	}
	key, err := ring.MACKey(gen)
	if err != nil {
		return 0, nil, fmt.Errorf("the catalog is authenticated under root key generation %d: %w\nhint: give the newest copy of the key store with --keystore", gen, err)
	}
	return gen, key, nil
}

func (a *admin) close(ctx context.Context) { a.conn.Close(ctx) }

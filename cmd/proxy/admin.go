package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/keys"
)

// admin is what the administrative commands work with: the key store, the
// backend and its verified catalog.
type admin struct {
	store  *keys.Store
	macKey []byte
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
	macKey, err := catalog.MACKey(store.Deriver())
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, backend)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the backend: %w\nhint: check --backend", err)
	}
	if migrate {
		if _, err := applyMigrations(ctx, conn, func() ([]byte, error) { return macKey, nil }); err != nil {
			conn.Close(ctx)
			return nil, fmt.Errorf("migrating the backend's pgonion schema: %w", err)
		}
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
	return &admin{store: store, macKey: macKey, conn: conn, snap: snap}, nil
}

func (a *admin) close(ctx context.Context) { a.conn.Close(ctx) }

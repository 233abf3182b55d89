package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/migrations"
)

// sealMigration is the migration that adds the catalog's seal: a catalog
// that already holds data is sealed in its transaction, which needs the
// key store.
const sealMigration = 9

// applyMigrations brings the backend's schema pgonion up to date. macKey
// returns the catalog key when migration 0009 must seal a catalog that
// holds data; nil means the command has no key store, and the migration
// is then refused on such a catalog (it would stay unsealed for good).
func applyMigrations(ctx context.Context, conn *pgx.Conn, macKey func() ([]byte, error)) ([]migrations.Migration, error) {
	return migrations.ApplyWith(ctx, conn, migrations.FS, func(ctx context.Context, tx pgx.Tx, m migrations.Migration) error {
		if m.Version != sealMigration {
			return nil
		}
		need, err := catalog.NeedsSeal(ctx, tx)
		if err != nil || !need {
			return err
		}
		if macKey == nil {
			return errors.New("the catalog holds data and must be sealed with the key store\n" +
				"hint: start proxy serve (with --keystore and the master key) once: it applies this migration and seals the catalog")
		}
		key, err := macKey()
		if err != nil {
			return fmt.Errorf("sealing the catalog needs the key store: %w", err)
		}
		return catalog.SealUnsealed(ctx, tx, key)
	})
}

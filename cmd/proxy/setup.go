package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/keyring"
	"github.com/pgonion/pgonion/internal/keys"
	"github.com/pgonion/pgonion/internal/schemes/hom"
)

// newKeyStore returns a new, unsaved key store with a fresh root key and a
// fresh Paillier key pair (hom.DefaultBits).
func newKeyStore() (*keys.Store, error) {
	s := keys.New()
	sk, err := hom.GenerateKey(nil, hom.DefaultBits)
	if err != nil {
		return nil, fmt.Errorf("generating the Paillier key: %w", err)
	}
	b, err := sk.MarshalBinary()
	if err != nil {
		return nil, err
	}
	if err := s.SetSecret(keyring.PaillierSecret(s.Generation()), b); err != nil {
		return nil, err
	}
	return s, nil
}

// prepareBackend readies the backend database and the keys before the
// proxy accepts clients:
//
//   - it applies the migrations of the schema pgonion;
//   - it opens the key store, or, when the key store file does not exist
//     and the database holds no data encrypted by any key store, creates
//     one (and the master key file, unless the master key is given);
//   - it records the key store's id in the database, or checks it: data
//     encrypted under another key store is never served with new keys.
func prepareBackend(ctx context.Context, dsn string, kf *keyFlags, log *slog.Logger) (*keys.Store, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the backend: %w\nhint: check --backend, and that the server accepts the proxy's user", err)
	}
	defer conn.Close(ctx)
	applied, err := applyMigrations(ctx, conn, func() ([]byte, error) {
		// Only a catalog that holds data needs sealing, and such a
		// database has its key store.
		store, err := kf.open()
		if err != nil {
			return nil, err
		}
		ring, err := keyring.New(store)
		if err != nil {
			return nil, err
		}
		// Only a catalog from before root rotations needs the key.
		return ring.MACKey(0)
	})
	for _, m := range applied {
		log.Info("applied migration", "name", m.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("migrating the backend's pgonion schema: %w", err)
	}
	store, err := openOrCreateStore(ctx, conn, kf, log)
	if err != nil {
		return nil, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	ring, err := keyring.New(store)
	if err != nil {
		return nil, err
	}
	gen, err := catalog.MACGeneration(ctx, tx)
	if err != nil {
		return nil, err
	}
	var bound *string
	if err := tx.QueryRow(ctx, "SELECT (SELECT store_id::text FROM pgonion.keystore)").Scan(&bound); err != nil {
		return nil, err
	}
	if bound == nil {
		gen = store.Generation() // a new binding: the current root key
	}
	macKey, err := ring.MACKey(gen)
	if err != nil && !strings.EqualFold(*bound, store.ID().String()) {
		// Another key store's data: say that.
		err = catalog.BindKeyStoreAt(ctx, tx, nil, store.ID().String(), gen)
	}
	if err != nil {
		return nil, fmt.Errorf("the catalog is authenticated under root key generation %d: %w\nhint: give the newest copy of the key store with --keystore", gen, err)
	}
	if err := catalog.BindKeyStoreAt(ctx, tx, macKey, store.ID().String(), gen); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	log.Info("key store ready", "store_id", store.ID().String(), "keystore", absPath(kf.keystore))
	return store, nil
}

func openOrCreateStore(ctx context.Context, conn *pgx.Conn, kf *keyFlags, log *slog.Logger) (*keys.Store, error) {
	if _, err := os.Stat(kf.keystore); !errors.Is(err, fs.ErrNotExist) {
		return kf.open()
	}
	var bound *string
	if err := conn.QueryRow(ctx, "SELECT (SELECT store_id::text FROM pgonion.keystore)").Scan(&bound); err != nil {
		return nil, err
	}
	if bound != nil {
		return nil, fmt.Errorf("key store %s does not exist, and the backend holds data encrypted under key store %s\n"+
			"hint: restore that key store (and its master key) from your backup and give it with --keystore; "+
			"a new key store could not decrypt the data", absPath(kf.keystore), *bound)
	}
	fromEnv, err := kf.masterFromEnv()
	if err != nil {
		return nil, err
	}
	var master keys.MasterKey
	createdMaster := false
	switch {
	case fromEnv || exists(kf.masterKeyFile):
		if master, _, err = kf.masterKey(); err != nil {
			return nil, err
		}
	case !kf.throwaway && sameDir(kf.masterKeyFile, kf.keystore):
		// A backup of that directory would hold the key store and the
		// key that opens it.
		return nil, fmt.Errorf("refusing to create the master key file %s in the key store's directory %s\n"+
			"hint: give --master-key-file a path in another directory (ideally on another volume), or the master key in %s; or create both with 'proxy keys init'",
			absPath(kf.masterKeyFile), filepath.Dir(absPath(kf.keystore)), keys.MasterKeyEnv)
	default:
		master = keys.GenerateMasterKey()
		if err := keys.WriteMasterKeyFile(kf.masterKeyFile, master); err != nil {
			return nil, err
		}
		createdMaster = true
	}
	s, err := newKeyStore()
	if err != nil {
		return nil, err
	}
	if err := keys.Create(kf.keystore, master, s); err != nil {
		return nil, err
	}
	attrs := []any{"keystore", absPath(kf.keystore), "store_id", s.ID().String()}
	if createdMaster {
		attrs = append(attrs, "master_key_file", absPath(kf.masterKeyFile))
	}
	log.Warn("created a new key store: back up the master key and the key store now, separately", attrs...)
	return s, nil
}

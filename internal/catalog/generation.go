package catalog

import (
	"context"
	"fmt"
)

// The catalog is authenticated under the catalog key (MACKey) of one root
// key generation, recorded with the key store binding
// (pgonion.keystore.mac_generation). A root key rotation moves it to the
// new generation with Rekey, so that the old root key, once retired, can
// no longer forge catalog rows.

// MACGeneration returns the root key generation the catalog is
// authenticated under: 0 for a catalog never re-keyed, or with no key
// store bound yet.
func MACGeneration(ctx context.Context, q Querier) (int, error) {
	var gen int
	// Through to_jsonb: migration 0009 reads it before 0016 adds it.
	err := q.QueryRow(ctx, "SELECT coalesce((SELECT (to_jsonb(k) ->> 'mac_generation')::int FROM pgonion.keystore k), 0)").Scan(&gen)
	if err != nil {
		return 0, fmt.Errorf("catalog: reading the generation of its key: %w", err)
	}
	return gen, nil
}

// Rekey re-authenticates the whole catalog in tx under newKey, the
// catalog key of root key generation gen: it verifies the catalog under
// oldKey first (a tampered catalog is never authenticated again), computes
// every row's MAC again, records gen, and seals the next version. The
// catalog's content does not change.
func Rekey(ctx context.Context, tx Execer, oldKey, newKey []byte, gen int) error {
	s, err := lockVerified(ctx, tx, oldKey)
	if err != nil {
		return err
	}
	if s.StoreID == "" {
		return fmt.Errorf("catalog: no key store is bound to the database")
	}
	for _, t := range s.tables {
		if _, err := tx.Exec(ctx, "UPDATE pgonion.tables SET mac = $2 WHERE table_id = $1", t.ID, tableMAC(newKey, t)); err != nil {
			return fmt.Errorf("catalog: re-keying table %s.%s: %w", t.Schema, t.Name, err)
		}
		for i := range t.Columns {
			c := &t.Columns[i]
			if _, err := tx.Exec(ctx, "UPDATE pgonion.columns SET mac = $2 WHERE column_id = $1", c.ID, columnMAC(newKey, t, c)); err != nil {
				return fmt.Errorf("catalog: re-keying column %s.%s.%s: %w", t.Schema, t.Name, c.Name, err)
			}
		}
	}
	for i := range s.policies {
		p := &s.policies[i]
		if _, err := tx.Exec(ctx, "UPDATE pgonion.policies SET mac = $4 WHERE schema_name = $1 AND table_name = $2 AND column_name = $3",
			p.Schema, p.Table, p.Column, policyMAC(newKey, p)); err != nil {
			return fmt.Errorf("catalog: re-keying the policy of %s.%s.%s: %w", p.Schema, p.Table, p.Column, err)
		}
	}
	if _, err := tx.Exec(ctx, "UPDATE pgonion.keystore SET mac_generation = $1", gen); err != nil {
		return fmt.Errorf("catalog: recording the generation of its key: %w", err)
	}
	return reseal(ctx, tx, newKey)
}

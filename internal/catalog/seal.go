package catalog

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The seal authenticates the catalog as a whole: one HMAC over the
// version, the key store binding, every table (through its row MAC, which
// covers its columns) and every declared policy, stored with the version
// (pgonion.catalog_version.seal, migration 0009). Row MACs alone cannot
// tell that a row was deleted, or that one table's rows were replaced by
// an older consistent copy: with the seal, Load refuses both, and a
// proxy that remembers the highest version it has seen also refuses a
// whole older catalog replayed with its seal.
//
// Every change seals the new catalog in the same transaction: the Go
// writers (CreateTable, UpdateTable, DropTable, SetPolicy, DeletePolicy,
// BindKeyStore) verify the catalog under its seal first, so a tampered
// catalog is never sealed again; the proxy's DDL, which runs inside the
// client's transaction as one DO block, seals the catalog the proxy
// computed (SealSQL) and fails with 40001 when the version moved.

// ErrUnsealed is returned by Load for a catalog that holds data but no
// seal: it was written before migration 0009, whose transaction seals it
// (SealUnsealed), or its seal was removed.
var ErrUnsealed = errors.New("catalog: the metadata is not sealed (it was written before migration 0009, or its seal was removed)")

// sealOf is the seal of a catalog's contents at version.
func sealOf(key []byte, version int64, storeID string, tables map[string]*Table, policies []ColumnPolicy) []byte {
	m := (&mac{}).str("pgonion catalog seal v1").int(version).str(strings.ToLower(storeID))
	ts := slices.Collect(maps.Values(tables))
	slices.SortFunc(ts, func(a, b *Table) int { return strings.Compare(string(a.ID[:]), string(b.ID[:])) })
	m.int(int64(len(ts)))
	for _, t := range ts {
		m.str(string(t.ID[:])).str(string(tableMAC(key, t)))
	}
	ps := slices.Clone(policies)
	slices.SortFunc(ps, func(a, b ColumnPolicy) int {
		return strings.Compare(a.Schema+"\x00"+a.Table+"\x00"+a.Column, b.Schema+"\x00"+b.Table+"\x00"+b.Column)
	})
	m.int(int64(len(ps)))
	for i := range ps {
		m.str(string(policyMAC(key, &ps[i])))
	}
	return m.sum(key)
}

// empty reports whether s holds nothing a seal would protect.
func (s *Snapshot) empty() bool {
	return len(s.tables) == 0 && len(s.policies) == 0 && s.StoreID == ""
}

// checkSeal verifies s against the seal stored with its version.
func (s *Snapshot) checkSeal(key []byte, seal []byte) error {
	if seal == nil {
		if s.Version == 0 && s.empty() {
			return nil // a new catalog: the first change seals it
		}
		return ErrUnsealed
	}
	if !hmac.Equal(seal, sealOf(key, s.Version, s.StoreID, s.tables, s.policies)) {
		return fmt.Errorf("%w: the catalog as a whole (its set of tables and policies, or its version) does not authenticate", ErrTampered)
	}
	return nil
}

// Seal returns the seal of s at s.Version.
func (s *Snapshot) Seal(key []byte) []byte {
	return sealOf(key, s.Version, s.StoreID, s.tables, s.policies)
}

// WithTable returns a copy of s in which t (by id) replaces the table of
// the same id, or is added. s is not changed.
func (s *Snapshot) WithTable(t *Table) *Snapshot {
	n := s.shallowCopy()
	for k, old := range n.tables {
		if old.ID == t.ID {
			delete(n.tables, k)
		}
	}
	n.tables[t.Schema+"."+t.Name] = t
	return n
}

// WithoutTable returns a copy of s without the table of id.
func (s *Snapshot) WithoutTable(id ID) *Snapshot {
	n := s.shallowCopy()
	for k, old := range n.tables {
		if old.ID == id {
			delete(n.tables, k)
		}
	}
	return n
}

func (s *Snapshot) shallowCopy() *Snapshot {
	return &Snapshot{Version: s.Version, StoreID: s.StoreID, tables: maps.Clone(s.tables), policies: s.policies}
}

// TableByID returns the table with id, or nil.
func (s *Snapshot) TableByID(id ID) *Table {
	for _, t := range s.tables {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// SealSQL returns PL/pgSQL statements (for a DO block) that make next the
// catalog at version from+1: they fail with SQLSTATE 40001 when the
// catalog is not at version from (another change came first), else set
// the version and next's seal, and notify the other proxies. next.Version
// is set to from+1.
func SealSQL(key []byte, next *Snapshot, from int64) string {
	next.Version = from + 1
	return fmt.Sprintf("UPDATE pgonion.catalog_version SET version = %d, seal = %s WHERE version = %d;\n", next.Version, byteaLit(next.Seal(key)), from) +
		"IF NOT FOUND THEN RAISE EXCEPTION 'the encrypted schema was changed concurrently by another session; retry' USING ERRCODE = '40001'; END IF;\n" +
		"NOTIFY pgonion_catalog;\n"
}

// lockVerified locks the catalog's version row in tx (writers serialize on
// it) and returns the catalog verified under its seal.
func lockVerified(ctx context.Context, tx Execer, key []byte) (*Snapshot, error) {
	if _, err := tx.Exec(ctx, "SELECT version FROM pgonion.catalog_version FOR UPDATE"); err != nil {
		return nil, fmt.Errorf("catalog: locking the version: %w", err)
	}
	return Load(ctx, tx, key)
}

// reseal seals the catalog as tx now holds it, at the next version, and
// notifies the other proxies. The rows must authenticate one by one.
func reseal(ctx context.Context, tx Execer, key []byte) error {
	s, _, err := load(ctx, tx, key)
	if err != nil {
		return err
	}
	s.Version++
	if _, err := tx.Exec(ctx, "UPDATE pgonion.catalog_version SET version = $1, seal = $2", s.Version, s.Seal(key)); err != nil {
		return fmt.Errorf("catalog: sealing: %w", err)
	}
	_, err = tx.Exec(ctx, "NOTIFY pgonion_catalog")
	return err
}

// change runs f in tx on a catalog verified under its seal, then seals
// what f left.
func change(ctx context.Context, tx Execer, key []byte, f func() error) error {
	if _, err := lockVerified(ctx, tx, key); err != nil {
		return err
	}
	if err := f(); err != nil {
		return err
	}
	return reseal(ctx, tx, key)
}

// SealUnsealed seals a catalog written before seals existed (migration
// 0009 runs it in its transaction): its rows must authenticate one by
// one, and it is sealed as found, at its current version. A sealed
// catalog is left alone.
func SealUnsealed(ctx context.Context, tx Execer, key []byte) error {
	if _, err := tx.Exec(ctx, "SELECT version FROM pgonion.catalog_version FOR UPDATE"); err != nil {
		return err
	}
	s, seal, err := load(ctx, tx, key)
	if err != nil || seal != nil {
		return err
	}
	_, err = tx.Exec(ctx, "UPDATE pgonion.catalog_version SET seal = $1", s.Seal(key))
	return err
}

// NeedsSeal reports whether the catalog holds data but no seal (so that
// migration 0009 needs the key store to seal it).
func NeedsSeal(ctx context.Context, q Querier) (bool, error) {
	var need bool
	err := q.QueryRow(ctx, `SELECT (SELECT seal IS NULL FROM pgonion.catalog_version) AND
		(EXISTS (SELECT 1 FROM pgonion.tables) OR EXISTS (SELECT 1 FROM pgonion.policies) OR EXISTS (SELECT 1 FROM pgonion.keystore))`).Scan(&need)
	return need, err
}

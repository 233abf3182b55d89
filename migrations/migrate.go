package migrations

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// Migration is one versioned SQL file.
type Migration struct {
	Version  int
	Name     string // file name
	SQL      string
	Checksum string // hex SHA-256 of SQL
}

var fileName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

// lockKey is the advisory lock that serializes migrations (an arbitrary
// constant: "pgonion" in ASCII).
const lockKey = 0x7067_6f6e_696f_6e

// List returns the migrations in fsys, in version order. It fails on badly
// named files and duplicate versions.
func List(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var out []Migration
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q is not named NNNN_description.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %q and %q share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(b), Checksum: hex.EncodeToString(sum[:])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Status is the state of one migration in a database.
type Status struct {
	Migration
	Applied bool
}

// ErrNewerDatabase means the database holds migrations this proxy does not
// know: it was upgraded by a newer proxy.
var ErrNewerDatabase = errors.New("the database was migrated by a newer proxy")

// Apply brings the database conn is connected to up to date with the
// migrations in fsys and returns the ones it applied. It is safe to call
// from several proxies at once.
func Apply(ctx context.Context, conn *pgx.Conn, fsys fs.FS) ([]Migration, error) {
	return ApplyWith(ctx, conn, fsys, nil)
}

// Hook runs in the transaction of each migration it applies, after the
// migration's SQL: work that needs Go and keys (e.g. sealing the catalog,
// migration 0009) commits or fails with the migration.
type Hook func(ctx context.Context, tx pgx.Tx, m Migration) error

// ApplyWith is Apply with a hook (nil for none).
func ApplyWith(ctx context.Context, conn *pgx.Conn, fsys fs.FS, hook Hook) ([]Migration, error) {
	all, err := List(fsys)
	if err != nil {
		return nil, err
	}
	var applied []Migration
	for _, m := range all {
		done, err := applyOne(ctx, conn, m, all, hook)
		if err != nil {
			return applied, err
		}
		if done {
			applied = append(applied, m)
		}
	}
	return applied, nil
}

// applyOne applies m unless already applied, in a transaction holding the
// migration lock. It reports whether it applied m.
func applyOne(ctx context.Context, conn *pgx.Conn, m Migration, all []Migration, hook Hook) (bool, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(lockKey)); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS pgonion;
		CREATE TABLE IF NOT EXISTS pgonion.schema_migrations (
			version int PRIMARY KEY,
			name text NOT NULL,
			checksum text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return false, fmt.Errorf("creating pgonion.schema_migrations: %w", err)
	}
	have, err := appliedVersions(ctx, tx)
	if err != nil {
		return false, err
	}
	if err := checkKnown(have, all); err != nil {
		return false, err
	}
	if _, ok := have[m.Version]; ok {
		return false, nil
	}
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("migration %s failed: %w", m.Name, err)
	}
	if hook != nil {
		if err := hook(ctx, tx, m); err != nil {
			return false, fmt.Errorf("migration %s failed: %w", m.Name, err)
		}
	}
	if _, err := tx.Exec(ctx, "INSERT INTO pgonion.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
		m.Version, m.Name, m.Checksum); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}

type applied struct{ name, checksum string }

func appliedVersions(ctx context.Context, q pgx.Tx) (map[int]applied, error) {
	rows, err := q.Query(ctx, "SELECT version, name, checksum FROM pgonion.schema_migrations")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[int]applied{}
	for rows.Next() {
		var v int
		var a applied
		if err := rows.Scan(&v, &a.name, &a.checksum); err != nil {
			return nil, err
		}
		have[v] = a
	}
	return have, rows.Err()
}

// checkKnown refuses a database with unknown or edited migrations.
func checkKnown(have map[int]applied, all []Migration) error {
	byVersion := map[int]Migration{}
	for _, m := range all {
		byVersion[m.Version] = m
	}
	for v, a := range have {
		m, ok := byVersion[v]
		if !ok {
			return fmt.Errorf("%w (it has migration %d %q)\nhint: upgrade this proxy", ErrNewerDatabase, v, a.name)
		}
		if m.Checksum != a.checksum {
			return fmt.Errorf("migration %s was applied with different contents (checksum %s, this proxy has %s)", m.Name, short(a.checksum), short(m.Checksum))
		}
	}
	return nil
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// Check reports the status of every migration without changing anything.
func Check(ctx context.Context, conn *pgx.Conn, fsys fs.FS) ([]Status, error) {
	all, err := List(fsys)
	if err != nil {
		return nil, err
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('pgonion.schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return nil, err
	}
	have := map[int]applied{}
	if exists {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return nil, err
		}
		have, err = appliedVersions(ctx, tx)
		_ = tx.Rollback(ctx)
		if err != nil {
			return nil, err
		}
		if err := checkKnown(have, all); err != nil {
			return nil, err
		}
	}
	out := make([]Status, len(all))
	for i, m := range all {
		_, ok := have[m.Version]
		out[i] = Status{Migration: m, Applied: ok}
	}
	return out, nil
}

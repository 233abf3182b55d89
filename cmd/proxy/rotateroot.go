package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/keyring"
	"github.com/pgonion/pgonion/internal/keys"
	"github.com/pgonion/pgonion/internal/schemes/hom"
)

const rotateRootUsage = `Usage: proxy keys rotate-root [flags]

Replaces the key store's root key, from which every data key and the
catalog's authentication key derive, online. In order, each step
resumable (run the command again after any stop; it goes on where it
stopped):

  1. the key store gets a new root key, of the next generation (and a new
     Paillier key pair); the old one is kept for now;
  2. the catalog is authenticated again under the new root key;
  3. every encrypted column is re-encrypted under keys of the new root
     (like proxy keys rotate, table after table, while applications keep
     working);
  4. the old root key (and its Paillier key) is deleted from the key store.

Running proxies read the key store file again when they meet the new
generation. What it protects against: once it is done, a copy of the old
key store (with its master key) decrypts none of the current data and
cannot forge the catalog. Backups of the database (and WAL archives) taken
before still hold ciphertexts under the old keys: keep the old key store
only as long as such backups, or destroy both.`

func runKeysRotateRoot(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("keys rotate-root", flag.ContinueOnError)
	var f rewriteFlags
	f.register(fs, rotateRootUsage)
	positional, err := f.parse(fs, args)
	if err != nil {
		return err
	}
	if len(positional) > 0 {
		return usagef("keys rotate-root takes no arguments (it rotates every column); got %q", positional[0])
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, rw, err := f.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer a.close(context.Background())
	master, _, err := f.keys.masterKey()
	if err != nil {
		return err
	}
	path := f.keys.keystore
	older := olderColumns(a.snap, a.store.Generation())
	unused := unusedGenerations(a.store, a.snap, a.gen)
	if f.dryRun {
		switch {
		case a.gen < a.store.Generation():
			fmt.Fprintf(stdout, "would authenticate the catalog under root key generation %d, then re-encrypt %d columns\n", a.store.Generation(), len(older))
		case len(older) > 0:
			fmt.Fprintf(stdout, "would re-encrypt %d columns under root key generation %d\n", len(older), a.store.Generation())
		case len(unused) > 0:
			fmt.Fprintf(stdout, "would retire root key generations %v\n", unused)
		default:
			fmt.Fprintf(stdout, "would create root key generation %d, authenticate the catalog under it, re-encrypt %d columns and retire generation %d\n",
				a.store.Generation()+1, len(olderColumns(a.snap, a.store.Generation()+1)), a.store.Generation())
		}
		return nil
	}

	// 1. A new root key, unless a rotation is under way (or only its
	// last step is left).
	if a.gen == a.store.Generation() && len(older) == 0 && len(unused) == 0 {
		secrets := map[string][]byte{}
		if sk := a.ring.Paillier(a.store.Generation()); sk != nil {
			progressf(f.quiet, stderr, "generating a Paillier key pair of %d bits", max(sk.Bits(), hom.DefaultBits))
			nk, err := hom.GenerateKey(nil, max(sk.Bits(), hom.DefaultBits))
			if err != nil {
				return fmt.Errorf("generating the new Paillier key: %w", err)
			}
			if secrets[keyring.PaillierSecret(a.store.Generation()+1)], err = nk.MarshalBinary(); err != nil {
				return err
			}
		}
		store, err := keys.RotateRoot(path, master, secrets)
		if err != nil {
			return err
		}
		if err := a.useStore(store); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "key store %s: root key generation %d created\n", absPath(path), store.Generation())
	}

	// 2. The catalog under the new root key.
	if a.gen < a.store.Generation() {
		if err := rekeyCatalog(ctx, a); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "catalog authenticated under root key generation %d\n", a.gen)
	}
	rw.Keys.MACKey, rw.Keys.Ring, rw.Keys.Generation = a.macKey, a.ring, a.gen

	// 3. Every column under the new root key. New columns get it from
	// step 2 on; a re-keying into a join group may still write an older
	// one (the group's): look again until none is left.
	for round := 0; ; round++ {
		if err := a.reload(ctx); err != nil {
			return err
		}
		older := olderColumns(a.snap, a.gen)
		if len(older) == 0 {
			break
		}
		if round == 10 {
			return fmt.Errorf("columns keep appearing under older root keys (%s.%s.%s, ...)\nhint: run the command again", older[0].schema, older[0].table, older[0].column)
		}
		for _, t := range byTable(older) {
			plan, err := rw.RotateColumns(ctx, t.schema, t.table, t.columns)
			if err != nil {
				return recryptError(err, "keys rotate-root", t.schema+"."+t.table)
			}
			printPlan(stdout, plan, false)
		}
	}

	// 4. Retire what nothing uses any more.
	for _, g := range unusedGenerations(a.store, a.snap, a.gen) {
		store, err := keys.RetireRoot(path, master, g, keyring.PaillierSecret(g))
		if err != nil {
			return err
		}
		if err := a.useStore(store); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "key store %s: root key generation %d retired\n", absPath(path), g)
	}
	fmt.Fprintf(stdout, "every encrypted column is under root key generation %d\n", a.gen)
	return nil
}

// useStore makes store (the key store file as rewritten) the admin's.
func (a *admin) useStore(store *keys.Store) error {
	ring, err := keyring.New(store)
	if err != nil {
		return err
	}
	a.store, a.ring = store, ring
	return nil
}

// reload reads the catalog again.
func (a *admin) reload(ctx context.Context) error {
	gen, key, err := catalogKey(ctx, a.conn, a.ring)
	if err != nil {
		return err
	}
	snap, err := catalog.Load(ctx, a.conn, key)
	if err != nil {
		return err
	}
	a.gen, a.macKey, a.snap = gen, key, snap
	return nil
}

// rekeyCatalog authenticates the catalog under the store's current root
// key. Rewrites under way record their targets under the old key, so
// they must be finished (or aborted) first.
func rekeyCatalog(ctx context.Context, a *admin) error {
	gen := a.store.Generation()
	newKey, err := a.ring.MACKey(gen)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, a.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "LOCK TABLE pgonion.rewrites IN EXCLUSIVE MODE"); err != nil {
			return err
		}
		var schema, table string
		err := tx.QueryRow(ctx, `SELECT t.schema_name, t.table_name FROM pgonion.rewrites r JOIN pgonion.tables t USING (table_id) LIMIT 1`).Scan(&schema, &table)
		switch {
		case err == nil:
			return fmt.Errorf("a rewrite of table %s.%s is under way; its checkpoints are authenticated under the old root key\nhint: finish it first (run the command that started it again, or the same with --abort), then run proxy keys rotate-root again", schema, table)
		case err != pgx.ErrNoRows:
			return err
		}
		return catalog.Rekey(ctx, tx, a.macKey, newKey, gen)
	})
	if err != nil {
		return fmt.Errorf("authenticating the catalog under the new root key: %w", err)
	}
	return a.reload(ctx)
}

// columnRef names a column.
type columnRef struct{ schema, table, column string }

// olderColumns returns the encrypted columns whose keys derive from a
// root key generation before gen.
func olderColumns(snap *catalog.Snapshot, gen int) []columnRef {
	var out []columnRef
	for _, t := range snap.Tables() {
		for _, c := range t.Columns {
			if c.Policy != catalog.Plain && c.RootGeneration < gen {
				out = append(out, columnRef{t.Schema, t.Name, c.Name})
			}
		}
	}
	return out
}

// tableColumns are columns of one table.
type tableColumns struct {
	schema, table string
	columns       []string
}

func byTable(cols []columnRef) []tableColumns {
	var out []tableColumns
	for _, c := range cols {
		if n := len(out); n > 0 && out[n-1].schema == c.schema && out[n-1].table == c.table {
			out[n-1].columns = append(out[n-1].columns, c.column)
			continue
		}
		out = append(out, tableColumns{c.schema, c.table, []string{c.column}})
	}
	return out
}

// unusedGenerations returns the root key generations the store holds
// that neither the catalog (authenticated under macGen) nor any column
// uses, the current one excepted.
func unusedGenerations(store *keys.Store, snap *catalog.Snapshot, macGen int) []int {
	used := map[int]bool{store.Generation(): true, macGen: true}
	for _, t := range snap.Tables() {
		for _, c := range t.Columns {
			if c.Policy != catalog.Plain {
				used[c.RootGeneration] = true
			}
		}
	}
	var out []int
	for _, g := range store.Generations() {
		if !used[g] {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// progressf prints a progress line on stderr unless quiet.
func progressf(quiet bool, stderr io.Writer, format string, a ...any) {
	if !quiet {
		fmt.Fprintf(stderr, format+"\n", a...)
	}
}

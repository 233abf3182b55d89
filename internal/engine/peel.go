package engine

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// peelLockTimeout bounds how long a peel waits for the table lock: a
// client transaction that holds a conflicting lock (for instance one that
// wrote to the table and now runs a query needing the peel) would
// otherwise wait on the proxy forever.
const peelLockTimeout = 10 * time.Second

// peel brings an onion of a column to the layer a statement needs
// (CryptDB's onion adjustment): the Eq onion from RND to DET, or the Ord
// onion from RND to OPE. It runs on the server with pgcrypto, in one
// transaction on its own connection:
//
//  1. an advisory lock per table, so two proxies never peel the same
//     table at once (the second waits, then finds the work done);
//  2. LOCK TABLE ... IN SHARE ROW EXCLUSIVE MODE: readers go on, writers
//     wait. Writes through this proxy also wait for the peel before they
//     encrypt (writeGate), and the gate is released only once this
//     proxy's catalog copy shows the new layer, so none of them is stored
//     at the old layer;
//  3. the catalog is read again in the transaction: if another proxy
//     peeled the onion meanwhile, nothing is done;
//  4. one UPDATE strips the RND layer of every cell, decrypting it with
//     the onion's RND key and the cell's salt (override, else the row's);
//  5. the catalog records the new layer, in the same transaction.
//
// A crash (of the proxy or the server) at any point leaves either nothing
// or everything done, and running the query again peels again: the peel
// is idempotent and all-or-nothing, so it never needs resuming. The cost
// of that choice is one transaction over the whole table: writers wait
// for it (reads do not).
//
// Warning: writes through another proxy that has not yet seen the peel
// (its catalog copy follows by NOTIFY) may still be encrypted at the old
// layer and stored after the peel commits; they decrypt, but equality and
// range queries miss them until rewritten.
//
// Warning: the UPDATE gives the server the onion's RND key (as a
// parameter, so not in statement texts), as in CryptDB; afterwards the
// server sees the inner layer of every row: equality (DET) or order (OPE)
// of that column's values.
func (e *Engine) peel(ctx context.Context, n rewrite.Need) error {
	if live := e.cat.snapshot().ColumnByID(n.Column.ID); live != nil && live.Onions[string(n.Kind)] == string(n.Layer) {
		return nil
	}
	if n.Column.Policy == catalog.Sensitive {
		return rewrite.Refusal("column %s.%s is declared sensitive: its %s onion is never peeled", n.Table.Name, n.Column.Name, n.Kind)
	}
	start := time.Now()
	// Writes this proxy encrypts from now on wait for the peel, and the
	// ones in flight are answered first (see writeGate).
	g := e.gate(n.Table.ID)
	gctx, cancel := context.WithTimeout(ctx, peelLockTimeout)
	err := g.lock(gctx, nil)
	cancel()
	if err != nil {
		return &pgconn.PgError{Severity: "ERROR", Code: "55P03",
			Message: fmt.Sprintf("the query needs the %s onion of %s.%s peeled to %s, but writes to the table through this proxy did not finish within %s", n.Kind, n.Table.Name, n.Column.Name, n.Layer, peelLockTimeout),
			Hint:    "A write may be waiting for a lock this session's open transaction holds: commit it, or run a query needing the peel once outside a transaction."}
	}
	defer g.unlock()
	if live := e.cat.snapshot().ColumnByID(n.Column.ID); live != nil && live.Onions[string(n.Kind)] == string(n.Layer) {
		return nil // peeled while we waited
	}
	pc, err := e.work.Acquire(ctx)
	if err != nil {
		return workError(fmt.Sprintf("peel the %s onion of %s.%s", n.Kind, n.Table.Name, n.Column.Name), err)
	}
	defer pc.Release()
	rows, peeled, err := e.peelIn(ctx, pc.Conn(), n)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "55P03" {
			return &pgconn.PgError{Severity: "ERROR", Code: "55P03",
				Message: fmt.Sprintf("the query needs the %s onion of %s.%s peeled to %s, but another transaction holds a lock on the table", n.Kind, n.Table.Name, n.Column.Name, n.Layer),
				Hint:    "If this session's open transaction wrote to the table, commit it, or run a query needing the peel once outside a transaction."}
		}
		return fmt.Errorf("failed to peel the %s onion of %s.%s to %s: %w", n.Kind, n.Table.Name, n.Column.Name, n.Layer, err)
	}
	// Writers wait on the gate until this copy of the catalog shows the
	// new layer; a failed read is retried before giving up.
	for attempt := 0; ; attempt++ {
		err := e.cat.refresh(ctx)
		if err == nil {
			break
		}
		if attempt == 4 {
			return fmt.Errorf("failed to read the catalog after peeling the %s onion of %s.%s: %w", n.Kind, n.Table.Name, n.Column.Name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if peeled {
		e.peels.Add(1)
		e.log.Info("peeled onion", "table", n.Table.Schema+"."+n.Table.Name, "column", n.Column.Name,
			"onion", string(n.Kind), "from", string(onion.LayerRND), "to", string(n.Layer), "rows", rows, "duration", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// Peels returns how many onion peels this engine has done.
func (e *Engine) Peels() int64 { return e.peels.Load() }

// peelIn runs the peel transaction; peeled is false when the onion was
// already at the layer.
func (e *Engine) peelIn(ctx context.Context, conn *pgx.Conn, n rewrite.Need) (rows int64, peeled bool, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", peelLockTimeout.Milliseconds())); err != nil {
		return 0, false, err
	}
	if err := lockTableCatalog(ctx, tx, n.Table.ID); err != nil {
		return 0, false, err
	}
	macKey, err := e.catalogKeyOf(ctx, tx)
	if err != nil {
		return 0, false, err
	}
	snap, err := catalog.Load(ctx, tx, macKey)
	if err != nil {
		return 0, false, err
	}
	t := snap.Table(n.Table.Schema, n.Table.Name)
	if t == nil || t.ID != n.Table.ID {
		return 0, false, fmt.Errorf("table %s.%s changed while the query was planned; run it again", n.Table.Schema, n.Table.Name)
	}
	var c *catalog.Column
	for i := range t.Columns {
		if t.Columns[i].ID == n.Column.ID {
			c = &t.Columns[i]
		}
	}
	if c == nil {
		return 0, false, fmt.Errorf("column %s.%s changed while the query was planned; run it again", n.Table.Name, n.Column.Name)
	}
	switch c.Onions[string(n.Kind)] {
	case string(n.Layer):
		return 0, false, tx.Commit(ctx) // another proxy peeled it
	case string(onion.LayerRND):
	default:
		return 0, false, fmt.Errorf("the %s onion is at layer %q", n.Kind, c.Onions[string(n.Kind)])
	}
	ps, err := e.peelStatements(t, c, n.Kind)
	if err != nil {
		return 0, false, err
	}
	if _, err := tx.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pgcrypto"); err != nil {
		return 0, false, fmt.Errorf("peeling needs the pgcrypto extension: %w", err)
	}
	if _, err := tx.Exec(ctx, ps.lock); err != nil {
		return 0, false, err
	}
	tag, err := tx.Exec(ctx, ps.update, ps.key)
	if err != nil {
		return 0, false, err
	}
	cells, err := tx.Query(ctx, ps.sample)
	if err != nil {
		return 0, false, err
	}
	sample, err := pgx.CollectRows(cells, pgx.RowTo[string])
	if err != nil {
		return 0, false, err
	}
	if err := ps.check(sample); err != nil {
		return 0, false, err
	}
	updated := t.Clone()
	for i := range updated.Columns {
		if updated.Columns[i].ID == c.ID {
			updated.Columns[i].Onions[string(n.Kind)] = string(n.Layer)
		}
	}
	if err := catalog.UpdateTable(ctx, tx, macKey, updated); err != nil {
		return 0, false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, false, err
	}
	return tag.RowsAffected(), true, nil
}

// peelSQL is what peeling one onion of a column runs, in this order, in
// a transaction holding the table's onion lock (lockTableCatalog).
type peelSQL struct {
	lock   string // LOCK TABLE: readers go on, writers wait
	update string // strips the RND layer of every cell; key is its $1
	key    []byte
	sample string // up to 16 peeled cells, hex-encoded, for check
	what   string // "the eq onion of t.c", for errors
	oc     *onion.Column
	kind   onion.Kind
}

// peelStatements returns the statements that peel onion k of column c
// of table t (as the catalog has them in the peel's transaction).
func (e *Engine) peelStatements(t *catalog.Table, c *catalog.Column, k onion.Kind) (*peelSQL, error) {
	x, err := e.encrypted(t.Name, c)
	if err != nil {
		return nil, err
	}
	key, err := x.oc.PeelKey(k)
	if err != nil {
		return nil, err
	}
	table := quoteIdent(t.Schema) + "." + quoteIdent(t.Physical)
	cell := quoteIdent(rewrite.EqColumn(c.Name))
	if k == onion.KindOrd {
		cell = quoteIdent(rewrite.OrdColumn(c.Name))
	}
	salt := "coalesce(" + quoteIdent(rewrite.SaltOverrideColumn(c.Name)) + ", " + quoteIdent(rewrite.SaltColumn) + ")"
	expr, err := x.oc.PeelExpr(k, cell, salt, "$1::bytea")
	if err != nil {
		return nil, err
	}
	read := cell
	if x.oc.CellSQLType(k) == "uuid" {
		read = "uuid_send(" + cell + ")"
	}
	return &peelSQL{
		lock:   "LOCK TABLE " + table + " IN SHARE ROW EXCLUSIVE MODE",
		update: fmt.Sprintf("UPDATE %s SET %s = %s WHERE %s IS NOT NULL", table, cell, expr, cell),
		key:    key,
		sample: fmt.Sprintf("SELECT encode(%s, 'hex') FROM %s WHERE %s IS NOT NULL LIMIT 16", read, table, cell),
		what:   fmt.Sprintf("%s of %s.%s", k, t.Name, c.Name),
		oc:     x.oc,
		kind:   k,
	}, nil
}

// check decrypts the sample of cells the peel just wrote, before its
// transaction commits: a peel without padding (FormatCompact) cannot fail
// on the server with a wrong key, so the proxy checks.
func (ps *peelSQL) check(sample []string) error {
	for _, h := range sample {
		c, err := hex.DecodeString(h)
		if err == nil {
			err = ps.oc.CheckPeeled(ps.kind, c)
		}
		if err != nil {
			return fmt.Errorf("peeling %s: the peeled cells do not decrypt (wrong key or corrupt data); nothing was changed", ps.what)
		}
	}
	return nil
}

// lockTableCatalog takes, for the transaction, the advisory lock that
// serializes catalog changes of one table's onions across proxies (peels,
// increment marks).
func lockTableCatalog(ctx context.Context, tx pgx.Tx, id catalog.ID) error {
	class, key := id.OnionLock()
	_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, $2)", class, key)
	return err
}

package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
)

// Coherence of this proxy's copy of the catalog with other proxies' DDL.
//
// A statement on a table the catalog does not list passes through as
// plaintext. That verdict is safe only if no table of that name is being
// given encrypted columns: otherwise a session that cannot see the
// creating transaction yet (it is open, or its COMMIT's notification has
// not arrived) would send plaintext for it. So:
//
//   - before a proxy sends DDL that puts an encrypted table under a name
//     (CREATE TABLE, RENAME, SET SCHEMA), it records an intent for the
//     name, and waits until every proxy with a live lease has loaded it
//     (or its lease has run out);
//   - a proxy refuses statements on a name with a live intent that its
//     catalog does not list (after reading the catalog again: the table
//     may have just been committed);
//   - each proxy holds a lease: it renews it every leaseRenew, saying
//     which intents it has loaded; it trusts its copy (plain verdicts,
//     the pass-through cache) only until leaseTrust after its last
//     renewal began, and reads the catalog again before any pass-through
//     beyond that. A proxy that stops renewing (crashed, cut off) is
//     waited for at most leaseTTL;
//   - the intent is dropped when the creating session's transaction has
//     ended and the catalog copy has been read again, or when the session
//     or its proxy goes away (an intent whose proxy's lease expired is
//     ignored).
//
// The catalog version and the intents are read in one statement, so that
// a deleted intent is never seen without the committed table it stood for.
const (
	leaseTTL   = 3 * time.Second        // how long the server holds a lease
	leaseRenew = 750 * time.Millisecond // how often a proxy renews it
	leaseTrust = 2 * time.Second        // how long a proxy trusts its copy after a renewal began
)

// intentTimeout bounds the wait for other proxies to load an intent.
const intentTimeout = leaseTTL + 2*time.Second

// readState reads the catalog version, the live intents and the newest
// intent number in one statement (one snapshot), and reloads the catalog
// when its version changed.
func (c *catalogCache) readState(ctx context.Context, conn *pgx.Conn) error {
	var v, seen int64
	var schemas, names []string
	var columns []catalog.ID
	var switches []bool
	var ns []int64
	err := conn.QueryRow(ctx, `SELECT (SELECT version FROM pgonion.catalog_version),
		(SELECT coalesce(max(n), 0) FROM pgonion.intents),
		ARRAY(SELECT i.schema_name FROM pgonion.intents i JOIN pgonion.proxies p USING (proxy_id) WHERE p.expires > now() AND i.column_id IS NULL ORDER BY i.n),
		ARRAY(SELECT i.table_name FROM pgonion.intents i JOIN pgonion.proxies p USING (proxy_id) WHERE p.expires > now() AND i.column_id IS NULL ORDER BY i.n),
		ARRAY(SELECT i.switching FROM pgonion.intents i JOIN pgonion.proxies p USING (proxy_id) WHERE p.expires > now() AND i.column_id IS NULL ORDER BY i.n),
		ARRAY(SELECT i.n FROM pgonion.intents i JOIN pgonion.proxies p USING (proxy_id) WHERE p.expires > now() AND i.column_id IS NULL ORDER BY i.n),
		ARRAY(SELECT i.column_id FROM pgonion.intents i JOIN pgonion.proxies p USING (proxy_id) WHERE p.expires > now() AND i.column_id IS NOT NULL)`).
		Scan(&v, &seen, &schemas, &names, &switches, &ns, &columns)
	if err != nil {
		return fmt.Errorf("engine: reading the catalog version: %w", err)
	}
	intents := make(map[string]string, len(names))
	switching := map[string]bool{}
	switchN := map[int64]string{}
	for i := range names {
		if switches[i] {
			switching[schemas[i]+"."+names[i]] = true
			switchN[ns[i]] = schemas[i] + "." + names[i]
		} else {
			intents[schemas[i]+"."+names[i]] = names[i]
		}
	}
	incrementing := make(map[catalog.ID]bool, len(columns))
	for _, id := range columns {
		incrementing[id] = true
	}
	if err := c.loadIfChanged(ctx, conn, v); err != nil {
		return err
	}
	c.intentMu.Lock()
	changed := len(intents) != len(c.intents) || len(incrementing) != len(c.incrementing) || len(switching) != len(c.switching)
	for k := range intents {
		_, had := c.intents[k]
		changed = changed || !had
	}
	for id := range incrementing {
		changed = changed || !c.incrementing[id]
	}
	for k := range switching {
		changed = changed || !c.switching[k]
	}
	c.intents, c.incrementing, c.switching, c.intentsSeen = intents, incrementing, switching, max(c.intentsSeen, seen)
	c.nIncrementing.Store(int64(len(incrementing)))
	c.noteSwitchesLocked(switchN)
	if changed {
		close(c.intentsChanged)
		c.intentsChanged = make(chan struct{})
	}
	c.intentMu.Unlock()
	if changed {
		c.invalidate()
	}
	return nil
}

// pendingElsewhere reports whether schema.name has a live intent: a
// session (of this proxy or another) is giving it encrypted columns.
func (c *catalogCache) pendingElsewhere(schema, name string) bool {
	c.intentMu.Lock()
	defer c.intentMu.Unlock()
	_, ok := c.intents[schema+"."+name]
	return ok
}

// switchTimeout bounds how long a statement waits for a table's switch
// (recrypt's cutover) to end: past it, the statement is planned with the
// catalog as it is (and fails if it then meets the new form).
const switchTimeout = 10 * time.Second

// awaitSwitch returns once table key (schema.name) has no live switch
// intent (a rewriter switching its columns to their new form, package
// recrypt), and this copy of the catalog therefore shows the new form; or
// when ctx ends.
func (c *catalogCache) awaitSwitch(ctx context.Context, key string) {
	for {
		c.intentMu.Lock()
		on, wake := c.switching[key], c.intentsChanged
		c.intentMu.Unlock()
		if !on {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-time.After(100 * time.Millisecond):
			// In case a notification was lost.
			_ = c.refresh(ctx)
		}
	}
}

// beingIncremented reports whether column id has a live increment
// intent: a transaction (of this proxy or another) may be recording its
// first increment, so its Eq and Ord onions may already be stale.
func (c *catalogCache) beingIncremented(id catalog.ID) bool {
	c.intentMu.Lock()
	defer c.intentMu.Unlock()
	return c.incrementing[id]
}

// withIncrementIntents returns t with Incremented set on its columns that
// have a live increment intent (t itself when none has).
func (c *catalogCache) withIncrementIntents(t *catalog.Table) *catalog.Table {
	if t == nil {
		return nil
	}
	c.intentMu.Lock()
	defer c.intentMu.Unlock()
	var out *catalog.Table
	for i, col := range t.Columns {
		if !col.Incremented && c.incrementing[col.ID] {
			if out == nil {
				out = t.Clone()
			}
			out.Columns[i].Incremented = true
		}
	}
	if out == nil {
		return t
	}
	return out
}

// trusted reports whether this proxy's copy is within its lease.
func (c *catalogCache) trusted() bool {
	return time.Since(c.born) < time.Duration(c.trustUntil.Load())
}

// renew reads the catalog state and renews the lease, saying which
// intents this copy holds.
func (c *catalogCache) renew(ctx context.Context) error {
	start := time.Since(c.born)
	return c.withConn(ctx, func(conn *pgx.Conn) error {
		if err := c.readState(ctx, conn); err != nil {
			return err
		}
		c.intentMu.Lock()
		seen := c.ackedLocked()
		c.intentMu.Unlock()
		if _, err := conn.Exec(ctx, `INSERT INTO pgonion.proxies (proxy_id, intents_seen, expires) VALUES ($1, $2, now() + $3::interval)
			ON CONFLICT (proxy_id) DO UPDATE SET intents_seen = EXCLUDED.intents_seen, expires = EXCLUDED.expires`,
			c.proxyID, seen, leaseTTL.String()); err != nil {
			return fmt.Errorf("engine: renewing the catalog lease: %w", err)
		}
		c.trustUntil.Store(int64(start + leaseTrust))
		return nil
	})
}

// renewLoop renews the lease every leaseRenew, and clears what proxies
// that went away left behind.
func (c *catalogCache) renewLoop(ctx context.Context) {
	defer c.listen.Done()
	t := time.NewTicker(leaseRenew)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, leaseRenew)
		if err := c.renew(rctx); err != nil && ctx.Err() == nil {
			c.log.Warn("renewing the catalog lease failed; statements on tables not in the catalog check with the server until it succeeds", "err", err)
		}
		if n%40 == 0 {
			_ = c.withConn(rctx, func(conn *pgx.Conn) error {
				_, err := conn.Exec(rctx, `DELETE FROM pgonion.intents i WHERE NOT EXISTS (SELECT 1 FROM pgonion.proxies p WHERE p.proxy_id = i.proxy_id AND p.expires > now());
					DELETE FROM pgonion.proxies WHERE expires < now() - interval '1 hour'`)
				return err
			})
		}
		cancel()
	}
}

// declareIntent records that a session of this proxy is about to put a
// table with encrypted columns under schema.name (column nil), or to
// increment column *column of that table for the first time, and returns
// once every other proxy has loaded the intent (or its lease has run
// out).
func (c *catalogCache) declareIntent(ctx context.Context, schema, name string, column *catalog.ID) (int64, error) {
	var n int64
	err := c.withConn(ctx, func(conn *pgx.Conn) error {
		if err := conn.QueryRow(ctx, `INSERT INTO pgonion.intents (schema_name, table_name, proxy_id, column_id) VALUES ($1, $2, $3, $4) RETURNING n`,
			schema, name, c.proxyID, column).Scan(&n); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, "SELECT pg_notify('pgonion_intents', '')")
		return err
	})
	what := "the creation of " + schema + "." + name
	if column != nil {
		what = "an increment of a column of " + schema + "." + name
	}
	if err != nil {
		return 0, fmt.Errorf("engine: recording %s: %w", what, err)
	}
	c.intentMu.Lock()
	if column != nil {
		c.incrementing[*column] = true
		c.nIncrementing.Store(int64(len(c.incrementing)))
	} else {
		c.intents[schema+"."+name] = name
	}
	c.intentsSeen = max(c.intentsSeen, n)
	c.intentMu.Unlock()
	c.invalidate()
	wctx, cancel := context.WithTimeout(ctx, intentTimeout)
	defer cancel()
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		var behind int
		err := c.withConn(wctx, func(conn *pgx.Conn) error {
			return conn.QueryRow(wctx, `SELECT count(*) FROM pgonion.proxies WHERE proxy_id <> $1 AND expires > now() AND intents_seen < $2`,
				c.proxyID, n).Scan(&behind)
		})
		if err == nil && behind == 0 {
			return n, nil
		}
		select {
		case <-wctx.Done():
			c.dropIntents(context.Background(), []int64{n})
			return 0, &pgconn.PgError{Severity: "ERROR", Code: "55P03",
				Message: fmt.Sprintf("another proxy of this database did not confirm %s in time", what),
				Hint:    "Retry; if it persists, check that every proxy can reach the server."}
		case <-time.After(wait):
		}
	}
}

// dropIntents removes intents of this proxy (best effort: an intent left
// behind is ignored once this proxy's lease expires).
func (c *catalogCache) dropIntents(ctx context.Context, ns []int64) {
	if len(ns) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	err := c.withConn(ctx, func(conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, "DELETE FROM pgonion.intents WHERE n = ANY($1) AND proxy_id = $2", ns, c.proxyID); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, "SELECT pg_notify('pgonion_intents', '')")
		return err
	})
	if err == nil {
		err = c.refresh(ctx)
	}
	if err != nil {
		c.log.Warn("dropping a finished table creation's intent failed; it lapses with this proxy's lease", "err", err)
	}
}

// newProxyID is this proxy's lease id.
func newProxyID() catalog.ID { return catalog.NewID() }

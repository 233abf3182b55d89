package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// catalogCache is the proxy's copy of the verified catalog. It is reloaded
// when another proxy (or this one) announces a change with NOTIFY
// pgonion_catalog, and on demand when a statement names a table the copy
// does not know (so a table created through another proxy a moment ago is
// never mistaken for a plain one).
type catalogCache struct {
	dsn string
	// macKey returns the catalog's authentication key, as the catalog
	// q reads records its generation.
	macKey func(ctx context.Context, q catalog.Querier) ([]byte, error)
	log    *slog.Logger

	snap atomic.Pointer[catalog.Snapshot]
	// epoch changes whenever plans made before may be stale: a new
	// snapshot, or a change in the intents (wire.Replanner).
	epoch atomic.Uint64

	// broken is set while the server's catalog fails verification (a
	// row or the seal does not authenticate, or its version went back):
	// then every statement naming a table is refused, since the proxy can
	// no longer tell which tables are encrypted. nil when sound.
	broken atomic.Pointer[error]

	// collation is the database's default collation (pg_database.datcollate).
	collation string
	// ctype is its character classification (pg_database.datctype),
	// which lower() and upper() follow.
	ctype string

	mu   sync.Mutex // serializes loads on conn
	conn *pgx.Conn

	pks primaryKeys // primarykey.go

	// plain remembers names checked absent from the catalog at a version,
	// so that statements on plain tables cost no round trip; plainSQL
	// remembers statement texts that passed through unchanged at a
	// version, so that they are not even parsed again.
	plainMu  sync.Mutex
	plain    map[string]int64
	plainSQL map[string]passThrough

	// The lease and the intents (lease.go).
	proxyID    catalog.ID
	born       time.Time    // monotonic origin of trustUntil
	trustUntil atomic.Int64 // since born: until when the copy is trusted
	intentMu   sync.Mutex
	intents    map[string]string // schema.name -> name, with a live intent
	// incrementing holds the columns with a live increment intent;
	// nIncrementing is its length, read without intentMu.
	incrementing  map[catalog.ID]bool
	nIncrementing atomic.Int64
	// switching holds the tables (schema.name) with a live switch intent.
	switching map[string]bool
	// intentsChanged is closed (and replaced) whenever the intents change.
	intentsChanged chan struct{}
	intentsSeen    int64 // the newest intent loaded
	// Switches (switch.go): statements in flight per table, the live
	// switch intents by number, and those not acknowledged yet.
	inUse   map[string]int
	switchN map[int64]string
	unacked map[int64]bool
	life    context.Context // ends when the cache closes

	stop   context.CancelFunc
	listen sync.WaitGroup
}

func openCatalogCache(ctx context.Context, dsn string, macKey func(context.Context, catalog.Querier) ([]byte, error), log *slog.Logger) (*catalogCache, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("engine: connecting to the backend: %w", err)
	}
	c := &catalogCache{dsn: dsn, macKey: macKey, log: log, conn: conn, plain: map[string]int64{}, plainSQL: map[string]passThrough{},
		proxyID: newProxyID(), born: time.Now(), intents: map[string]string{}, incrementing: map[catalog.ID]bool{},
		switching: map[string]bool{}, intentsChanged: make(chan struct{}),
		inUse: map[string]int{}, switchN: map[int64]string{}, unacked: map[int64]bool{}}
	// The lease first: a proxy creating a table from now on waits for
	// this one to load its intent.
	if _, err := conn.Exec(ctx, "INSERT INTO pgonion.proxies (proxy_id, expires) VALUES ($1, now() + $2::interval)", c.proxyID, leaseTTL.String()); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("engine: registering with the backend: %w", err)
	}
	key, err := macKey(ctx, conn)
	if err != nil {
		conn.Close(ctx)
		return nil, err
	}
	snap, err := catalog.Load(ctx, conn, key)
	if err != nil {
		conn.Close(ctx)
		return nil, err
	}
	if err := conn.QueryRow(ctx, "SELECT datcollate, datctype FROM pg_database WHERE datname = current_database()").Scan(&c.collation, &c.ctype); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("engine: reading the database's collation: %w", err)
	}
	c.snap.Store(snap)
	lctx, stop := context.WithCancel(context.Background())
	c.stop, c.life = stop, lctx
	if err := c.renew(ctx); err != nil {
		stop()
		conn.Close(ctx)
		return nil, err
	}
	ready := make(chan error, 1)
	c.listen.Add(2)
	go c.listenLoop(lctx, ready)
	go c.renewLoop(lctx)
	select {
	case err := <-ready:
		if err != nil {
			c.close()
			return nil, err
		}
	case <-ctx.Done():
		c.close()
		return nil, ctx.Err()
	}
	return c, nil
}

func (c *catalogCache) snapshot() *catalog.Snapshot { return c.snap.Load() }

// listenLoop keeps a connection listening on pgonion_catalog and reloads
// the catalog on each notification. After a lost connection it reconnects
// (and reloads, as notifications may have been missed).
func (c *catalogCache) listenLoop(ctx context.Context, ready chan<- error) {
	defer c.listen.Done()
	first := true
	for ctx.Err() == nil {
		conn, err := pgx.Connect(ctx, c.dsn)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN pgonion_catalog; LISTEN pgonion_intents")
		}
		if first {
			ready <- err
			first = false
			if err != nil {
				if conn != nil {
					conn.Close(context.Background())
				}
				return
			}
		} else if err == nil {
			c.reload(ctx)
		}
		for err == nil {
			_, err = conn.WaitForNotification(ctx)
			if err == nil {
				// Reload, and tell proxies waiting for an intent.
				if rerr := c.renew(ctx); rerr != nil {
					c.log.Error("reloading the catalog failed", "err", rerr)
				}
			}
		}
		if conn != nil {
			conn.Close(context.Background())
		}
		if ctx.Err() == nil {
			c.log.Warn("catalog listener lost its connection; reconnecting", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// reload reads the catalog if its version changed. Errors are logged: the
// previous snapshot stays in use.
func (c *catalogCache) reload(ctx context.Context) {
	if err := c.refresh(ctx); err != nil {
		c.log.Error("reloading the catalog failed", "err", err)
	}
}

// refresh makes the snapshot current: one round trip when nothing changed.
func (c *catalogCache) refresh(ctx context.Context) error {
	return c.withConn(ctx, func(conn *pgx.Conn) error { return c.readState(ctx, conn) })
}

// loadIfChanged loads the catalog when the server's version v differs
// from the copy's (or the copy is broken). The caller holds c.mu.
func (c *catalogCache) loadIfChanged(ctx context.Context, conn *pgx.Conn, v int64) error {
	cur := c.snapshot().Version
	if v < cur {
		// An older catalog put back, seal and all.
		return c.fail(fmt.Errorf("%w: its version went back from %d to %d", catalog.ErrTampered, cur, v))
	}
	if v == cur && c.broken.Load() == nil {
		return nil
	}
	key, err := c.macKey(ctx, conn)
	if err != nil {
		return c.fail(err)
	}
	snap, err := catalog.Load(ctx, conn, key)
	if err != nil {
		if errors.Is(err, catalog.ErrTampered) || errors.Is(err, catalog.ErrUnsealed) {
			return c.fail(err)
		}
		return err
	}
	if snap.Version < cur {
		return c.fail(fmt.Errorf("%w: its version went back from %d to %d", catalog.ErrTampered, cur, snap.Version))
	}
	c.broken.Store(nil)
	c.snap.Store(snap)
	c.epoch.Add(1)
	c.plainMu.Lock()
	clear(c.plain)
	clear(c.plainSQL)
	c.plainMu.Unlock()
	c.log.Info("catalog reloaded", "version", snap.Version, "tables", len(snap.Tables()))
	return nil
}

// fail marks the catalog broken (see broken) and returns err.
func (c *catalogCache) fail(err error) error {
	if c.broken.Swap(&err) == nil {
		c.log.Error("the catalog failed verification: statements on tables are refused until it verifies again", "err", err)
	}
	c.invalidate()
	return err
}

// invalidate forgets every name and statement checked absent from the
// catalog, so that the next statement on each checks with the server.
func (c *catalogCache) invalidate() {
	c.epoch.Add(1)
	c.plainMu.Lock()
	clear(c.plain)
	clear(c.plainSQL)
	c.plainMu.Unlock()
}

// withConn runs f on the cache's connection (serialized with loads).
func (c *catalogCache) withConn(ctx context.Context, f func(conn *pgx.Conn) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil || c.conn.IsClosed() {
		conn, err := pgx.Connect(ctx, c.dsn)
		if err != nil {
			return fmt.Errorf("engine: reconnecting to the backend: %w", err)
		}
		c.conn = conn
	}
	return f(c.conn)
}

// lookup returns the catalog table schema.name, checking with the server
// first when the snapshot does not know the name and it was not checked at
// the current version.
func (c *catalogCache) lookup(ctx context.Context, schema, name string) (*catalog.Table, error) {
	if c.broken.Load() != nil {
		// Verify again: the catalog may be sound by now.
		if err := c.refresh(ctx); err != nil {
			return nil, err
		}
	}
	snap := c.snapshot()
	if t := snap.Table(schema, name); t != nil {
		return t, nil
	}
	key := schema + "." + name
	c.plainMu.Lock()
	v, ok := c.plain[key]
	c.plainMu.Unlock()
	if ok && v == snap.Version && c.trusted() && !c.pendingElsewhere(schema, name) {
		return nil, nil
	}
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	snap = c.snapshot()
	if t := snap.Table(schema, name); t != nil {
		return t, nil
	}
	if c.pendingElsewhere(schema, name) {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "42P01",
			Message: fmt.Sprintf("relation \"%s\" does not exist", name),
			Detail:  "A table of that name is being created with encrypted columns in a transaction that has not committed.",
			Hint:    "Retry once that transaction has committed."}
	}
	// Whatever the catalog says, a table that carries onion columns is
	// not plain.
	onions, err := c.carriesOnions(ctx, schema, name)
	if err != nil {
		return nil, err
	}
	if onions {
		return nil, c.fail(fmt.Errorf("%w: table %s.%s carries encrypted columns (%s) but the catalog does not list it", catalog.ErrTampered, schema, name, rewrite.SaltColumn))
	}
	c.plainMu.Lock()
	if len(c.plain) > 100000 {
		clear(c.plain)
	}
	c.plain[key] = snap.Version
	c.plainMu.Unlock()
	return nil, nil
}

// maxPlainSQL bounds the pass-through cache (texts of up to maxPlainText
// bytes are cached).
const (
	maxPlainSQL  = 10000
	maxPlainText = 4096
)

// passThrough is a statement text that passed through unchanged: at
// which catalog version, naming which tables (schema.name).
type passThrough struct {
	version int64
	tables  []string
}

// passesThrough reports whether sql passed through unchanged at the
// current catalog version, and the tables it names.
func (c *catalogCache) passesThrough(sql string) ([]string, bool) {
	if len(sql) > maxPlainText || c.broken.Load() != nil || !c.trusted() {
		return nil, false
	}
	v := c.snapshot().Version
	c.plainMu.Lock()
	defer c.plainMu.Unlock()
	got, ok := c.plainSQL[sql]
	return got.tables, ok && got.version == v
}

// rememberPassThrough records that sql, naming tables, passed through
// unchanged at version v.
func (c *catalogCache) rememberPassThrough(sql string, v int64, tables []string) {
	if len(sql) > maxPlainText {
		return
	}
	c.plainMu.Lock()
	defer c.plainMu.Unlock()
	if len(c.plainSQL) >= maxPlainSQL {
		clear(c.plainSQL)
	}
	c.plainSQL[sql] = passThrough{v, tables}
}

// carriesOnions reports whether the table schema.name exists on the
// server with the proxy's per-row salt column.
func (c *catalogCache) carriesOnions(ctx context.Context, schema, name string) (bool, error) {
	var found bool
	err := c.withConn(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
			JOIN pg_catalog.pg_class r ON r.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = r.relnamespace
			WHERE n.nspname = $1 AND r.relname = $2 AND a.attname = $3 AND a.attnum > 0 AND NOT a.attisdropped)`,
			schema, name, rewrite.SaltColumn).Scan(&found)
	})
	if err != nil {
		return false, fmt.Errorf("engine: checking table %s.%s on the server: %w", schema, name, err)
	}
	return found, nil
}

func (c *catalogCache) close() {
	if c.stop != nil {
		c.stop()
	}
	c.listen.Wait()
	c.mu.Lock()
	if c.conn != nil {
		// Other proxies need not wait for this one any more.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = c.conn.Exec(ctx, "DELETE FROM pgonion.intents WHERE proxy_id = $1", c.proxyID)
		_, _ = c.conn.Exec(ctx, "DELETE FROM pgonion.proxies WHERE proxy_id = $1", c.proxyID)
		cancel()
		c.conn.Close(context.Background())
	}
	c.mu.Unlock()
}

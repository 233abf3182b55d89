// Package engine is the proxy's statement engine: the wire.Interceptor of
// every client session. For each statement it decides, from the verified
// catalog of encrypted tables, whether the statement passes through
// untouched (it touches no table with encrypted columns), is rewritten
// (internal/rewrite) with its values encrypted and its results decrypted
// (internal/onion), or is refused with SQLSTATE 0A000.
//
// It holds the keys (from the key store) and a cache of the catalog, kept
// current through LISTEN/NOTIFY on the backend, so that a change made by one
// proxy is seen by every other proxy of the same database.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/keyring"
	"github.com/pgonion/pgonion/internal/keys"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/schemes/hom"
	"github.com/pgonion/pgonion/internal/wire"
)

// workConns bounds the connections of the proxy's own transactions
// (Engine.work); the catalog cache keeps two more.
const workConns = 2

// workError is the client's error when the proxy cannot get a connection
// for its own work: an ERROR of the statement, never FATAL, whatever the
// server said (e.g. FATAL 53300 when its connection slots are taken).
func workError(what string, err error) error {
	var pe *pgconn.PgError
	code := "58000"
	if errors.As(err, &pe) {
		code = pe.Code
	}
	return &pgconn.PgError{Severity: "ERROR", Code: code, Message: "the proxy could not get a connection to " + what + ": " + err.Error(),
		Hint: "The server may be out of connection slots; retry."}
}

// Config configures an Engine.
type Config struct {
	// Backend is the libpq DSN of the server, with the proxy's own
	// credentials; the engine keeps two connections of its own to it (to
	// read the catalog and to listen for catalog changes).
	Backend string
	// Store is the opened key store the database's data is encrypted under.
	Store *keys.Store
	// Reopen reads the key store file again: the engine calls it when the
	// catalog or a column needs a root key generation Store lacks (after
	// a root rotation by another process). nil: never.
	Reopen func() (*keys.Store, error)
	// Policy decides how the columns of a new table are stored; nil
	// encrypts every column with every onion its type supports.
	Policy rewrite.PolicyFunc
	// Logger receives catalog reloads and errors; nil discards them.
	Logger *slog.Logger
	// MaxStatementSize bounds the statement texts the proxy parses
	// (parsing and rewriting take tens of times the text's size); 0 means
	// DefaultMaxStatementSize.
	MaxStatementSize int
	// MaxHeldBytes bounds what one statement's result may hold in the
	// proxy (groups of split execution, rows of a proxy sort); 0 means
	// DefaultMaxHeldBytes.
	MaxHeldBytes int64
}

// Defaults of Config.
const (
	DefaultMaxStatementSize       = 1 << 20
	DefaultMaxHeldBytes     int64 = 256 << 20
)

// Engine is shared by all sessions of a proxy. It is safe for concurrent
// use.
type Engine struct {
	policy  rewrite.PolicyFunc
	log     *slog.Logger
	maxStmt int
	maxHeld int64
	// Keys (keys.go).
	ring     atomic.Pointer[keyring.Ring]
	catKey   atomic.Pointer[catalogKey]
	reopen   func() (*keys.Store, error)
	keyMu    sync.Mutex // serializes reading the key store again
	reopened time.Time

	homMu  sync.Mutex
	homEnc map[int]*hom.Encrypter // pooled, by root key generation

	cat *catalogCache
	// work holds the few connections of the proxy's own transactions
	// (peels, increment marks): bounded, so that clients never compete
	// with the proxy's housekeeping for the server's connection slots.
	work *pgxpool.Pool

	colMu   sync.Mutex
	columns map[columnKey]*onion.Column
	enums   map[uint32]*enumLabels // by type OID, under colMu

	peels atomic.Int64 // onion peels done (Peels)
	// plansReused counts Parses answered from a session's plan cache
	// (PlansReused).
	plansReused atomic.Int64
	rekeys      atomic.Int64 // columns re-keyed into join groups (Rekeys)

	gatesMu sync.Mutex
	gates   map[catalog.ID]*writeGate // per table (gate)

	builds builds // onions built on first need (build.go)

	checkCache sync.Map // table id and version -> *rowChecks (check.go)
	// generationCache: table id and version -> *rowGenerations
	// (generation.go).
	generationCache sync.Map
	// origins: where result columns come from (origins.go)
	origins originCache
}

// New opens the engine's connections to the backend and loads the catalog.
// The backend must be migrated (migrations.Apply) and bound to cfg.Store
// (catalog.BindKeyStore).
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("engine: no key store")
	}
	e := &Engine{
		policy:  cfg.Policy,
		log:     cfg.Logger,
		maxStmt: cmp.Or(cfg.MaxStatementSize, DefaultMaxStatementSize),
		maxHeld: cmp.Or(cfg.MaxHeldBytes, DefaultMaxHeldBytes),
		reopen:  cfg.Reopen,
		homEnc:  map[int]*hom.Encrypter{},
		columns: map[columnKey]*onion.Column{},
	}
	if e.policy == nil {
		e.policy = DefaultPolicy
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	ring, err := keyring.New(cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.ring.Store(ring)
	if e.cat, err = openCatalogCache(ctx, cfg.Backend, e.catalogKeyOf, e.log); err != nil {
		return nil, err
	}
	if id := e.cat.snapshot().StoreID; id != "" && !strings.EqualFold(id, cfg.Store.ID().String()) {
		e.cat.close()
		return nil, fmt.Errorf("engine: the database's encrypted data belongs to key store %s, not %s", id, cfg.Store.ID())
	}
	pcfg, err := pgxpool.ParseConfig(cfg.Backend)
	if err != nil {
		e.cat.close()
		return nil, fmt.Errorf("engine: the backend DSN: %w", err)
	}
	pcfg.MaxConns, pcfg.MinConns = workConns, 0
	pcfg.MaxConnIdleTime = time.Minute
	if e.work, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		e.cat.close()
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.builds.ctx, e.builds.cancel = context.WithCancel(context.Background())
	return e, nil
}

// Close stops the onion builds under way (build.go), the catalog
// listener and the Paillier randomness pool.
func (e *Engine) Close() {
	e.builds.stop()
	e.work.Close()
	e.cat.close()
	e.homMu.Lock()
	for _, enc := range e.homEnc {
		enc.Close()
	}
	e.homMu.Unlock()
}

// DefaultPolicy encrypts every column with every onion its type supports.
func DefaultPolicy(table, column string) rewrite.ColumnPolicy {
	return rewrite.ColumnPolicy{Policy: catalog.Encrypted}
}

// NewSession is a wire.InterceptorFactory.
func (e *Engine) NewSession(ctx context.Context, info wire.SessionInfo) (wire.Interceptor, error) {
	s := &session{e: e, deferFn: info.Defer, exec: info.Exec, execQuery: info.ExecQuery, describeQuery: info.DescribeQuery, txEpoch: info.TxEpoch, lastStatus: 'I', backendPID: info.BackendPID}
	s.params.maxHeld = e.maxHeld
	s.params.ctype = e.cat.ctype
	s.params.set("TimeZone", info.ServerParams["TimeZone"])
	s.params.set("DateStyle", info.ServerParams["DateStyle"])
	return s, nil
}

// columnKey is what an encryptor of a column depends on (Engine.column).
// A struct, not a formatted string: formatting it was 2% of the proxy's
// CPU where a statement looks its columns up at each Bind.
type columnKey struct {
	id         catalog.ID
	keyVersion int
	typ        string
	kinds      string // sorted, comma-separated
	joinGroup  string
	group      catalog.GroupKey
	format     int
}

// column returns the encryptor of an encrypted catalog column, built once
// per (column id, key version, type, onions, join group and its keys,
// cell format), under the keys of its root key generation.
func (e *Engine) column(c *catalog.Column) (*onion.Column, error) {
	kinds := make([]onion.Kind, 0, len(c.Onions))
	for k := range c.Onions {
		kinds = append(kinds, onion.Kind(k))
	}
	slices.Sort(kinds)
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	key := columnKey{id: c.ID, keyVersion: c.KeyVersion, typ: c.Type, kinds: strings.Join(names, ","), joinGroup: c.JoinGroup, group: c.GroupKey(), format: c.CellFormat()}
	e.colMu.Lock()
	oc := e.columns[key]
	e.colMu.Unlock()
	if oc != nil {
		return oc, nil
	}
	t, err := rewrite.ColumnType(c)
	if err != nil {
		return nil, err
	}
	ring, err := e.keysFor(c.RootGeneration)
	if err != nil {
		return nil, fmt.Errorf("keys of column %s: %w", c.Name, err)
	}
	d, _ := ring.Deriver(c.RootGeneration)
	homKey := ring.Paillier(c.RootGeneration)
	var enc *hom.Encrypter
	if slices.Contains(kinds, onion.KindAdd) {
		if homKey == nil {
			return nil, fmt.Errorf("column %s has an Add onion, but the key store holds no Paillier key of root key generation %d", c.Name, c.RootGeneration)
		}
		if enc, err = e.paillier(c.RootGeneration, homKey); err != nil {
			return nil, err
		}
	}
	oc, err = onion.NewColumnFormat(t, c.KeyID(), c.JoinID(), kinds, onion.Format(c.CellFormat()), d, homKey, enc)
	if err != nil {
		return nil, fmt.Errorf("keys of column %s: %w", c.Name, err)
	}
	if t.Base == onion.Enum {
		oc.SetEnumLabels(e.enumLabels(t))
	}
	e.colMu.Lock()
	e.columns[key] = oc
	e.colMu.Unlock()
	return oc, nil
}

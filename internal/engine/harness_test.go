package engine_test

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/embedpg"
	"github.com/pgonion/pgonion/internal/engine"
	"github.com/pgonion/pgonion/internal/keyring"
	"github.com/pgonion/pgonion/internal/keys"
	"github.com/pgonion/pgonion/internal/pgtest"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
	"github.com/pgonion/pgonion/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testStore is a key store with the repository's public 2048-bit Paillier
// test key (TEST KEY: never for real data), so tests need not generate one.
func testStore(t testing.TB) *keys.Store {
	t.Helper()
	raw, err := os.ReadFile("../schemes/hom/testdata/paillier2048.key")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	b, err := hex.DecodeString(lines[len(lines)-1])
	if err != nil {
		t.Fatal(err)
	}
	s := keys.New()
	if err := s.SetSecret(keyring.PaillierSecret(0), b); err != nil {
		t.Fatal(err)
	}
	return s
}

// encDB is a fresh database, migrated and bound to a key store.
type encDB struct {
	dsn   string
	store *keys.Store
}

func newEncDB(t testing.TB) *encDB {
	t.Helper()
	return newEncDBAt(t, pgtest.DSN(t))
}

// newEncDBAt is newEncDB on the database of dsn.
func newEncDBAt(t testing.TB, dsn string) *encDB {
	t.Helper()
	ctx := context.Background()
	db := &encDB{dsn: dsn, store: testStore(t)}
	conn, err := pgx.Connect(ctx, db.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := migrations.Apply(ctx, conn, migrations.FS); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	macKey, err := catalog.MACKey(db.store.Deriver())
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.BindKeyStore(ctx, tx, macKey, db.store.ID().String()); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// proxy is an encrypting proxy in front of an encDB.
type proxy struct {
	db  *encDB
	eng *engine.Engine
	url string
}

func startProxy(t testing.TB, db *encDB, policy rewrite.PolicyFunc) *proxy {
	t.Helper()
	return startProxyWith(t, db, engine.Config{Policy: policy})
}

// startProxyWith is startProxy with more of the engine's configuration
// (its Backend, Store and Logger are filled in).
func startProxyWith(t testing.TB, db *encDB, cfg engine.Config) *proxy {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg.Backend, cfg.Store, cfg.Logger = db.dsn, db.store, testLogger()
	eng, err := engine.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := pgconn.ParseConfig(db.dsn)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := wire.NewServer(wire.Config{Backend: backend, Auth: wire.AuthTrust, Logger: testLogger(), Interceptors: eng.NewSession})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
		eng.Close()
	})
	return &proxy{db: db, eng: eng, url: "postgres://test@" + ln.Addr().String() + "/test?sslmode=disable"}
}

// connect opens a pgx connection through the proxy.
func (p *proxy) connect(t testing.TB, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(p.url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = mode
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// direct opens a pgx connection to the server, bypassing the proxy.
func (db *encDB) direct(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// testLogger logs to stderr when PGONION_TEST_LOG is set (e.g. "debug").
func testLogger() *slog.Logger {
	lvl := os.Getenv("PGONION_TEST_LOG")
	if lvl == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var l slog.Level
	_ = l.UnmarshalText([]byte(lvl))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

var allModes = []pgx.QueryExecMode{
	pgx.QueryExecModeCacheStatement,
	pgx.QueryExecModeCacheDescribe,
	pgx.QueryExecModeDescribeExec,
	pgx.QueryExecModeExec,
	pgx.QueryExecModeSimpleProtocol,
}

func mustExec(t testing.TB, conn *pgx.Conn, sql string, args ...any) pgconn.CommandTag {
	t.Helper()
	tag, err := conn.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return tag
}

// pgCode returns the SQLSTATE of err, "" if it has none.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// newClusterDB is newEncDB on a database of a cluster of the test's own,
// started with settings (e.g. max_connections, full_page_writes).
func newClusterDB(t testing.TB, settings map[string]string) (*encDB, *embedpg.Cluster) {
	t.Helper()
	ctx := context.Background()
	cl, err := embedpg.Start(ctx, embedpg.Options{Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Stop() })
	admin, err := pgx.Connect(ctx, cl.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE own"); err != nil {
		t.Fatal(err)
	}
	return newEncDBAt(t, cl.DSN("own")), cl
}

// plainConn connects to the plaintext test database (pgtest), for
// differential tests; it is closed when the test ends.
func plainConn(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

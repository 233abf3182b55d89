package wire_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/embedpg"
	"github.com/pgonion/pgonion/internal/pgtest"
	"github.com/pgonion/pgonion/internal/wire"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testProxy is a proxy in front of one fresh test database.
type testProxy struct {
	srv     *wire.Server
	addr    *net.TCPAddr
	direct  string // DSN of the database, bypassing the proxy
	backend *pgconn.Config
}

// startProxy starts a proxy (trust auth unless cfg says otherwise) in front
// of a fresh database; cfg may adjust the configuration.
func startProxy(t testing.TB, cfg func(*wire.Config)) *testProxy {
	t.Helper()
	return startProxyFor(t, pgtest.DSN(t), cfg)
}

func startProxyFor(t testing.TB, dsn string, cfg func(*wire.Config)) *testProxy {
	t.Helper()
	backend, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	c := wire.Config{Backend: backend, Auth: wire.AuthTrust, Logger: testLogger()}
	if cfg != nil {
		cfg(&c)
	}
	srv, err := wire.NewServer(c)
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
	})
	return &testProxy{srv: srv, addr: ln.Addr().(*net.TCPAddr), direct: dsn, backend: backend}
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

// url returns a libpq URL to connect through the proxy.
func (p *testProxy) url(user string, params ...string) string {
	u := url.URL{Scheme: "postgres", User: url.User(user), Host: p.addr.String(), Path: "/" + p.backend.Database}
	q := url.Values{"sslmode": {"disable"}}
	for i := 0; i+1 < len(params); i += 2 {
		q.Set(params[i], params[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (p *testProxy) connect(t testing.TB) *pgx.Conn {
	t.Helper()
	return mustConnect(t, p.url("tester"))
}

// connectMode connects as user with the given default exec mode; the
// connection closes when the test ends.
func (p *testProxy) connectMode(t testing.TB, user string, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(p.url(user))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = mode
	c, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func (p *testProxy) connectDirect(t testing.TB) *pgx.Conn {
	t.Helper()
	return mustConnect(t, p.direct)
}

func mustConnect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// pgBin returns the path of a PostgreSQL client program (psql, pgbench).
func pgBin(t testing.TB, name string) string {
	t.Helper()
	if dir, err := embedpg.FindBinDir(); err == nil {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: install the PostgreSQL client programs", name)
	}
	return p
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// pgEnv returns environment variables that point libpq programs at the
// proxy (or, with direct, at the database).
func (p *testProxy) pgEnv(direct bool) []string {
	host, port, user, db := p.addr.IP.String(), strconv.Itoa(p.addr.Port), "tester", p.backend.Database
	if direct {
		host, port, user = p.backend.Host, strconv.Itoa(int(p.backend.Port)), p.backend.User
	}
	env := []string{"PGHOST=" + host, "PGPORT=" + port, "PGUSER=" + user, "PGDATABASE=" + db,
		"PGSSLMODE=disable", "PGCONNECT_TIMEOUT=10", "PGAPPNAME=wire-test", "LC_ALL=C", "PGTZ=UTC"}
	if p.backend.Password != "" && direct {
		env = append(env, "PGPASSWORD="+p.backend.Password)
	}
	return append(env, "PATH="+os.Getenv("PATH"))
}

// waitFor polls cond until it is true or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countBackends returns how many server sessions run a query matching pattern.
func countBackends(t testing.TB, direct *pgx.Conn, pattern string) int {
	t.Helper()
	var n int
	err := direct.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()", pattern).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

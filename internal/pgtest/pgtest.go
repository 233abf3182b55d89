// Package pgtest gives each test package one throwaway PostgreSQL server and
// each test its own database.
//
// Where the server comes from, in order:
//  1. $PGTEST_DSN, a libpq URL or keyword/value string of a superuser on an
//     existing server;
//  2. a cluster started from the local server binaries (package embedpg);
//  3. testcontainers-go's postgres module, when a Docker engine answers.
//
// When none works, Main fails the package with a message that says how to
// install PostgreSQL. Only outside CI ($CI unset) does it skip instead.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// and in a test:
//
//	dsn := pgtest.DSN(t) // a fresh database, dropped when the test ends
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/pgonion/pgonion/internal/embedpg"
)

// Server is the package's PostgreSQL server.
type Server struct {
	// AdminDSN connects as a superuser to the maintenance database.
	AdminDSN string
	// Cluster is set when the server is an embedded cluster (nil otherwise).
	Cluster *embedpg.Cluster
	// Source says where the server came from, for logs.
	Source string

	stop func()
}

var current *Server

// Current returns the server started by Main. It panics when Main has not run.
func Current() *Server {
	if current == nil {
		panic("pgtest: call pgtest.Main(m) from TestMain first")
	}
	return current
}

// Main starts the server, runs the package's tests, stops the server and
// exits with the tests' status.
func Main(m *testing.M) {
	srv, err := Start(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: no PostgreSQL server for the tests: %v\n", err)
		if os.Getenv("CI") == "" {
			fmt.Fprintln(os.Stderr, "pgtest: SKIP: not in CI, so the package's tests are skipped")
			os.Exit(0)
		}
		os.Exit(1)
	}
	current = srv
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

// Start finds or starts a server as the package documentation describes.
func Start(ctx context.Context) (*Server, error) {
	if dsn := os.Getenv("PGTEST_DSN"); dsn != "" {
		if err := ping(ctx, dsn); err != nil {
			return nil, fmt.Errorf("PGTEST_DSN does not connect: %w", err)
		}
		return &Server{AdminDSN: dsn, Source: "PGTEST_DSN", stop: func() {}}, nil
	}
	c, localErr := embedpg.Start(ctx, embedpg.Options{})
	if localErr == nil {
		return &Server{AdminDSN: c.DSN("postgres"), Cluster: c, Source: "embedded cluster", stop: func() { _ = c.Stop() }}, nil
	}
	srv, dockerErr := startContainer(ctx)
	if dockerErr == nil {
		return srv, nil
	}
	return nil, fmt.Errorf("local server binaries: %v; docker: %v\n"+
		"hint: install PostgreSQL (Debian/Ubuntu: apt-get install postgresql) or set PGTEST_DSN to a superuser DSN", localErr, dockerErr)
}

func startContainer(ctx context.Context) (*Server, error) {
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = p.Health(hctx)
	cancel()
	_ = p.Close()
	if err != nil {
		return nil, fmt.Errorf("no healthy Docker engine: %w", err)
	}
	c, err := tcpostgres.Run(ctx, "postgres:15",
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.BasicWaitStrategies(),
	)
	if err != nil {
		return nil, err
	}
	dsn, err := c.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return nil, err
	}
	return &Server{AdminDSN: dsn, Source: "testcontainers", stop: func() { _ = testcontainers.TerminateContainer(c) }}, nil
}

// Stop stops the server if pgtest started it.
func (s *Server) Stop() { s.stop() }

func ping(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	return c.Close(ctx)
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// DSN creates a fresh database for t on the package's server and returns a
// DSN for it. The database is dropped when t ends.
func DSN(t testing.TB) string {
	t.Helper()
	return Current().NewDatabase(t)
}

// DSNWith is DSN for a database created with options (CREATE DATABASE's
// clauses, such as "TEMPLATE template0 LOCALE 'C.UTF-8'").
func DSNWith(t testing.TB, options string) string {
	t.Helper()
	return Current().newDatabase(t, options)
}

// NewDatabase creates a fresh database dropped when t ends, and returns its DSN.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	return s.newDatabase(t, "")
}

func (s *Server) newDatabase(t testing.TB, options string) string {
	t.Helper()
	var r [4]byte
	_, _ = rand.Read(r[:])
	name := unsafeName.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	name = "t_" + name + "_" + hex.EncodeToString(r[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, s.AdminDSN)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" "+options); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, s.AdminDSN)
		if err != nil {
			t.Errorf("pgtest: connect to drop %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	dsn, err := WithDatabase(s.AdminDSN, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
}

// WithDatabase returns dsn (a URL or keyword/value string) with its database
// replaced by db.
func WithDatabase(dsn, db string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("bad DSN URL: %w", err)
		}
		u.Path = "/" + db
		return u.String(), nil
	}
	if strings.TrimSpace(dsn) == "" {
		return "", errors.New("empty DSN")
	}
	return dsn + " dbname='" + strings.ReplaceAll(db, "'", `\'`) + "'", nil
}

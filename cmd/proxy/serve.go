package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/engine"
	"github.com/pgonion/pgonion/internal/procs"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/scram"
	"github.com/pgonion/pgonion/internal/wire"
)

// serveFlags are the flags of `proxy serve` (and, in part, `proxy demo`).
type serveFlags struct {
	listen          string
	backend         string
	auth            string
	authFile        string
	tlsCert         string
	tlsKey          string
	tlsRequired     bool
	maxMessageSize  int
	maxClientConn   int
	maxStatement    int
	maxHeld         int64
	shutdownTimeout time.Duration
	defaultPolicy   string
	log             logFlags
	keys            keyFlags // serve only; the demo keeps its keys with its data
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "listen", "127.0.0.1:6432", "`address` to accept clients on")
	fs.StringVar(&f.auth, "auth", string(wire.AuthSCRAM), "client authentication: scram-sha-256 or trust (trust only on loopback listeners)")
	fs.StringVar(&f.authFile, "auth-file", "", "`file` of users for scram-sha-256, one `\"user\" \"secret\"` per line (see 'proxy passwd')")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate `file`; with --tls-key, clients may use TLS")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM private key `file` for --tls-cert")
	fs.BoolVar(&f.tlsRequired, "tls-required", false, "refuse clients that do not use TLS")
	fs.IntVar(&f.maxMessageSize, "max-message-size", wire.DefaultMaxMessageSize, "largest client message body, in `bytes`")
	fs.IntVar(&f.maxClientConn, "max-client-conn", wire.DefaultMaxClientConns, "most client sessions at once; more are refused with 53300 (0: no limit)")
	fs.IntVar(&f.maxStatement, "max-statement-size", engine.DefaultMaxStatementSize, "longest statement text, in `bytes`, the proxy parses; longer ones are refused with 54000 while encrypted tables exist")
	fs.Int64Var(&f.maxHeld, "max-held-memory", engine.DefaultMaxHeldBytes, "`bytes` of rows one statement may hold in the proxy (split execution, sorts); beyond, it fails with 53200")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM, how long running transactions may take to finish")
	fs.StringVar(&f.defaultPolicy, "default-policy", string(catalog.Encrypted), "how columns of tables created through the proxy are stored unless declared otherwise (proxy columns set): encrypted, sensitive or plain")
	f.log.register(fs)
}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var f serveFlags
	f.register(fs)
	f.keys.register(fs)
	fs.StringVar(&f.backend, "backend", "", "libpq `DSN` (URL or key=value) of the PostgreSQL server, with the proxy's own credentials")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: proxy serve --backend DSN [flags]\n\nRelays PostgreSQL clients to the backend server. At start-up it migrates the\nschema pgonion in the backend database and opens the key store (creating\nit, and the master key file, when neither exists and the database holds no\nencrypted data).\n\nFlags (each also settable as PGONION_<NAME>):")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.backend == "" {
		return usagef("--backend is required (e.g. --backend 'postgres://proxy@db.example:5432/app?sslmode=verify-full')")
	}
	log, err := f.log.logger(stderr)
	if err != nil {
		return err
	}
	backend, err := pgconn.ParseConfig(f.backend)
	if err != nil {
		return usagef("bad --backend: %v", err)
	}
	cfg, err := wireConfig(&f, backend, log)
	if err != nil {
		return err
	}
	// Keys and schema before the listener: a proxy that cannot serve
	// encrypted data correctly never accepts a client.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	eng, err := startEngine(ctx, f.backend, &f, log)
	cancel()
	if err != nil {
		return err
	}
	defer eng.Close()
	cfg.Interceptors = eng.NewSession
	return serve(&f, cfg, log, nil)
}

// startEngine readies the backend and the keys (prepareBackend) and starts
// the statement engine that encrypts and decrypts for every session.
func startEngine(ctx context.Context, dsn string, f *serveFlags, log *slog.Logger) (*engine.Engine, error) {
	pol := catalog.Policy(f.defaultPolicy)
	switch pol {
	case catalog.Encrypted, catalog.Sensitive, catalog.Plain:
	default:
		return nil, usagef("bad --default-policy %q: want encrypted, sensitive or plain", f.defaultPolicy)
	}
	store, err := prepareBackend(ctx, dsn, &f.keys, log)
	if err != nil {
		return nil, err
	}
	policy := func(table, column string) rewrite.ColumnPolicy { return rewrite.ColumnPolicy{Policy: pol} }
	eng, err := engine.New(ctx, engine.Config{Backend: dsn, Store: store, Reopen: f.keys.open, Policy: policy, Logger: log,
		MaxStatementSize: f.maxStatement, MaxHeldBytes: f.maxHeld})
	if err != nil {
		return nil, fmt.Errorf("starting the encryption engine: %w", err)
	}
	return eng, nil
}

// wireConfig checks the serving flags and builds the server configuration.
func wireConfig(f *serveFlags, backend *pgconn.Config, log *slog.Logger) (wire.Config, error) {
	cfg := wire.Config{
		Backend:        backend,
		Auth:           wire.AuthMode(f.auth),
		MaxMessageSize: f.maxMessageSize,
		MaxClientConns: f.maxClientConn,
		Logger:         log,
		RequireTLS:     f.tlsRequired,
	}
	switch cfg.Auth {
	case wire.AuthTrust:
		addr, err := net.ResolveTCPAddr("tcp", f.listen)
		if err != nil {
			return cfg, usagef("bad --listen %q: %v", f.listen, err)
		}
		if !addr.IP.IsLoopback() {
			return cfg, usagef("--auth trust is allowed only on loopback addresses, not %s", f.listen)
		}
	case wire.AuthSCRAM:
		if f.authFile == "" {
			return cfg, usagef("--auth scram-sha-256 needs --auth-file (or use --auth trust on a loopback address)")
		}
		users, err := scram.ReadAuthFile(f.authFile)
		if err != nil {
			return cfg, fmt.Errorf("reading --auth-file: %w", err)
		}
		cfg.Users = users
	default:
		return cfg, usagef("bad --auth %q: want scram-sha-256 or trust", f.auth)
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return cfg, usagef("--tls-cert and --tls-key go together")
	}
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return cfg, fmt.Errorf("loading TLS certificate: %w", err)
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if f.tlsRequired && cfg.TLS == nil {
		return cfg, usagef("--tls-required needs --tls-cert and --tls-key")
	}
	return cfg, nil
}

// serve runs the proxy until SIGINT or SIGTERM. ready, if set, is called
// once the listener is open.
func serve(f *serveFlags, cfg wire.Config, log *slog.Logger, ready func(addr net.Addr)) error {
	tuneGC(log)
	// One P while a lone session runs (internal/procs), unless the
	// operator set GOMAXPROCS.
	if procs.Adapt() {
		cfg.OnSession = procs.Session
		log.Debug("scheduler", "gomaxprocs", "1 with at most one client session, else "+strconv.Itoa(procs.Full()))
	}
	defer heapProfiles(log)()
	// Before the listener opens, so that a signal right after start-up
	// drains instead of killing the process.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	srv, err := wire.NewServer(cfg)
	if err != nil {
		return usagef("%v", err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("cannot listen: %w", err)
	}
	if cfg.Auth == wire.AuthTrust && !wire.IsLoopback(ln.Addr()) {
		ln.Close()
		return usagef("--auth trust is allowed only on loopback addresses, not %s", ln.Addr())
	}
	log.Info("proxy listening", "addr", ln.Addr().String(), "backend", backendLabel(cfg.Backend), "auth", f.auth, "tls", cfg.TLS != nil)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if ready != nil {
		go ready(ln.Addr())
	}
	select {
	case err := <-errc:
		return err
	case sig := <-sigs:
		log.Info("shutting down: draining sessions", "signal", sig.String(), "timeout", f.shutdownTimeout.String(), "sessions", srv.ActiveSessions())
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			log.Warn("second signal: terminating sessions now")
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("shutdown timeout reached: remaining sessions were terminated")
	}
	if err := <-errc; err != nil && !errors.Is(err, wire.ErrServerClosed) {
		return err
	}
	log.Info("proxy stopped")
	return nil
}

// backendLabel describes the backend for logs without its password.
func backendLabel(c *pgconn.Config) string {
	return fmt.Sprintf("%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

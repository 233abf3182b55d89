package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/embedpg"
	"github.com/pgonion/pgonion/internal/wire"
)

func runDemo(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var f serveFlags
	f.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: proxy demo [flags]\n\nStarts a throwaway PostgreSQL from the local server binaries and the proxy in\nfront of it, creates and fills an example table (patients) through the proxy,\nshows what a client sees and what the server stores, and serves until\ninterrupted. Everything is deleted on exit.\n\nFlags:")
		fs.PrintDefaults()
	}
	// The demo is local: trust on loopback unless told otherwise.
	f.auth = string(wire.AuthTrust)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := f.log.logger(stderr)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Starting a throwaway PostgreSQL server...")
	ctx := context.Background()
	cluster, err := embedpg.Start(ctx, embedpg.Options{})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	if err := createDatabase(ctx, cluster.DSN("postgres"), "demo"); err != nil {
		return err
	}
	backend, err := pgconn.ParseConfig(cluster.DSN("demo"))
	if err != nil {
		return err
	}
	cfg, err := wireConfig(&f, backend, log)
	if err != nil {
		return err
	}
	// The demo's keys are as throwaway as its data: they live, and die, in
	// the cluster's directory.
	f.keys.register(flag.NewFlagSet("demo-keys", flag.ContinueOnError))
	f.keys.keystore = filepath.Join(cluster.Dir, "pgonion.keystore")
	f.keys.masterKeyFile = filepath.Join(cluster.Dir, "pgonion.master")
	f.keys.throwaway = true
	eng, err := startEngine(ctx, cluster.DSN("demo"), &f, log)
	if err != nil {
		return err
	}
	defer eng.Close()
	cfg.Interceptors = eng.NewSession
	ready := func(addr net.Addr) {
		host, port, _ := net.SplitHostPort(addr.String())
		url := fmt.Sprintf("postgres://demo@%s/demo?sslmode=disable", net.JoinHostPort(host, port))
		if err := demoCheck(url); err != nil {
			fmt.Fprintf(stdout, "warning: self-check through the proxy failed: %v\n", err)
		} else if err := demoShow(stdout, url, cluster.DSN("demo")); err != nil {
			fmt.Fprintf(stdout, "warning: the example table could not be shown: %v\n", err)
		}
		fmt.Fprintf(stdout, "\nThe proxy is serving on %s, in front of PostgreSQL on 127.0.0.1:%d (data in %s).\n", addr, cluster.Port, cluster.Dir)
		fmt.Fprintf(stdout, "Connect with:\n\n    psql %q\n\nor: psql -h %s -p %s -U demo demo\n\nPress Ctrl-C to stop; the server and its data are deleted on exit.\n", url, host, port)
	}
	return serve(&f, cfg, log, ready)
}

func createDatabase(ctx context.Context, adminDSN, name string) error {
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// demoCheck runs one query through the proxy, as a client would.
func demoCheck(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var v string
	return conn.QueryRow(ctx, "SELECT version()").Scan(&v)
}

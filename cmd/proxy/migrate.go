package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/migrations"
)

func runMigrate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	backend := fs.String("backend", "", "libpq `DSN` of the PostgreSQL server (the proxy's own credentials)")
	check := fs.Bool("check", false, "only report which migrations are applied; change nothing")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: proxy migrate --backend DSN [--check]\n\nCreates or upgrades the proxy's schema \"pgonion\" in the backend database\n(metadata tables, helper functions and aggregates). Safe to run while\nother proxies run: each migration is applied exactly once.\n\nFlags (each also settable as PGONION_<NAME>):")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *backend == "" {
		return usagef("--backend is required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, *backend)
	if err != nil {
		return fmt.Errorf("cannot reach the backend: %w\nhint: check --backend", err)
	}
	defer conn.Close(ctx)
	if *check {
		st, err := migrations.Check(ctx, conn, migrations.FS)
		if err != nil {
			return err
		}
		pending := 0
		for _, s := range st {
			state := "applied"
			if !s.Applied {
				state = "pending"
				pending++
			}
			fmt.Fprintf(stdout, "%04d %-40s %s\n", s.Version, s.Name, state)
		}
		fmt.Fprintf(stdout, "%d pending\n", pending)
		return nil
	}
	applied, err := applyMigrations(ctx, conn, nil)
	for _, m := range applied {
		fmt.Fprintf(stdout, "applied %s\n", m.Name)
	}
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(stdout, "the database is up to date")
	}
	return nil
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
)

// loadResult is the load of one table into one database.
type loadResult struct {
	Table    string
	Rows     int64
	Direct   time.Duration // COPY directly into the plaintext database
	Proxied  time.Duration // COPY through the proxy into the encrypted one
	ProxyErr string        // why the load through the proxy failed
}

// load creates the schema in both databases (through the proxy for the
// encrypted one), loads every table with COPY ... FROM STDIN (csv), builds
// the indexes and analyzes both databases.
//
// With train set, the queries numbered train run through the proxy on the
// empty encrypted tables before anything is loaded (see env.train); the
// number of onions that peeled is returned.
func (e *env) load(ctx context.Context, dataDir string, train []int, timeout time.Duration, progress io.Writer) ([]loadResult, int, error) {
	direct, err := pgx.Connect(ctx, e.plainDSN)
	if err != nil {
		return nil, 0, err
	}
	defer direct.Close(ctx)
	proxied, err := pgx.Connect(ctx, e.proxyDSN)
	if err != nil {
		return nil, 0, err
	}
	defer proxied.Close(ctx)
	for _, ddl := range schemaDDL {
		if _, err := direct.Exec(ctx, ddl); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", ddl, err)
		}
		if _, err := proxied.Exec(ctx, ddl); err != nil {
			return nil, 0, fmt.Errorf("through the proxy: %s: %w", ddl, err)
		}
	}
	peels := 0
	if len(train) > 0 {
		fmt.Fprintf(progress, "settling onion layers: %d queries through the proxy on the empty tables (training)...", len(train))
		if peels, err = e.train(ctx, dataDir, train, timeout); err != nil {
			return nil, 0, err
		}
		fmt.Fprintf(progress, " %d onions peeled\n", peels)
	}
	var out []loadResult
	for _, t := range tables {
		path := filepath.Join(dataDir, t+".csv")
		r := loadResult{Table: t}
		if r.Rows, r.Direct, err = copyFile(ctx, direct, t, path); err != nil {
			return nil, 0, fmt.Errorf("loading %s directly: %w", t, err)
		}
		fmt.Fprintf(progress, "loading %s (%d rows): direct %.2fs", t, r.Rows, r.Direct.Seconds())
		n, d, err := copyFile(ctx, proxied, t, path)
		switch {
		case err != nil:
			r.ProxyErr = err.Error()
			fmt.Fprintf(progress, ", through the proxy FAILED: %v\n", err)
		case n != r.Rows:
			r.ProxyErr = fmt.Sprintf("the proxy loaded %d rows, not %d", n, r.Rows)
			fmt.Fprintf(progress, ", through the proxy: %s\n", r.ProxyErr)
		default:
			r.Proxied = d
			fmt.Fprintf(progress, ", through the proxy %.2fs\n", d.Seconds())
		}
		out = append(out, r)
	}
	fmt.Fprintln(progress, "indexing, clustering and analyzing...")
	for _, ddl := range append(indexDDL[:len(indexDDL):len(indexDDL)], clusterDDL...) {
		if _, err := direct.Exec(ctx, ddl); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", ddl, err)
		}
		if _, err := proxied.Exec(ctx, ddl); err != nil {
			return nil, 0, fmt.Errorf("through the proxy: %s: %w", ddl, err)
		}
	}
	if _, err := direct.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return nil, 0, err
	}
	// The encrypted database is analyzed on the server itself: statistics
	// over ciphertexts are what its planner has to work with.
	encDirect, err := pgx.Connect(ctx, e.encDSN)
	if err != nil {
		return nil, 0, err
	}
	defer encDirect.Close(ctx)
	if _, err := encDirect.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return nil, 0, err
	}
	return out, peels, nil
}

// copyFile loads a csv file (with header) into table.
func copyFile(ctx context.Context, conn *pgx.Conn, table, path string) (int64, time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	start := time.Now()
	tag, err := conn.PgConn().CopyFrom(ctx, f, "COPY "+table+" FROM STDIN (FORMAT csv, HEADER true)")
	if err != nil {
		return 0, 0, err
	}
	return tag.RowsAffected(), time.Since(start), nil
}

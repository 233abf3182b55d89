package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
)

// train settles the onion layers before the data is loaded, as CryptDB's
// training mode does: it runs each query once through the proxy on the
// still empty encrypted tables, so the proxy peels every onion a query
// needs while peeling costs nothing; rows are then written at those
// layers. The server ends up knowing exactly what it would know after the
// same queries ran on loaded tables (the layers are the same), but no
// peel rewrites a loaded table: a peel is one UPDATE of every row, which
// takes seconds to minutes and leaves the table with a dead copy of each
// row until VACUUM FULL, slowing every later scan.
//
// It returns how many onions were peeled. Errors of single queries (a
// refusal, say) are left to the measured runs, which report them.
func (e *env) train(ctx context.Context, dataDir string, which []int, timeout time.Duration) (int, error) {
	before, err := e.peelsLogged()
	if err != nil {
		return 0, err
	}
	for _, nr := range which {
		b, err := os.ReadFile(filepath.Join(dataDir, "queries", fmt.Sprintf("q%02d.sql", nr)))
		if err != nil {
			return 0, err
		}
		// A connection per query, so a failed one leaves nothing behind.
		conn, err := pgx.Connect(ctx, e.proxyDSN)
		if err != nil {
			return 0, err
		}
		_, _, _ = timed(ctx, conn, string(b), timeout)
		conn.Close(ctx)
	}
	after, err := e.peelsLogged()
	return after - before, err
}

// peelsLogged counts the peels the proxy has logged so far.
func (e *env) peelsLogged() (int, error) {
	b, err := os.ReadFile(e.proxyLog)
	if err != nil {
		return 0, err
	}
	return bytes.Count(b, []byte(`msg="peeled onion"`)), nil
}

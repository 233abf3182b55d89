package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestConnectionChurn opens and closes many sessions, each sending at once
// an extended-protocol pipeline (Parse, Bind, Describe, Execute, Sync) as
// psycopg with server-side binding does for its first statement, and
// checks that every answer arrives in time (an ORM suite once hung on
// this, with both sockets empty: pgconn's background reader outlived the
// connect; wire's TestSlowConnectKeepsFirstAnswer forces that case).
func TestConnectionChurn(t *testing.T) {
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	setup := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	mustExec(t, setup, "CREATE TABLE churn (id int, v text)")
	mustExec(t, setup, "INSERT INTO churn VALUES (1, 'a')")
	mustExec(t, setup, "CREATE TABLE churn_plain_src (id int)")
	const workers, each = 4, 250
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			modes := []pgx.QueryExecMode{pgx.QueryExecModeExec, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeCacheStatement}
			for i := range each {
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				err := func() error {
					cfg, err := pgx.ParseConfig(p.url)
					if err != nil {
						return err
					}
					cfg.DefaultQueryExecMode = modes[(w+i)%len(modes)]
					c, err := pgx.ConnectConfig(ctx, cfg)
					if err != nil {
						return err
					}
					defer c.Close(context.Background())
					var tz string
					if err := c.QueryRow(ctx, "SELECT set_config('TimeZone', $1, false)", "UTC").Scan(&tz); err != nil || tz != "UTC" {
						return fmt.Errorf("set_config: %q %v", tz, err)
					}
					var v string
					if err := c.QueryRow(ctx, "SELECT v FROM churn WHERE id = $1", 1).Scan(&v); err != nil || v != "a" {
						return fmt.Errorf("encrypted read: %q %v", v, err)
					}
					var n int
					if err := c.QueryRow(ctx, "SELECT count(*) FROM churn_plain_src WHERE id > $1", 0).Scan(&n); err != nil {
						return fmt.Errorf("plain read: %v", err)
					}
					return nil
				}()
				cancel()
				if err != nil {
					errs <- fmt.Errorf("worker %d, session %d: %w", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

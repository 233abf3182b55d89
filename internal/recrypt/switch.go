package recrypt

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
)

// The switch intent (migration 0012): before the cutover, the rewriter
// records that it is about to switch the table to its new form and waits
// until every running proxy has loaded that; proxies then hold new
// statements on the table until the intent is gone, when their catalog
// shows the new form. Without it, a statement a proxy planned with the
// old form in the moment between the switch's commit and the proxy's
// reload would fail on the server (the old form is gone), an error the
// application would not get without the rewrite.
//
// The rewriter takes part in the proxies' leases with a row of its own
// that never holds anyone up (intents_seen at its maximum) and expires by
// itself if the rewriter dies.
const (
	switchLease = 2 * time.Second // how long the intent lives if the rewriter dies (renewed every half second)
	switchAck   = 5 * time.Second // how long to wait for proxies to load it
	// switchGrace is waited after the proxies loaded the intent, so that
	// a statement one of them planned just before is on the server (and
	// done, or holding the table) before the switch asks for its lock.
	switchGrace = 250 * time.Millisecond
)

// declareSwitch records the switch intent of ru's table, waits for the
// running proxies to load it, and keeps its lease alive (from a
// connection of its own: the rewriter's is busy with the switch) until
// the returned function removes it.
func (r *Rewriter) declareSwitch(ctx context.Context, ru *run) (drop func(), err error) {
	lease, err := pgx.ConnectConfig(ctx, r.Conn.Config().Copy())
	if err != nil {
		return nil, fmt.Errorf("announcing the switch of %s: %w", ru.rel, err)
	}
	id := catalog.NewID()
	var n int64
	_, err = lease.Exec(ctx, `INSERT INTO pgonion.proxies (proxy_id, intents_seen, expires) VALUES ($1, 9223372036854775807, now() + $2::interval)`,
		id, switchLease.String())
	if err == nil {
		err = lease.QueryRow(ctx, `INSERT INTO pgonion.intents (schema_name, table_name, proxy_id, switching) VALUES ($1, $2, $3, true) RETURNING n`,
			ru.plan.Schema, ru.plan.Table, id).Scan(&n)
	}
	if err == nil {
		_, err = lease.Exec(ctx, "SELECT pg_notify('pgonion_intents', '')")
	}
	stop := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(switchLease / 4)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				_, _ = lease.Exec(ctx, "UPDATE pgonion.proxies SET expires = now() + $2::interval WHERE proxy_id = $1", id, switchLease.String())
			}
		}
	}()
	drop = func() {
		close(stop)
		<-renewed
		bg, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = lease.Exec(bg, "DELETE FROM pgonion.intents WHERE proxy_id = $1", id)
		_, _ = lease.Exec(bg, "DELETE FROM pgonion.proxies WHERE proxy_id = $1", id)
		_, _ = lease.Exec(bg, "SELECT pg_notify('pgonion_intents', '')")
		lease.Close(bg)
	}
	if err != nil {
		drop()
		return nil, fmt.Errorf("announcing the switch of %s: %w", ru.rel, err)
	}
	deadline := time.Now().Add(switchAck)
	for wait := time.Millisecond; time.Now().Before(deadline); wait = min(2*wait, 50*time.Millisecond) {
		var behind int
		if err := r.Conn.QueryRow(ctx, `SELECT count(*) FROM pgonion.proxies WHERE proxy_id <> $1 AND expires > now() AND intents_seen < $2`, id, n).Scan(&behind); err != nil {
			drop()
			return nil, err
		}
		if behind == 0 {
			break
		}
		time.Sleep(wait)
	}
	// A proxy that did not confirm in time is likely gone; if not, its
	// statements in the moment of the switch may fail, never see the
	// old form.
	select {
	case <-ctx.Done():
	case <-time.After(switchGrace):
	}
	return drop, nil
}

package recrypt

import (
	"context"
	"fmt"
	"time"

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
	switchLease = 5 * time.Second // how long the intent lives if the rewriter dies (renewed while the cutover waits)
	switchAck   = 5 * time.Second // how long to wait for proxies to load it
)

// declareSwitch records the switch intent of ru's table and waits for the
// running proxies to load it; it returns the functions that renew and
// remove it.
func (r *Rewriter) declareSwitch(ctx context.Context, ru *run) (renew, drop func(), err error) {
	id := catalog.NewID()
	var n int64
	_, err = r.Conn.Exec(ctx, `INSERT INTO pgonion.proxies (proxy_id, intents_seen, expires) VALUES ($1, 9223372036854775807, now() + $2::interval)`,
		id, switchLease.String())
	if err == nil {
		err = r.Conn.QueryRow(ctx, `INSERT INTO pgonion.intents (schema_name, table_name, proxy_id, switching) VALUES ($1, $2, $3, true) RETURNING n`,
			ru.plan.Schema, ru.plan.Table, id).Scan(&n)
	}
	if err == nil {
		_, err = r.Conn.Exec(ctx, "SELECT pg_notify('pgonion_intents', '')")
	}
	renew = func() {
		_, _ = r.Conn.Exec(ctx, "UPDATE pgonion.proxies SET expires = now() + $2::interval WHERE proxy_id = $1", id, switchLease.String())
	}
	drop = func() {
		bg, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = r.Conn.Exec(bg, "DELETE FROM pgonion.intents WHERE proxy_id = $1", id)
		_, _ = r.Conn.Exec(bg, "DELETE FROM pgonion.proxies WHERE proxy_id = $1", id)
		_, _ = r.Conn.Exec(bg, "SELECT pg_notify('pgonion_intents', '')")
	}
	if err != nil {
		drop()
		return nil, nil, fmt.Errorf("announcing the switch of %s: %w", ru.rel, err)
	}
	deadline := time.Now().Add(switchAck)
	for wait := time.Millisecond; time.Now().Before(deadline); wait = min(2*wait, 50*time.Millisecond) {
		var behind int
		if err := r.Conn.QueryRow(ctx, `SELECT count(*) FROM pgonion.proxies WHERE proxy_id <> $1 AND expires > now() AND intents_seen < $2`, id, n).Scan(&behind); err != nil {
			drop()
			return nil, nil, err
		}
		if behind == 0 {
			break
		}
		time.Sleep(wait)
	}
	// A proxy that did not confirm in time is likely gone; if not, its
	// statements in the moment of the switch may fail, never see the
	// old form.
	return renew, drop, nil
}

package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/procs"
	"github.com/pgonion/pgonion/internal/recrypt"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// Onions built on first need (DESIGN §4, §12). A column whose policy
// allows search tokens has none until a LIKE could use them, since they
// leak which rows share words and trigrams as soon as they exist. The
// statement that first could does not wait: it is answered as before,
// the server testing only nullness and the proxy the pattern on the
// decrypted values, while a rewrite (package recrypt, as `proxy columns
// set` runs it) builds the column's search onion in the background,
// online. From its switch on, the server prefilters LIKE and ILIKE with
// the tokens.
//
// One build per column runs in this proxy; across proxies the rewrite's
// advisory lock lets one through, and the others try again later.

// buildRetry is how long after a build ended (failed, or found another
// rewrite of the table under way) a statement may start it again.
const buildRetry = 30 * time.Second

// builds tracks this proxy's background builds.
type builds struct {
	ctx    context.Context // ends when the engine closes
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	ended  map[catalog.ID]time.Time // by column: zero while running
	done   atomic.Int64             // builds finished
}

// stop cancels the builds running and waits for them.
func (b *builds) stop() {
	b.mu.Lock()
	if b.cancel != nil {
		b.cancel()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// buildOnions starts building the onions wants lists (QueryPlan.Wants),
// unless a build of the column runs or ended lately.
func (e *Engine) buildOnions(wants []rewrite.Need) {
	b := &e.builds
	for _, w := range wants {
		b.mu.Lock()
		if b.ctx == nil || b.ctx.Err() != nil {
			b.mu.Unlock()
			return
		}
		ended, seen := b.ended[w.Column.ID]
		if seen && (ended.IsZero() || time.Since(ended) < buildRetry) {
			b.mu.Unlock()
			continue
		}
		if b.ended == nil {
			b.ended = map[catalog.ID]time.Time{}
		}
		b.ended[w.Column.ID] = time.Time{}
		b.wg.Add(1)
		b.mu.Unlock()
		go func() {
			defer b.wg.Done()
			// Beside the sessions, not in turn with a lone one's.
			defer procs.Claim()()
			e.buildOnion(b.ctx, w)
			b.mu.Lock()
			b.ended[w.Column.ID] = time.Now()
			b.mu.Unlock()
		}()
	}
}

// buildOnion runs one build on a connection of its own.
func (e *Engine) buildOnion(ctx context.Context, w rewrite.Need) {
	what := []any{"table", w.Table.Schema + "." + w.Table.Name, "column", w.Column.Name, "onion", string(w.Kind)}
	conn, err := pgx.Connect(ctx, e.cat.dsn)
	if err != nil {
		e.log.Warn("building an onion on first need: cannot connect", append(what, "err", err)...)
		return
	}
	defer conn.Close(context.Background())
	keys, err := e.rewriteKeys(ctx, conn)
	if err != nil {
		e.log.Warn("building an onion on first need: the catalog's key", append(what, "err", err)...)
		return
	}
	r := &recrypt.Rewriter{Conn: conn, Keys: keys}
	e.log.Info("building an onion on first need", what...)
	began := time.Now()
	plan, err := r.BuildOnion(ctx, w.Table.Schema, w.Table.Name, w.Column.Name, w.Kind)
	switch {
	case errors.Is(err, recrypt.ErrBusy):
		e.log.Info("building an onion on first need: another rewrite of the table is running; a later statement will try again", what...)
	case err != nil && ctx.Err() != nil:
		e.log.Info("building an onion on first need: stopped with the proxy; a later statement will resume it", what...)
	case err != nil:
		e.log.Warn("building an onion on first need failed; LIKE goes on being answered by the proxy", append(what, "err", err)...)
	case len(plan.Skipped) > 0 && len(plan.Columns) == 0:
		e.log.Info("building an onion on first need: nothing to do", append(what, "reason", plan.Skipped)...)
	default:
		e.builds.done.Add(1)
		e.log.Info("built an onion on first need", append(what, "took", time.Since(began).Round(time.Millisecond))...)
	}
}

// OnionsBuilt returns how many onions this engine built on first need.
func (e *Engine) OnionsBuilt() int64 { return e.builds.done.Load() }

// rekeyBuildWait bounds how long a re-keying waits for a build of an
// onion of the same table this proxy runs.
const rekeyBuildWait = 10 * time.Second

// building reports whether this proxy builds an onion of a column of t.
func (e *Engine) building(t *catalog.Table) bool {
	b := &e.builds
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range t.Columns {
		if ended, seen := b.ended[t.Columns[i].ID]; seen && ended.IsZero() {
			return true
		}
	}
	return false
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// writeGate orders one table's writes and peels within a proxy. A write
// holds the gate shared from the moment the proxy reads the onion layers
// to encrypt its values until the server has answered the statement (by
// then the statement holds its table lock, which the peel's LOCK TABLE
// waits for); a peel holds it exclusively from before it locks the table
// until this proxy's catalog copy shows the new layer. So no write is
// encrypted at a layer a peel is about to strip and stored after it.
//
// A waiting peel blocks new writers (it would starve otherwise), except
// writers of a session that already holds the gate: that session's
// earlier statement keeps the peel waiting anyway, and blocking the later
// one would deadlock a pipelining client.
//
// A peel run in a client's transaction (peelInTx) holds the gate until
// that transaction ends, as owner: the owner's own writes pass (they are
// encrypted at the layers its transaction sees), and other sessions'
// writes wait at most peelLockTimeout, since the owner's transaction may
// in turn wait for theirs on the server, where no deadlock detector sees
// the gate.
type writeGate struct {
	mu      sync.Mutex
	shared  int           // writes holding the gate
	peel    chan struct{} // non-nil while a peel holds or waits for the gate; closed when it is done
	drained chan struct{} // closed when shared drops to 0 while a peel waits
	owner   *session      // the session whose transaction holds the gate (peelInTx), else nil
}

// errGateOwned is lockShared's error when a transaction's peel held the
// gate for longer than a write waits.
var errGateOwned = errors.New("the table is being peeled by another session's open transaction")

// lockShared takes the gate for session s's write, waiting for a peel in
// progress; reentrant skips waiting for a peel that has not started.
func (g *writeGate) lockShared(s *session, reentrant bool) error {
	var deadline <-chan time.Time
	for {
		g.mu.Lock()
		if g.peel == nil || (reentrant && g.drained != nil) || (s != nil && g.owner == s) {
			g.shared++
			g.mu.Unlock()
			return nil
		}
		ch, owned := g.peel, g.owner != nil
		g.mu.Unlock()
		if !owned {
			<-ch
			continue
		}
		if deadline == nil {
			deadline = time.After(peelLockTimeout)
		}
		select {
		case <-ch:
		case <-deadline:
			return errGateOwned
		}
	}
}

// ownedBy reports whether session s's transaction holds the gate.
func (g *writeGate) ownedBy(s *session) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.owner != nil && g.owner == s
}

func (g *writeGate) unlockShared() {
	g.mu.Lock()
	g.shared--
	if g.shared == 0 && g.drained != nil {
		close(g.drained)
		g.drained = nil
	}
	g.mu.Unlock()
}

// lock takes the gate for a peel: it waits for other peels of the table
// in this proxy and for the writes in flight, until ctx ends. owner is
// the session whose transaction the peel runs in, or nil.
func (g *writeGate) lock(ctx context.Context, owner *session) error {
	for {
		g.mu.Lock()
		if g.peel == nil {
			break
		}
		ch := g.peel
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	g.peel = make(chan struct{})
	g.owner = owner
	if g.shared == 0 {
		g.mu.Unlock()
		return nil
	}
	drained := make(chan struct{})
	g.drained = drained
	g.mu.Unlock()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		if g.drained == drained {
			g.drained = nil
		}
		g.mu.Unlock()
		g.unlock()
		return ctx.Err()
	}
}

func (g *writeGate) unlock() {
	g.mu.Lock()
	close(g.peel)
	g.peel, g.owner = nil, nil
	g.mu.Unlock()
}

// gate returns the write gate of a table.
func (e *Engine) gate(id catalog.ID) *writeGate {
	e.gatesMu.Lock()
	defer e.gatesMu.Unlock()
	if e.gates == nil {
		e.gates = map[catalog.ID]*writeGate{}
	}
	g := e.gates[id]
	if g == nil {
		g = &writeGate{}
		e.gates[id] = g
	}
	return g
}

// holdWrites takes table t's write gate for the statement being planned or
// bound, until the server has answered it. It must be called before the
// statement's values are encrypted (encryption reads the layers then).
func (s *session) holdWrites(t *catalog.Table) error {
	g := s.e.gate(t.ID)
	s.mu.Lock()
	held := s.writing[t.ID] > 0
	s.mu.Unlock()
	if err := g.lockShared(s, held); err != nil {
		return &pgconn.PgError{Severity: "ERROR", Code: "55P03",
			Message: fmt.Sprintf("could not write to table %s: %v", t.Name, err),
			Detail:  fmt.Sprintf("That transaction needed an onion of the table peeled after writing to it; writes through this proxy wait for it to end, for at most %s.", peelLockTimeout),
			Hint:    "Retry the statement, or keep transactions that first query encrypted columns short."}
	}
	s.mu.Lock()
	if s.writing == nil {
		s.writing = map[catalog.ID]int{}
	}
	s.writing[t.ID]++
	s.mu.Unlock()
	release := func() {
		s.mu.Lock()
		s.writing[t.ID]--
		s.mu.Unlock()
		g.unlockShared()
	}
	if s.deferFn == nil {
		release() // no wire session (tests planning directly)
		return nil
	}
	s.deferFn(release)
	return nil
}

// ensureLayers peels every onion the statement needs that is not yet at
// the needed layer.
func (s *session) ensureLayers(needs []rewrite.Need) error {
	for _, n := range needs {
		if s.hasLayer(n) {
			continue
		}
		s.mu.Lock()
		writing := s.writing[n.Table.ID] > 0
		s.mu.Unlock()
		if writing {
			// The peel would wait for this session's own write.
			return &pgconn.PgError{Severity: "ERROR", Code: "55P03",
				Message: fmt.Sprintf("the query needs the %s onion of %s.%s peeled to %s, but this session has a write to the table in flight", n.Kind, n.Table.Name, n.Column.Name, n.Layer),
				Hint:    "Send the query on its own (not in one query string or pipeline with writes to the table) once, so the proxy can adjust the onion."}
		}
		inTx, err := s.peelsInTx(n)
		if err != nil {
			return err
		}
		if inTx {
			return s.peelInTx(n)
		}
		if err := s.peelConflict(n); err != nil {
			return err
		}
		if err := s.e.peel(context.Background(), n); err != nil {
			return err
		}
	}
	return nil
}

// hasLayer reports whether n's onion is at the layer n needs, in the
// shared catalog or in this session's open transaction (peelInTx).
func (s *session) hasLayer(n rewrite.Need) bool {
	at := func(c *catalog.Column) bool { return c != nil && c.Onions[string(n.Kind)] == string(n.Layer) }
	if at(s.e.cat.snapshot().ColumnByID(n.Column.ID)) {
		return true
	}
	s.mu.Lock()
	tc := s.txCat
	s.mu.Unlock()
	return tc != nil && at(tc.ColumnByID(n.Column.ID))
}

// peelConflict refuses at once a peel that would wait for a lock this
// session's own open transaction holds on the table (a write to it): the
// peel's transaction could not get it before the client's commits, and
// would only time out (peelLockTimeout).
func (s *session) peelConflict(n rewrite.Need) error {
	s.mu.Lock()
	inTx := s.lastStatus == 'T'
	s.mu.Unlock()
	if s.backendPID == 0 || !inTx {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	var held bool
	rel := quoteIdent(n.Table.Schema) + "." + quoteIdent(n.Table.Physical)
	// The modes that conflict with the peel's SHARE ROW EXCLUSIVE.
	err := s.e.work.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND granted AND relation = to_regclass($2)
		AND mode IN ('RowExclusiveLock', 'ShareUpdateExclusiveLock', 'ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock'))`,
		int64(s.backendPID), rel).Scan(&held)
	if err != nil || !held {
		return nil // the peel finds out itself
	}
	return ownLockError(n)
}

// ownLockError refuses a peel the session's own transaction blocks and
// the proxy cannot run in it (a prepared statement parsed behind other
// unsynced messages).
func ownLockError(n rewrite.Need) error {
	return &pgconn.PgError{Severity: "ERROR", Code: "55P03",
		Message: fmt.Sprintf("the query needs the %s onion of %s.%s peeled to %s, but this session's open transaction holds a lock on the table (it wrote to it)", n.Kind, n.Table.Name, n.Column.Name, n.Layer),
		Hint:    "End the transaction (commit or roll back) first, send the query on its own (as a simple query, or prepared at the start of a pipeline), or run a query needing the peel once before writing in a transaction (a column is peeled once)."}
}

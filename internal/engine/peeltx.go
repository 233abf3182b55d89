package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// errPeeledInTx tells plan to plan the statement again: peelInTx changed
// the layers its first plan was made for.
var errPeeledInTx = errors.New("engine: an onion was peeled in the client's transaction; plan again")

// peelSavepoint protects the client's transaction from a failed peel.
const peelSavepoint = "pgonion_peel"

// peelsInTx reports whether onion n must be peeled inside the session's
// open transaction rather than in one of the proxy's own (Engine.peel):
// when the transaction holds a lock on the table the peel's LOCK TABLE
// waits for (it wrote to the table, or created it), when it already
// peeled the table, or when its snapshot outlives statements (REPEATABLE
// READ, SERIALIZABLE: it would not see a peel committed after it began).
// Only a simple-protocol query, or a Parse that begins a request cycle,
// can run statements ahead (Exec).
func (s *session) peelsInTx(n rewrite.Need) (bool, error) {
	s.mu.Lock()
	inTx := s.lastStatus == 'T'
	s.mu.Unlock()
	if !inTx || !s.aheadOK || s.exec == nil {
		return false, nil
	}
	if s.e.gate(n.Table.ID).ownedBy(s) {
		return true, nil
	}
	rel := quoteIdent(n.Table.Schema) + "." + quoteIdent(n.Table.Physical)
	// The lock modes that conflict with the peel's SHARE ROW EXCLUSIVE.
	q := fmt.Sprintf(`SELECT current_setting('transaction_isolation') <> 'read committed' OR EXISTS (SELECT 1 FROM pg_locks WHERE pid = pg_backend_pid() AND granted AND relation = to_regclass(%s)
		AND mode IN ('RowExclusiveLock', 'ShareUpdateExclusiveLock', 'ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock'))`, quoteLiteral(rel))
	r := &subqueryRows{}
	if err := s.exec(q, r); errors.Is(err, wire.ErrExecUnavailable) {
		return false, nil // peelConflict explains
	} else if err != nil {
		return false, err
	}
	return len(r.rows) == 1 && len(r.rows[0]) == 1 && r.rows[0][0] != nil && *r.rows[0][0] == "t", nil
}

// peelInTx peels onion n inside the client's open transaction: the same
// statements as Engine.peel, run ahead of the client's statement under a
// savepoint (a failed peel leaves the transaction as it was), with the
// catalog change sealed in the transaction. The peel commits or rolls
// back with the client's transaction; until then this session plans with
// the peeled layer (its txCat) and every other session with the old one,
// which is what the server shows them.
//
// The table's write gate stays held, by this session, until its
// transaction has ended and the shared catalog copy shows the outcome:
// other sessions' writes through this proxy would otherwise be encrypted
// at the old layer and stored after the commit. They wait at most
// peelLockTimeout (writeGate). The transaction also holds the catalog's
// version row, so catalog changes elsewhere wait for it too: this is for
// short transactions such as an ORM's (one per test, one per request).
//
// It returns errPeeledInTx once the layer is current.
func (s *session) peelInTx(n rewrite.Need) error {
	if n.Column.Policy == catalog.Sensitive {
		return rewrite.Refusal("column %s.%s is declared sensitive: its %s onion is never peeled", n.Table.Name, n.Column.Name, n.Kind)
	}
	g := s.e.gate(n.Table.ID)
	owned := g.ownedBy(s)
	if !owned {
		ctx, cancel := context.WithTimeout(context.Background(), peelLockTimeout)
		err := g.lock(ctx, s)
		cancel()
		if err != nil {
			return &pgconn.PgError{Severity: "ERROR", Code: "55P03",
				Message: fmt.Sprintf("the query needs the %s onion of %s.%s peeled to %s, but writes to the table through this proxy did not finish within %s", n.Kind, n.Table.Name, n.Column.Name, n.Layer, peelLockTimeout),
				Hint:    "Retry; another session's transaction may hold the table."}
		}
	}
	changed, err := s.peelInTxLocked(n)
	if err != nil || !changed {
		if !owned {
			g.unlock()
		}
		if err != nil {
			return err
		}
		return errPeeledInTx
	}
	if !owned {
		s.mu.Lock()
		s.txGates = append(s.txGates, g)
		s.mu.Unlock()
	}
	s.e.peels.Add(1)
	s.e.log.Info("peeled onion in the client's transaction", "table", n.Table.Schema+"."+n.Table.Name, "column", n.Column.Name,
		"onion", string(n.Kind), "from", string(onion.LayerRND), "to", string(n.Layer))
	return errPeeledInTx
}

// peelInTxLocked runs the peel's statements in the client's transaction;
// changed is false when the catalog this session sees already has the
// layer.
func (s *session) peelInTxLocked(n rewrite.Need) (changed bool, err error) {
	base, err := s.ddlBase()
	if err != nil {
		return false, err
	}
	t := base.TableByID(n.Table.ID)
	if t == nil {
		return false, &pgconn.PgError{Severity: "ERROR", Code: "40001",
			Message: fmt.Sprintf("table %s.%s changed while the query was planned", n.Table.Schema, n.Table.Name), Hint: "Run the query again."}
	}
	t = t.Clone()
	var c *catalog.Column
	for i := range t.Columns {
		if t.Columns[i].ID == n.Column.ID {
			c = &t.Columns[i]
		}
	}
	if c == nil {
		return false, &pgconn.PgError{Severity: "ERROR", Code: "40001",
			Message: fmt.Sprintf("column %s.%s changed while the query was planned", n.Table.Name, n.Column.Name), Hint: "Run the query again."}
	}
	switch c.Onions[string(n.Kind)] {
	case string(n.Layer):
		return false, nil
	case string(onion.LayerRND):
	default:
		return false, fmt.Errorf("the %s onion of %s.%s is at layer %q", n.Kind, n.Table.Name, n.Column.Name, c.Onions[string(n.Kind)])
	}
	ps, err := s.e.peelStatements(t, c, n.Kind)
	if err != nil {
		return false, err
	}
	c.Onions[string(n.Kind)] = string(n.Layer)
	body := catalog.UpdateTableSQL(s.e.macKey(), t)
	next := base.WithTable(t)
	body += catalog.SealSQL(s.e.macKey(), next, base.Version)

	run := func(sql string, args ...[]byte) ([]*string, error) {
		r := &subqueryRows{}
		if err := s.exec(sql, r, args...); err != nil {
			return nil, err
		}
		var col []*string
		for _, row := range r.rows {
			col = append(col, row[0])
		}
		return col, nil
	}
	if _, err := run("SAVEPOINT " + peelSavepoint); errors.Is(err, wire.ErrExecUnavailable) {
		return false, ownLockError(n)
	} else if err != nil {
		return false, err
	}
	done := false
	defer func() {
		if !done {
			// The client's transaction goes on as before the peel.
			_, _ = run("ROLLBACK TO SAVEPOINT " + peelSavepoint)
			_, _ = run("RELEASE SAVEPOINT " + peelSavepoint)
		}
	}()
	old, err := run("SELECT current_setting('lock_timeout')")
	if err != nil || len(old) != 1 || old[0] == nil {
		return false, fmt.Errorf("peeling %s %s: reading lock_timeout: %v", n.Kind, n.Column.Name, err)
	}
	class, key := n.Table.ID.OnionLock()
	steps := []struct {
		sql  string
		args [][]byte
	}{
		{fmt.Sprintf("SELECT set_config('lock_timeout', '%d', true)", peelLockTimeout.Milliseconds()), nil},
		{fmt.Sprintf("SELECT pg_advisory_xact_lock(%d, %d)", class, key), nil},
		{"CREATE EXTENSION IF NOT EXISTS pgcrypto", nil},
		{ps.lock, nil},
		{ps.update, [][]byte{ps.key}},
	}
	for _, st := range steps {
		if _, err := run(st.sql, st.args...); err != nil {
			return false, peelTxError(n, err)
		}
	}
	sample, err := run(ps.sample)
	if err != nil {
		return false, peelTxError(n, err)
	}
	hexes := make([]string, 0, len(sample))
	for _, h := range sample {
		if h != nil {
			hexes = append(hexes, *h)
		}
	}
	if err := ps.check(hexes); err != nil {
		return false, err
	}
	for _, sql := range []string{
		doBlock(body),
		"SELECT set_config('lock_timeout', " + quoteLiteral(*old[0]) + ", true)",
		"RELEASE SAVEPOINT " + peelSavepoint,
	} {
		if _, err := run(sql); err != nil {
			return false, peelTxError(n, err)
		}
	}
	done = true
	s.planned(next)
	return true, nil
}

// peelTxError is the client's error for a peel that failed in its
// transaction (which goes on, rolled back to before the peel).
func peelTxError(n rewrite.Need, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55P03" {
		return &pgconn.PgError{Severity: "ERROR", Code: "55P03",
			Message: fmt.Sprintf("the query needs the %s onion of %s.%s peeled to %s, but another transaction holds a lock on the table", n.Kind, n.Table.Name, n.Column.Name, n.Layer),
			Hint:    "Retry once the other transaction has ended."}
	}
	if pe != nil {
		return pe
	}
	return fmt.Errorf("failed to peel the %s onion of %s.%s to %s: %w", n.Kind, n.Table.Name, n.Column.Name, n.Layer, err)
}

// releaseTxGates lets other sessions write the tables this session's
// transaction peeled, once the shared catalog shows how it ended. The
// caller holds s.mu.
func (s *session) releaseTxGatesLocked() {
	for _, g := range s.txGates {
		g.unlock()
	}
	s.txGates = nil
}

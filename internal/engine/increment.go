package engine

import (
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// newIncrements returns the columns an UPDATE increments (SET c = c + k)
// that the catalog as recorded does not mark as incremented (recorded:
// the shared catalog, or the session's own open transaction's).
func newIncrements(p *rewrite.UpdatePlan, recorded *catalog.Table) []catalog.ID {
	var ids []catalog.ID
	for _, h := range p.Holes {
		if h.Increment == 0 || slices.Contains(ids, h.Column.ID) {
			continue
		}
		incremented := false
		if recorded != nil {
			for _, c := range recorded.Columns {
				if c.ID == h.Column.ID {
					incremented = c.Incremented
				}
			}
		}
		if !incremented {
			ids = append(ids, h.Column.ID)
		}
	}
	return ids
}

// newIncrementsOf returns the columns of ids that t does not mark as
// incremented.
func newIncrementsOf(ids []catalog.ID, t *catalog.Table) []catalog.ID {
	var out []catalog.ID
	for _, id := range ids {
		if !slices.ContainsFunc(t.Columns, func(c catalog.Column) bool { return c.ID == id && c.Incremented }) {
			out = append(out, id)
		}
	}
	return out
}

// withIncremented returns a copy of t with ids marked incremented.
func withIncremented(t *catalog.Table, ids []catalog.ID) *catalog.Table {
	out := t.Clone()
	for i := range out.Columns {
		if slices.Contains(ids, out.Columns[i].ID) {
			out.Columns[i].Incremented = true
		}
	}
	return out
}

// recordedTable returns t as the catalog records it for this session:
// in its open transaction's DDL, else in the shared copy (without the
// increment intents lookup adds).
func (s *session) recordedTable(t *catalog.Table) *catalog.Table {
	s.mu.Lock()
	tc := s.txCat
	s.mu.Unlock()
	if tc == nil {
		tc = s.e.cat.snapshot()
	}
	if rt := tc.TableByID(t.ID); rt != nil {
		return rt
	}
	return nil
}

// markIncrements returns the catalog change that records the first
// increment of columns ids of t, for the incrementing statement to run
// in its own transaction (pgonion.apply_change), so that the mark
// commits or rolls back with the rows it is about. Until this session's
// transaction has ended, every proxy treats the columns as incremented
// (an intent, lease.go): sessions that cannot see the mark yet must not
// compare the stale onions. "" when the catalog already records the
// increments.
func (s *session) markIncrements(t *catalog.Table, ids []catalog.ID) (string, error) {
	if rt := s.recordedTable(t); rt != nil && len(newIncrementsOf(ids, rt)) == 0 {
		return "", nil // marks are never taken back: no need to ask the server
	}
	base, err := s.ddlBase()
	if err != nil {
		return "", err
	}
	cur := base.TableByID(t.ID)
	if cur == nil {
		return "", &pgconn.PgError{Severity: "ERROR", Code: "40001",
			Message: fmt.Sprintf("table %s.%s changed while the UPDATE was planned", t.Schema, t.Name), Hint: "Run the UPDATE again."}
	}
	marked := withIncremented(cur, ids)
	todo := newIncrementsOf(ids, cur)
	if len(todo) == 0 {
		return "", nil
	}
	for _, id := range todo {
		if err := s.intend(t.Schema, t.Name, &id); err != nil {
			return "", err
		}
	}
	body, next, err := catalog.MarkIncrementedSQL(s.e.macKey(), base, marked)
	if err != nil {
		return "", err
	}
	s.planned(next)
	s.e.log.Info("first increment of encrypted columns: they are marked in the same transaction", "table", t.Schema+"."+t.Name, "columns", len(todo))
	return body, nil
}

// checkIncremented refuses a statement planned before one of the columns
// it compares was incremented on the server (a prepared statement bound
// later): its comparisons would miss the rows whose Eq and Ord cells the
// increments made NULL.
//
// A statement that reads such a column without the Add onion (its
// projection was planned before) is refused too: it would read NULL.
func (e *Engine) checkIncremented(needs []rewrite.Need, proj *projection) error {
	snap := e.cat.snapshot()
	if !snap.AnyIncremented() && e.cat.nIncrementing.Load() == 0 {
		// No column is or is becoming incremented (the default policy
		// has no Add onion): nothing to look up at every Bind.
		return nil
	}
	for _, n := range needs {
		if c := snap.ColumnByID(n.Column.ID); c != nil && (c.Incremented || e.cat.beingIncremented(c.ID)) && !n.Column.Incremented {
			return rewrite.Refusal("comparing encrypted column %s.%s is not supported: UPDATE ... SET %s = %s + k ran on the server after this statement was prepared, so only its Add onion is current", n.Table.Name, n.Column.Name, n.Column.Name, n.Column.Name)
		}
	}
	for _, x := range proj.projected() {
		if c := snap.ColumnByID(x.cat.ID); c != nil && (c.Incremented || e.cat.beingIncremented(c.ID)) && !x.cat.Incremented {
			return rewrite.Refusal("reading encrypted column %s.%s with a statement prepared before UPDATE ... SET %s = %s + k ran on the server is not supported: prepare it again", x.table, x.cat.Name, x.cat.Name, x.cat.Name)
		}
	}
	return nil
}

// projected returns the encrypted columns a projection reads.
func (p *projection) projected() []*encrypted {
	if p == nil {
		return nil
	}
	var out []*encrypted
	for _, c := range p.cols {
		if c.x != nil {
			out = append(out, c.x)
		}
	}
	return out
}

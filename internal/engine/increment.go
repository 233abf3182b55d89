package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// newIncrements returns the columns an UPDATE increments (SET c = c + k)
// that the catalog does not yet mark as incremented.
func newIncrements(p *rewrite.UpdatePlan, live *catalog.Table) []catalog.ID {
	var ids []catalog.ID
	for _, h := range p.Holes {
		if h.Increment == 0 || slices.Contains(ids, h.Column.ID) {
			continue
		}
		incremented := false
		if live != nil {
			for _, c := range live.Columns {
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

// checkIncremented refuses a statement planned before one of the columns
// it compares was incremented on the server (a prepared statement bound
// later): its comparisons would miss the rows whose Eq and Ord cells the
// increments made NULL.
//
// A statement that reads such a column without the Add onion (its
// projection was planned before) is refused too: it would read NULL.
func (e *Engine) checkIncremented(needs []rewrite.Need, read []*encrypted) error {
	snap := e.cat.snapshot()
	for _, n := range needs {
		if c := snap.ColumnByID(n.Column.ID); c != nil && c.Incremented && !n.Column.Incremented {
			return rewrite.Refusal("comparing encrypted column %s.%s is not supported: UPDATE ... SET %s = %s + k ran on the server after this statement was prepared, so only its Add onion is current", n.Table.Name, n.Column.Name, n.Column.Name, n.Column.Name)
		}
	}
	for _, x := range read {
		if c := snap.ColumnByID(x.cat.ID); c != nil && c.Incremented && !x.cat.Incremented {
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

// markIncremented records in the catalog, before the first UPDATE ... SET
// c = c + k on a column runs, that the column's Eq and Ord onions may be
// stale from now on (catalog.Column.Incremented): every proxy then reads
// the column's values from the Add onion where needed and refuses
// comparisons on it. Like a peel, it is one transaction under the table's
// peel lock; marking a column that is already marked does nothing.
func (e *Engine) markIncremented(ctx context.Context, t *catalog.Table, ids []catalog.ID) error {
	pc, err := e.work.Acquire(ctx)
	if err != nil {
		return workError(fmt.Sprintf("record an increment of %s", t.Name), err)
	}
	defer pc.Release()
	err = pgx.BeginFunc(ctx, pc.Conn(), func(tx pgx.Tx) error {
		if err := lockTableCatalog(ctx, tx, t.ID); err != nil {
			return err
		}
		snap, err := catalog.Load(ctx, tx, e.macKey)
		if err != nil {
			return err
		}
		cur := snap.Table(t.Schema, t.Name)
		if cur == nil || cur.ID != t.ID {
			return fmt.Errorf("table %s.%s is not in the catalog yet (or changed): run the UPDATE once the transaction that created it has committed", t.Schema, t.Name)
		}
		updated := copyTable(cur)
		changed := false
		for i := range updated.Columns {
			if c := &updated.Columns[i]; slices.Contains(ids, c.ID) && !c.Incremented {
				c.Incremented, changed = true, true
			}
		}
		if !changed {
			return nil
		}
		return catalog.UpdateTable(ctx, tx, e.macKey, updated)
	})
	if err != nil {
		return fmt.Errorf("failed to record an increment of %s: %w", t.Name, err)
	}
	if err := e.cat.refresh(ctx); err != nil {
		return err
	}
	e.log.Info("column incremented on the server: reads use its Add onion, comparisons are refused", "table", t.Schema+"."+t.Name, "columns", len(ids))
	return nil
}

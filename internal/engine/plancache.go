package engine

import (
	"fmt"

	"github.com/pgonion/pgonion/internal/wire"
)

// A session's plans of the extended protocol, by statement text and
// declared parameter types: a client that Parses the same statement
// again (an unnamed statement at each execution, as pgbench -M extended,
// psycopg and pgjdbc's first executions do) gets the plan made the
// first time instead of a new one, while the catalog stays at the
// version the plan was made at. A plan made inside a transaction that
// changed the catalog (txCat), or whose planning changed it (a peel), is
// not kept: it belongs to that transaction or that version.

// planCacheSize bounds the plans one session keeps; beyond it the cache
// starts again empty.
const planCacheSize = 256

type planKey struct {
	sql  string
	oids string
}

type cachedPlan struct {
	version int64
	st      wire.Statement
	tables  []string
}

func newPlanKey(sql string, oids []uint32) planKey {
	return planKey{sql: sql, oids: fmt.Sprint(oids)}
}

// cachedStatement returns a copy of the statement planned for sql and
// oids at the catalog's current version, with its tables counted in
// flight as planning would have counted them (use); false when there is
// none.
func (s *session) cachedStatement(k planKey) (*wire.Statement, bool) {
	s.mu.Lock()
	c, ok := s.plans[k]
	pending := s.txCat != nil
	s.mu.Unlock()
	if !ok || pending || c.version != s.e.cat.snapshot().Version {
		return nil, false
	}
	if s.e.cat.broken.Load() != nil || !s.e.cat.trusted() {
		// Planning again checks the catalog with the server (and
		// refuses while it fails verification), as passesThrough does.
		return nil, false
	}
	s.useAll(c.tables)
	// use may have waited for a switch of a table to end: then the
	// catalog has moved on.
	if c.version != s.e.cat.snapshot().Version {
		return nil, false
	}
	st := c.st
	s.e.plansReused.Add(1)
	return &st, true
}

// PlansReused returns how many Parses a session's plan cache answered.
func (e *Engine) PlansReused() int64 { return e.plansReused.Load() }

// keepStatement keeps st, planned for k at catalog version version over
// tables, unless the catalog has changed since or the transaction has
// changes of its own.
func (s *session) keepStatement(k planKey, version int64, st *wire.Statement, tables []string) {
	if s.e.cat.snapshot().Version != version {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.txCat != nil {
		return
	}
	if s.plans == nil || len(s.plans) >= planCacheSize {
		s.plans = map[planKey]*cachedPlan{}
	}
	s.plans[k] = &cachedPlan{version: version, st: *st, tables: tables}
}

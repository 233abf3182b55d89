package engine

import (
	"context"
	"sync"
	"time"
)

// Statements in flight per table, and the acknowledgement of a switch.
//
// A rewriter (package recrypt) switching a table to its new form records
// a switch intent and waits until every proxy has acknowledged it, then
// locks the table and swaps the forms. A statement planned with the old
// form that reached the server after that would fail there, or (an INSERT
// without a column list that passed through) put its values into the new
// form's columns. So a proxy acknowledges a switch intent only once no
// statement it planned with the old form is unanswered: from loading the
// intent it holds new statements on the table (they are planned once the
// switch is done, with the new form), and it waits for those in flight.
// A statement of a transaction that already holds the table is not held
// (the switch's lock waits for that transaction instead), nor is one of a
// session with an earlier statement on the table unanswered (a pipeline:
// the acknowledgement waits for both).

// switchDrain bounds the wait for a table's statements in flight before a
// switch intent is acknowledged anyway (a statement stuck behind a lock
// must not stall the switch for ever).
const switchDrain = 3 * time.Second

// enter counts one statement on table key (schema.name) as in flight,
// unless a switch of the table is under way and force is false.
func (c *catalogCache) enter(key string, force bool) bool {
	c.intentMu.Lock()
	defer c.intentMu.Unlock()
	if c.switching[key] && !force {
		return false
	}
	c.inUse[key]++
	return true
}

// exit ends what enter counted.
func (c *catalogCache) exit(key string) {
	c.intentMu.Lock()
	defer c.intentMu.Unlock()
	if c.inUse[key]--; c.inUse[key] <= 0 {
		delete(c.inUse, key)
	}
}

// noteSwitchesLocked starts the acknowledgement of the switch intents not
// seen before (live maps intent number to table) and forgets those gone.
// The caller holds intentMu and has set switching.
func (c *catalogCache) noteSwitchesLocked(live map[int64]string) {
	for n := range c.switchN {
		if _, ok := live[n]; !ok {
			delete(c.switchN, n)
			delete(c.unacked, n)
		}
	}
	for n, key := range live {
		if _, ok := c.switchN[n]; ok {
			continue
		}
		c.switchN[n] = key
		c.unacked[n] = true
		go c.drain(n, key)
	}
}

// drain acknowledges switch intent n once table key has no statement in
// flight (or after switchDrain), and renews the lease at once to say so.
func (c *catalogCache) drain(n int64, key string) {
	deadline := time.Now().Add(switchDrain)
	for {
		c.intentMu.Lock()
		done := c.inUse[key] == 0 || !c.unacked[n] || time.Now().After(deadline)
		if done {
			delete(c.unacked, n)
		}
		c.intentMu.Unlock()
		if done {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if c.life == nil || c.life.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.life, leaseRenew)
	defer cancel()
	if err := c.renew(ctx); err != nil && c.life.Err() == nil {
		c.log.Warn("acknowledging a table's switch failed; the lease's renewal will", "table", key, "err", err)
	}
}

// ackedLocked is the newest intent number this proxy acknowledges: the
// newest it loaded, short of any switch intent it has not acknowledged
// yet. The caller holds intentMu.
func (c *catalogCache) ackedLocked() int64 {
	seen := c.intentsSeen
	for n := range c.unacked {
		seen = min(seen, n-1)
	}
	return seen
}

// use counts one statement of this session on table key as in flight
// until the server has answered it, or release is called. Unless the statement must not wait
// (see above), it first waits for a switch of the table under way to end,
// at most switchTimeout.
func (s *session) use(key string) (release func()) {
	s.mu.Lock()
	inBlock := s.lastStatus == 'T' || s.lastStatus == 'E'
	force := s.using[key] > 0 || (inBlock && s.txTables[key])
	s.mu.Unlock()
	if !s.e.cat.enter(key, force) {
		ctx, cancel := context.WithTimeout(context.Background(), switchTimeout)
		for !s.e.cat.enter(key, ctx.Err() != nil) {
			s.e.cat.awaitSwitch(ctx, key)
		}
		cancel()
	}
	if s.deferFn == nil {
		s.e.cat.exit(key) // no wire session (tests planning directly)
		return func() {}
	}
	s.mu.Lock()
	if s.using == nil {
		s.using, s.txTables = map[string]int{}, map[string]bool{}
	}
	s.using[key]++
	s.txTables[key] = true
	s.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			s.mu.Lock()
			if s.using[key]--; s.using[key] <= 0 {
				delete(s.using, key)
			}
			s.mu.Unlock()
			s.e.cat.exit(key)
		})
	}
	s.deferFn(release)
	return release
}

// releasePlanned ends the counts the statement being planned took (use),
// before it waits for a rewrite of its tables (a re-keying), which would
// otherwise wait for it; planning it again takes them again.
func (s *session) releasePlanned() {
	for _, f := range s.planReleases {
		f()
	}
	s.planReleases, s.planKeys = nil, nil
}

// useAll is use for each of keys.
func (s *session) useAll(keys []string) {
	for _, k := range keys {
		s.use(k)
	}
}

package wire

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// sideCacheSize bounds the statements a session keeps prepared for the
// proxy's own statements; past it they are parsed at each use.
const sideCacheSize = 256

// sideCache are the statements the proxy runs ahead of the client's
// (SideQuery) that stay prepared on the server connection, by SQL and
// parameter types: a read-modify-write's read or the clock query runs at
// every Bind of the client's statement, and parsing it each time was
// about a third of its cost on the server. A statement is prepared the
// second time it runs: one with the client's constants in its text (the
// simple protocol's) seldom runs twice. Used by clientToServer only.
type sideCache struct {
	epoch   uint64              // the Replanner's, when the entries were prepared
	names   map[string]string   // statement name by key
	seen    map[string]struct{} // keys run once, not prepared
	closing []string            // prepared, no longer wanted: closed before the next
	next    int
}

// sideKey identifies a statement by its text and parameter types.
func sideKey(sql string, oids []uint32) string {
	b := make([]byte, 0, len(sql)+1+4*len(oids))
	b = append(b, sql...)
	b = append(b, 0)
	for _, o := range oids {
		b = binary.BigEndian.AppendUint32(b, o)
	}
	return string(b)
}

// sideStatementFor returns the name of q's prepared statement and
// whether it must be parsed first, or "" when q is not to stay prepared
// (the cache is full). Call only where nothing of the client's is in
// flight: the server must have run whatever DISCARD ALL or DEALLOCATE
// ALL the client sent before.
func (ss *session) sideStatementFor(q SideQuery) (name string, parse bool) {
	c := &ss.sides
	epoch := uint64(0)
	if rp, ok := ss.ic.(Replanner); ok {
		epoch = rp.PlanEpoch()
	}
	ss.sidesLostMu.Lock()
	for _, n := range ss.sidesLost {
		for k, v := range c.names {
			if v == n {
				delete(c.names, k)
			}
		}
	}
	ss.sidesLost = nil
	ss.sidesLostMu.Unlock()
	switch {
	case ss.sidesGone.Swap(false):
		// The client's DISCARD ALL or DEALLOCATE ALL closed them.
		c.names, c.closing = nil, nil
	case epoch != c.epoch:
		// A catalog change may change what a statement's text means
		// (a column's type): prepare again.
		for _, n := range c.names {
			c.closing = append(c.closing, n)
		}
		c.names = nil
	}
	c.epoch = epoch
	key := sideKey(q.SQL, q.ParamOIDs)
	if n, ok := c.names[key]; ok {
		return n, false
	}
	if _, again := c.seen[key]; !again {
		if c.seen == nil || len(c.seen) >= sideCacheSize {
			c.seen = map[string]struct{}{}
		}
		c.seen[key] = struct{}{}
		return "", true
	}
	if len(c.names) >= sideCacheSize {
		return "", true
	}
	c.next++
	return "pgonion_side_" + strconv.Itoa(c.next), true
}

// sidePrepared records that name was parsed for q (its ParseComplete
// arrived), so that later uses bind it.
func (ss *session) sidePrepared(q SideQuery, name string) {
	if ss.sides.names == nil {
		ss.sides.names = map[string]string{}
	}
	ss.sides.names[sideKey(q.SQL, q.ParamOIDs)] = name
}

// takeClosing returns Close messages for the statements no longer
// wanted, and forgets them.
func (ss *session) takeClosing() []encoder {
	var out []encoder
	for _, n := range ss.sides.closing {
		out = append(out, &pgproto3.Close{ObjectType: 'S', Name: n})
	}
	ss.sides.closing = nil
	return out
}

// closesPrepared reports whether a command tag says the server closed
// every prepared statement of the session.
func closesPrepared(tag []byte) bool {
	return bytes.HasPrefix(tag, []byte("DISCARD ALL")) || bytes.HasPrefix(tag, []byte("DEALLOCATE ALL"))
}

// boundStatement returns the messages that prepare the statement of a
// bound Query (QueryPlan.Bound) before its Bind, and sets r.parsed to
// the statement to bind. Its statement stays prepared as a side
// statement's does, from its second run, where nothing of the client's
// is in flight and its transaction has not failed (a Parse would fail
// there).
func (ss *session) boundStatement(r *request, q SideQuery) []encoder {
	name, parse := "", true
	key := sideKey(q.SQL, q.ParamOIDs)
	r.timed, r.sentAt = key, time.Now()
	if ss.q.len() == 0 && ss.txStatus.Load() != 'E' && !ss.slow.has(key) {
		name, parse = ss.sideStatementFor(q)
	}
	var msgs []encoder
	if name != "" {
		msgs = ss.takeClosing()
	}
	if parse {
		msgs = append(msgs, &pgproto3.Parse{Name: name, Query: q.SQL, ParameterOIDs: q.ParamOIDs})
		if name != "" {
			// Taken as prepared now; lostSide undoes it if the Parse fails.
			ss.sidePrepared(q, name)
		}
	}
	r.parsed, r.parsing = name, parse && name != ""
	return msgs
}

// lostSide records that the Parse of side statement name failed, so
// that it is parsed again at its next use.
func (ss *session) lostSide(name string) {
	ss.sidesLostMu.Lock()
	ss.sidesLost = append(ss.sidesLost, name)
	ss.sidesLostMu.Unlock()
}

// slowAfter is how long a client's statement may take, from the proxy's
// sending it to the server's ReadyForQuery, and still be kept prepared
// for it (boundStatement, prepareUnnamed): past it, parsing is a small
// part of its cost, and the server plans it for its values at each run
// as it did the client's literals or unnamed statement (a named
// statement may get a generic plan after five runs, which made the
// TPC-H-derived Q8 and Q5 1.3-1.8x slower).
const slowAfter = 10 * time.Millisecond

// slowRuns is how many runs in a row past slowAfter make a statement
// slow. One is not enough: a point UPDATE that waited for a row lock
// once was parsed and planned at every run after it (150 µs each for a
// read-modify-write's UPDATE under pgbench tpcb-like). A statement slow
// by its own work is slow at every run, and a named statement keeps
// custom plans for its first five.
const slowRuns = 2

// slowSet holds the keys (sideKey) of the statements that took longer
// than slowAfter, with how many runs in a row did: written by
// serverToClient, read by clientToServer.
type slowSet struct {
	mu   sync.Mutex
	keys map[string]int
}

// has reports whether the statement key is slow.
func (s *slowSet) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[key] >= slowRuns
}

// timed records how long the statement key took since start.
func (s *slowSet) timed(key string, start time.Time) {
	slow := time.Since(start) > slowAfter
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slow {
		delete(s.keys, key) // a no-op on the nil map of a session with none
		return
	}
	if s.keys == nil || len(s.keys) >= sideCacheSize {
		s.keys = map[string]int{}
	}
	s.keys[key]++
}

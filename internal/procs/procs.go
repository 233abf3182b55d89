// Package procs sizes the Go scheduler (GOMAXPROCS) to the proxy's load.
//
// With more than one P, Go's scheduler moves a lone session's two
// goroutines (one reading the client, one the server) between threads,
// and so between CPUs, at nearly every wake-up: through the pass-through
// at one client (pgbench -S -M prepared, 2 cores), 0.64 CPU migrations a
// transaction with two Ps against none with one; over five alternating
// rounds, median latency 0.174 against 0.162 ms and proxy CPU 64 against
// 60 µs a transaction. Several sessions, or one session's parallel
// work, need every P: with one P, four clients got 0.77-0.87 of the
// throughput.
//
// So once Adapt is called, the process runs on one P while at most one
// client session is open (Session) and no parallel work asks for more
// (Claim), and on all of them (Full) otherwise. It goes up at once and
// down only after a second without a reason to stay up, so sessions that
// come and go do not stop the world at each connection.
package procs

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// lowerAfter is how long the reasons for every P must be gone before the
// governor goes back to one.
const lowerAfter = time.Second

// governor decides the number of Ps from the open sessions and claims.
type governor struct {
	full int
	set  func(n int)                  // runtime.GOMAXPROCS, or a test's recorder
	wait func(f func()) (stop func()) // runs f after lowerAfter, unless stopped

	mu       sync.Mutex
	sessions int
	claims   int
	cur      int
	stop     func() // the pending lowering, or nil
	pending  int    // which lowering is pending: a stopped one that ran anyway does nothing
}

func newGovernor(full int, set func(int), wait func(func()) func()) *governor {
	g := &governor{full: full, set: set, wait: wait, cur: full}
	g.mu.Lock()
	g.update(true)
	g.mu.Unlock()
	return g
}

// update sets the number of Ps the sessions and claims call for: more at
// once, fewer at once only when now is set (else after lowerAfter).
// g.mu is held.
func (g *governor) update(now bool) {
	want := 1
	if g.sessions > 1 || g.claims > 0 {
		want = g.full
	}
	switch {
	case want > g.cur:
		g.cancel()
		g.cur = want
		g.set(want)
	case want < g.cur && now:
		g.cur = want
		g.set(want)
	case want < g.cur && g.stop == nil:
		g.pending++
		mine := g.pending
		g.stop = g.wait(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.pending != mine || g.stop == nil {
				return
			}
			g.stop = nil
			g.update(true)
		})
	case want == g.cur:
		g.cancel()
	}
}

// cancel stops the pending lowering, if any. g.mu is held.
func (g *governor) cancel() {
	if g.stop != nil {
		g.stop()
		g.stop = nil
		g.pending++
	}
}

// add changes the count *n by d and returns a function that undoes it
// once, however often it is called.
func (g *governor) add(n *int, d int) func() {
	g.mu.Lock()
	*n += d
	g.update(false)
	g.mu.Unlock()
	var done atomic.Bool
	return func() {
		if done.Swap(true) {
			return
		}
		g.mu.Lock()
		*n -= d
		g.update(false)
		g.mu.Unlock()
	}
}

var std atomic.Pointer[governor]

// Adapt makes GOMAXPROCS follow the load from now on, between 1 and its
// value now, and reports whether it does: not when the GOMAXPROCS
// environment variable is set (the operator chose) or there is one P
// anyway. Call it once, before sessions start.
func Adapt() bool {
	full := runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") != "" || full < 2 || std.Load() != nil {
		return false
	}
	wait := func(f func()) func() {
		t := time.AfterFunc(lowerAfter, f)
		return func() { t.Stop() }
	}
	std.Store(newGovernor(full, func(n int) { runtime.GOMAXPROCS(n) }, wait))
	return true
}

// Full is the number of Ps parallel work may use while it holds a Claim:
// GOMAXPROCS as it was when Adapt was called, or as it is without Adapt.
func Full() int {
	if g := std.Load(); g != nil {
		return g.full
	}
	return runtime.GOMAXPROCS(0)
}

// Session counts an open client session until done is called.
func Session() (done func()) {
	if g := std.Load(); g != nil {
		return g.add(&g.sessions, 1)
	}
	return func() {}
}

// Claim asks for Full Ps until release is called: for work spread over
// Full goroutines, which one P would run one at a time.
func Claim() (release func()) {
	if g := std.Load(); g != nil {
		return g.add(&g.claims, 1)
	}
	return func() {}
}

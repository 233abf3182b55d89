package wire_test

import (
	"context"
	"net"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/wire"
)

// deferInterceptor calls SessionInfo.Defer for statements marked
// /*defer:NAME*/ (at Query, or at Bind for the extended protocol) and
// records when each deferred function runs.
type deferInterceptor struct {
	defer_ func(func())
	rec    *deferRecord
}

type deferRecord struct {
	mu  sync.Mutex
	ran []string
}

func (r *deferRecord) add(name string) {
	r.mu.Lock()
	r.ran = append(r.ran, name)
	r.mu.Unlock()
}

func (r *deferRecord) has(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.ran, name)
}

func (r *deferRecord) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.ran {
		if s == name {
			n++
		}
	}
	return n
}

var deferMark = regexp.MustCompile(`/\*defer:(\w+)\*/`)

func (d *deferInterceptor) later(name string) {
	d.defer_(func() { d.rec.add(name) })
}

func (d *deferInterceptor) Query(sql string) (*wire.QueryPlan, error) {
	m := deferMark.FindStringSubmatch(sql)
	if m == nil {
		return nil, nil
	}
	d.later(m[1])
	return &wire.QueryPlan{SQL: sql}, nil
}

func (d *deferInterceptor) Parse(name, sql string, oids []uint32) (*wire.Statement, error) {
	m := deferMark.FindStringSubmatch(sql)
	if m == nil {
		return nil, nil
	}
	return &wire.Statement{SQL: sql, Bind: func(*pgproto3.Bind) error {
		d.later(m[1])
		return nil
	}}, nil
}

// TestDeferRunsWhenAnswered: a function deferred while a statement is
// planned or bound runs once the server has answered that statement's
// Query or Sync, not before (a later pipelined statement keeps its own
// until its own Sync is answered), and runs when the session ends with
// the Sync never sent.
func TestDeferRunsWhenAnswered(t *testing.T) {
	rec := &deferRecord{}
	p := startProxy(t, func(c *wire.Config) {
		c.Interceptors = func(_ context.Context, info wire.SessionInfo) (wire.Interceptor, error) {
			return &deferInterceptor{defer_: info.Defer, rec: rec}, nil
		}
	})
	conn, err := net.Dial("tcp", p.addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fe := pgproto3.NewFrontend(conn, conn)
	send := func(msgs ...pgproto3.FrontendMessage) {
		t.Helper()
		for _, m := range msgs {
			fe.Send(m)
		}
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	untilRFQ := func() {
		t.Helper()
		for {
			m, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := m.(*pgproto3.ReadyForQuery); ok {
				return
			}
		}
	}
	send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "t", "database": p.backend.Database}})
	untilRFQ()

	// Simple protocol: the query sleeps, so the function must wait.
	send(&pgproto3.Query{String: "SELECT pg_sleep(0.3) /*defer:q*/"})
	time.Sleep(100 * time.Millisecond)
	if rec.has("q") {
		t.Fatal("deferred at Query ran before the query was answered")
	}
	untilRFQ()
	waitFor(t, 5*time.Second, "the Query's deferred function", func() bool { return rec.has("q") })

	// Extended protocol, two pipelined cycles: a's Sync is answered long
	// before b's statement ends.
	send(&pgproto3.Parse{Name: "a", Query: "SELECT 1 /*defer:a*/"}, &pgproto3.Bind{PreparedStatement: "a"}, &pgproto3.Execute{}, &pgproto3.Sync{},
		&pgproto3.Parse{Name: "b", Query: "SELECT pg_sleep(2) /*defer:b*/"}, &pgproto3.Bind{PreparedStatement: "b"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	untilRFQ()
	waitFor(t, 5*time.Second, "the first Sync's deferred function", func() bool { return rec.has("a") })
	if rec.has("b") {
		t.Fatal("deferred at the second Bind ran when the first Sync was answered")
	}
	untilRFQ()
	waitFor(t, 5*time.Second, "the second Sync's deferred function", func() bool { return rec.has("b") })

	// An error skips to the Sync; the function still runs, once.
	send(&pgproto3.Parse{Name: "e", Query: "SELECT 1/0 /*defer:e*/"}, &pgproto3.Bind{PreparedStatement: "e"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	untilRFQ()
	waitFor(t, 5*time.Second, "the failed statement's deferred function", func() bool { return rec.has("e") })

	// Bound, never synced: the session's end runs it.
	send(&pgproto3.Bind{PreparedStatement: "a"}, &pgproto3.Flush{})
	time.Sleep(100 * time.Millisecond)
	if rec.count("a") != 1 {
		t.Fatal("deferred at a Bind without Sync ran before the session ended")
	}
	conn.Close()
	waitFor(t, 5*time.Second, "the deferred function of an unsynced Bind at session end", func() bool { return rec.count("a") == 2 })
	for _, name := range []string{"q", "b", "e"} {
		if n := rec.count(name); n != 1 {
			t.Errorf("%s ran %d times, want once", name, n)
		}
	}
}

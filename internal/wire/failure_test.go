package wire_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/wire"
	"go.uber.org/goleak"
)

var execCommand = exec.CommandContext

func startupMessage(user, db string) []byte {
	b, _ := (&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": user, "database": db}}).Encode(nil)
	return b
}

// TestClientDisconnectMidQuery drops a client during pg_sleep: the proxy
// must cancel the statement and close the server session.
func TestClientDisconnectMidQuery(t *testing.T) {
	p := startProxy(t, nil)
	direct := p.connectDirect(t)
	c := p.connect(t)
	go func() { _, _ = c.Exec(context.Background(), "SELECT pg_sleep(60) /* vanishing-client */") }()
	waitFor(t, 20*time.Second, "the statement to start", func() bool {
		return countBackends(t, direct, "%vanishing-client%") == 1
	})
	// Close the TCP connection without a Terminate message.
	_ = c.PgConn().Conn().Close()
	waitFor(t, 20*time.Second, "the server session to end", func() bool {
		return countBackends(t, direct, "%vanishing-client%") == 0
	})
	waitFor(t, 10*time.Second, "the proxy session to end", func() bool { return p.srv.ActiveSessions() == 0 })
	// The proxy still serves.
	var one int
	if err := p.connect(t).QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
}

// TestBackendKilled terminates the server process of one session: its
// client gets an error, other clients carry on.
func TestBackendKilled(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, nil)
	victim, bystander := p.connect(t), p.connect(t)
	var pid int
	if err := victim.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := p.connectDirect(t).Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	var one int
	err := victim.QueryRow(ctx, "SELECT 1").Scan(&one)
	if err == nil {
		t.Fatal("query on a killed backend succeeded")
	}
	if err := bystander.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("other session broken: %v", err)
	}
	if err := p.connect(t).QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("new session broken: %v", err)
	}
	waitFor(t, 10*time.Second, "the dead session to be cleaned up", func() bool { return p.srv.ActiveSessions() == 2 })
}

// TestNoLeaks opens and ends sessions in every way a session can end and
// then checks that no server connection and no goroutine is left behind.
func TestNoLeaks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	p := startProxy(t, nil)
	direct := p.connectDirect(t)
	serverSessions := func() int {
		var n int
		if err := direct.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 20 {
		c := mustConnect(t, p.url("leaker"))
		switch i % 4 {
		case 0: // orderly close with Terminate
			c.Close(ctx)
		case 1: // TCP close while idle
			_ = c.PgConn().Conn().Close()
		case 2: // TCP close mid-statement
			go func() { _, _ = c.Exec(ctx, "SELECT pg_sleep(30)") }()
			time.Sleep(50 * time.Millisecond)
			_ = c.PgConn().Conn().Close()
		case 3: // server session killed
			var pid int
			if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				t.Fatal(err)
			}
			if _, err := direct.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
				t.Fatal(err)
			}
			_ = c.Ping(ctx)
			c.Close(ctx)
		}
	}
	waitFor(t, 20*time.Second, "all proxy sessions to end", func() bool { return p.srv.ActiveSessions() == 0 })
	waitFor(t, 20*time.Second, "all server sessions to end", func() bool { return serverSessions() == 0 })
	if err := p.srv.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGarbageInput sends malformed bytes of many kinds; each connection must
// be closed (or answered with an error), and a fresh client still works.
func TestGarbageInput(t *testing.T) {
	p := startProxy(t, func(c *wire.Config) { c.MaxMessageSize = 1 << 20 })
	be32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	startup := startupMessage("tester", p.backend.Database)
	cases := map[string][]byte{
		"empty":                      {},
		"short header":               {0, 0},
		"zero length":                be32(0),
		"length below minimum":       append(be32(4), be32(0)...),
		"huge startup length":        append(be32(0x7fffffff), be32(196608)...),
		"truncated startup":          startup[:len(startup)-3],
		"unknown protocol":           append(be32(8), be32(0x00020000)...),
		"protocol 4.0":               append(be32(8), be32(0x00040000)...),
		"startup without params end": append(append(be32(17), be32(196608)...), []byte("user\x00bob")...),
		"random bytes":               bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 100),
		"after startup: bad length":  append(startup, 'Q', 0, 0, 0, 1),
		"after startup: huge claim":  append(startup, 'Q', 0x7f, 0xff, 0xff, 0xff, 'S'),
		"after startup: over max":    append(startup, 'Q', 0, 0x20, 0, 0),
		"after startup: unknown":     append(startup, 'z', 0, 0, 0, 4),
		"after startup: truncated":   append(startup, 'Q', 0, 0, 0, 100, 'S', 'E'),
		"after startup: bad Parse":   append(startup, 'P', 0, 0, 0, 5, 'x'),
		"after startup: bad Bind":    append(startup, 'B', 0, 0, 0, 6, 0, 0, 'S', 0, 0, 0, 4),
	}
	for name, payload := range cases {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", p.addr.String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = conn.Write(payload)
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			// Read until the proxy closes the connection; it must not hang.
			var buf [4096]byte
			for {
				if _, err := conn.Read(buf[:]); err != nil {
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						t.Fatal("proxy kept a garbage connection open")
					}
					break
				}
			}
			var one int
			if err := p.connect(t).QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("fresh client after garbage: %v", err)
			}
		})
	}
	waitFor(t, 10*time.Second, "all garbage sessions to end", func() bool { return p.srv.ActiveSessions() == 0 })
}

// TestOversizedMessageGetsError: a message over --max-message-size ends the
// session with a protocol-violation error the client can read.
func TestOversizedMessageGetsError(t *testing.T) {
	p := startProxy(t, func(c *wire.Config) { c.MaxMessageSize = 1 << 16 })
	c := p.connect(t)
	_, err := c.Exec(context.Background(), "SELECT '"+strings.Repeat("x", 1<<17)+"'")
	if sqlState(err) != "08P01" || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("oversized query gave %v, want SQLSTATE 08P01", err)
	}
	var one int
	if err := p.connect(t).QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
}

// TestNegotiateProtocolVersion: a client asking for protocol 3.2 is told
// that the proxy speaks 3.0, and the session works.
func TestNegotiateProtocolVersion(t *testing.T) {
	p := startProxy(t, nil)
	conn, err := net.Dial("tcp", p.addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fe := pgproto3.NewFrontend(conn, conn)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: 3<<16 | 2, Parameters: map[string]string{
		"user": "tester", "database": p.backend.Database, "_pq_.test_option": "1"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	msg, err := fe.Receive()
	npv, ok := msg.(*pgproto3.NegotiateProtocolVersion)
	if err != nil || !ok || npv.NewestMinorProtocol != 0 || strings.Join(npv.UnrecognizedOptions, ",") != "_pq_.test_option" {
		t.Fatalf("got %#v, %v", msg, err)
	}
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
}

// TestShutdownDrains: Shutdown closes idle sessions at once with 57P01 and
// lets a session in a transaction commit first.
func TestShutdownDrains(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	p := startProxy(t, nil)
	idle, busy := p.connect(t), p.connect(t)
	if _, err := busy.Exec(ctx, "CREATE TABLE s (v int)"); err != nil {
		t.Fatal(err)
	}
	tx, err := busy.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO s VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.srv.Shutdown(sctx) }()

	// Shutdown runs in its goroutine: the idle session is closed once it
	// has begun (bounded wait; a query before that is answered).
	var one int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err = idle.QueryRow(ctx, "SELECT 1").Scan(&one)
		if err != nil || time.Now().After(deadline) {
			break
		}
	}
	if code := sqlState(err); err == nil || (code != "" && code != "57P01") {
		t.Fatalf("idle session after shutdown: %v", err)
	}
	// The transaction may still finish.
	if _, err := tx.Exec(ctx, "INSERT INTO s VALUES (2)"); err != nil {
		t.Fatalf("statement in a draining transaction: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit while draining: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	var n int
	if err := p.connectDirect(t).QueryRow(ctx, "SELECT count(*) FROM s").Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows after drain: %d %v", n, err)
	}
	if _, err := net.DialTimeout("tcp", p.addr.String(), time.Second); err == nil {
		t.Fatal("listener still open after Shutdown")
	}
	idle.Close(ctx)
	busy.Close(ctx)
}

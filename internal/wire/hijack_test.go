package wire_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/wire"
)

// stallingConn returns from its first writes only after a pause, as a
// loaded machine does when the writer is descheduled right after the
// system call.
type stallingConn struct {
	net.Conn
	pause  time.Duration
	stalls int // writes left to stall
}

func (c *stallingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if c.stalls > 0 {
		c.stalls--
		time.Sleep(c.pause)
	}
	return n, err
}

// TestSlowConnectKeepsFirstAnswer: when a write to the server takes longer
// than pgconn's slow-write threshold (15 ms) while the proxy connects,
// pgconn starts a background reader that may still be blocked in a read of
// the socket once the connection is handed over. It then swallows the
// answer to the client's first statement and the session hangs with both
// sockets empty (issue 19: one ORM run in six stopped at a new session's
// first Parse/Bind/Describe/Execute/Sync).
func TestSlowConnectKeepsFirstAnswer(t *testing.T) {
	p := startProxy(t, func(c *wire.Config) {
		dial := c.Backend.DialFunc
		c.Backend.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &stallingConn{Conn: conn, pause: 40 * time.Millisecond, stalls: 3}, nil
		}
	})
	for i := range 5 {
		func() {
			c := p.connectMode(t, "tester", pgx.QueryExecModeCacheStatement)
			defer c.Close(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var tz string
			err := c.QueryRow(ctx, "SELECT set_config('TimeZone', $1, false)", "Europe/Paris").Scan(&tz)
			if err != nil {
				t.Fatalf("connection %d: first statement: %v", i, err)
			}
			if tz != "Europe/Paris" {
				t.Fatalf("connection %d: set_config returned %q", i, tz)
			}
		}()
	}
}

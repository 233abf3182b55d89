package engine

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// clockColumn is the server's transaction start in microseconds since
// the Unix epoch, as text.
const clockColumn = "(extract(epoch FROM transaction_timestamp()) * 1000000)::int8::text"

// clockSQL reads the server's transaction and statement start times in
// microseconds since the Unix epoch.
const clockSQL = "SELECT " + clockColumn + ", (extract(epoch FROM statement_timestamp()) * 1000000)::int8::text"

// sessionClock reads the server's times through the session's statement
// ahead of the client's, held in the client's transaction (an implicit
// one outside a block) so that now() is that transaction's start. ahead
// says whether the statement may run statements ahead: in the simple
// protocol only the first of a query string (a later one could follow a
// COMMIT), at every Bind. The transaction's start needs no read when a
// statement the proxy ran earlier in the same transaction returned it
// (knownClock).
func (s *session) sessionClock(ahead bool) *exec.ServerClock {
	switch {
	case s.execQuery == nil:
		return exec.UnusableClock("outside a client session")
	case !ahead:
		return exec.UnusableClock("for a statement after the first of a query string")
	}
	return exec.NewServerClock(func() (int64, int64, error) {
		rows := &subqueryRows{}
		epoch := s.epochBefore()
		if err := s.execQuery(wire.SideQuery{SQL: clockSQL, Hold: true}, rows); err != nil {
			if errors.Is(err, wire.ErrExecUnavailable) {
				return 0, 0, rewrite.Refusal("the current time is computed by the proxy from the server's transaction start, which it reads ahead of the statement: in the extended protocol only as the first statement after a Sync, or in a transaction block")
			}
			return 0, 0, err
		}
		if rows.err != nil {
			return 0, 0, rows.err
		}
		if len(rows.rows) != 1 || len(rows.rows[0]) != 2 || rows.rows[0][0] == nil || rows.rows[0][1] == nil {
			return 0, 0, fmt.Errorf("engine: reading the server's clock: unexpected answer")
		}
		tx, err := parseClock(*rows.rows[0][0])
		if err != nil {
			return 0, 0, err
		}
		stmt, err := parseClock(*rows.rows[0][1])
		if err != nil {
			return 0, 0, err
		}
		s.txClock.note(epoch, tx)
		return tx, stmt, nil
	}).Knowing(s.knownTxTime)
}

// parseClock parses a time of clockSQL into microseconds since 2000.
func parseClock(text string) (int64, error) {
	t, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("engine: reading the server's clock: %w", err)
	}
	return t - exec.UnixToPG, nil
}

// knownClock is the start of a server transaction, read at a transaction
// epoch (wire.SessionInfo.TxEpoch). A read-modify-write's read returns it
// as well (withTxClock), so that a later now() of the same transaction
// (pgbench's INSERT after its UPDATEs) needs no round trip of its own.
type knownClock struct {
	epoch uint64
	tx    int64 // microseconds since 2000
	ok    bool
}

func (k *knownClock) note(epoch uint64, tx int64) {
	*k = knownClock{epoch: epoch, tx: tx, ok: true}
}

// epochBefore is the transaction epoch to note a time read by a statement
// sent after this call with. Read before the statement, it is at most the
// epoch the statement ran at: if the epoch is still the same later, the
// statement ran in the transaction of that moment.
func (s *session) epochBefore() uint64 {
	if s.txEpoch == nil {
		return 0
	}
	e, _ := s.txEpoch()
	return e
}

// knownTxTime returns the transaction start noted in txClock when the
// statement being planned will run in the same transaction: the epoch
// has not moved, and nothing the client sent that could end a
// transaction is unanswered.
func (s *session) knownTxTime() (int64, bool) {
	if !s.txClock.ok || s.txEpoch == nil {
		return 0, false
	}
	e, settled := s.txEpoch()
	if !settled || e != s.txClock.epoch {
		return 0, false
	}
	return s.txClock.tx, true
}

// withTxClock wraps a read so that it returns the transaction's start
// after its own columns; clockTail takes it off.
func withTxClock(sql string) string {
	return "SELECT *, " + clockColumn + " FROM (" + sql + ") pgonion_read"
}

// clockTail passes the rows of a read wrapped by withTxClock on to next
// without their last column, the transaction's start, which it notes in
// the session's txClock at the epoch given.
type clockTail struct {
	next  wire.ResultRewriter
	s     *session
	epoch uint64
}

func (c *clockTail) RowDescription(rd *pgproto3.RowDescription) error {
	if len(rd.Fields) == 0 {
		return fmt.Errorf("engine: a read with the server's clock returned no columns")
	}
	rd.Fields = rd.Fields[:len(rd.Fields)-1]
	return c.next.RowDescription(rd)
}

func (c *clockTail) DataRow(row *pgproto3.DataRow) error {
	n := len(row.Values)
	if n == 0 || row.Values[n-1] == nil {
		return fmt.Errorf("engine: a read with the server's clock returned no time")
	}
	if !c.s.txClock.ok || c.s.txClock.epoch != c.epoch {
		tx, err := parseClock(string(row.Values[n-1]))
		if err != nil {
			return err
		}
		c.s.txClock.note(c.epoch, tx)
	}
	row.Values = row.Values[:n-1]
	return c.next.DataRow(row)
}

// ReleasesAtSuspend implements wire.ReleasesAtSuspend as next does.
func (c *clockTail) ReleasesAtSuspend() bool {
	if _, ok := c.next.(wire.RowReleaser); !ok {
		return true
	}
	ra, ok := c.next.(wire.ReleasesAtSuspend)
	return ok && ra.ReleasesAtSuspend()
}

// Release implements wire.RowReleaser when next does.
func (c *clockTail) Release(atEnd bool) ([]*pgproto3.DataRow, error) {
	if rel, ok := c.next.(wire.RowReleaser); ok {
		return rel.Release(atEnd)
	}
	return nil, nil
}

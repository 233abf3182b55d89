package engine

import (
	"errors"
	"fmt"

	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// clockSQL reads the server's transaction and statement start times in
// microseconds since the Unix epoch.
const clockSQL = "SELECT (extract(epoch FROM transaction_timestamp()) * 1000000)::int8::text, (extract(epoch FROM statement_timestamp()) * 1000000)::int8::text"

// sessionClock reads the server's times through the session's statement
// ahead of the client's, held in the client's transaction (an implicit
// one outside a block) so that now() is that transaction's start. ahead
// says whether the statement may run statements ahead: in the simple
// protocol only the first of a query string (a later one could follow a
// COMMIT), at every Bind.
func (s *session) sessionClock(ahead bool) *exec.ServerClock {
	switch {
	case s.execQuery == nil:
		return exec.UnusableClock("outside a client session")
	case !ahead:
		return exec.UnusableClock("for a statement after the first of a query string")
	}
	return exec.NewServerClock(func() (int64, int64, error) {
		rows := &subqueryRows{}
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
		var tx, stmt int64
		if _, err := fmt.Sscan(*rows.rows[0][0], &tx); err != nil {
			return 0, 0, fmt.Errorf("engine: reading the server's clock: %w", err)
		}
		if _, err := fmt.Sscan(*rows.rows[0][1], &stmt); err != nil {
			return 0, 0, fmt.Errorf("engine: reading the server's clock: %w", err)
		}
		return tx - exec.UnixToPG, stmt - exec.UnixToPG, nil
	})
}

package engine

import (
	cryptorand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// The library's functions whose value is not a function of their
// arguments: the current time as PostgreSQL gives it (now() is the
// start of the server's transaction, statement_timestamp() of its
// statement), random values. The time functions read the server's
// clock (serverClock), so that values the proxy computes agree with the
// ones the server computes in the same transaction; clock_timestamp(),
// gen_random_uuid() and random() are the proxy's own.
//
// Time: now, transaction_timestamp, current_timestamp[(p)],
// statement_timestamp, clock_timestamp, localtimestamp[(p)],
// current_date, localtime[(p)]. Random: gen_random_uuid, random.

// serverClock is the server's transaction and statement start times,
// read once (fetch) when an expression first needs them.
type serverClock struct {
	fetch    func() (tx, stmt int64, err error)
	read     bool
	tx, stmt int64 // microseconds since 2000-01-01 UTC
	err      error
	unusable string // why fetch is nil, for the refusal
}

// times returns the server's times, reading them at the first call.
func (c *serverClock) times() (tx, stmt int64, err error) {
	if c == nil || c.fetch == nil {
		why := "here"
		if c != nil && c.unusable != "" {
			why = c.unusable
		}
		return 0, 0, rewrite.Refusal("the current time is computed by the proxy from the server's transaction start, which it cannot read %s", why)
	}
	if !c.read {
		c.tx, c.stmt, c.err = c.fetch()
		c.read = true
	}
	return c.tx, c.stmt, c.err
}

// clockSQL reads the server's transaction and statement start times in
// microseconds since the Unix epoch.
const clockSQL = "SELECT (extract(epoch FROM transaction_timestamp()) * 1000000)::int8::text, (extract(epoch FROM statement_timestamp()) * 1000000)::int8::text"

// unixToPG converts microseconds since 1970 to since 2000 (PostgreSQL's
// epoch).
const unixToPG = 946684800 * 1000000

// sessionClock reads the server's times through the session's statement
// ahead of the client's, held in the client's transaction (an implicit
// one outside a block) so that now() is that transaction's start. ahead
// says whether the statement may run statements ahead: in the simple
// protocol only the first of a query string (a later one could follow a
// COMMIT), at every Bind.
func (s *session) sessionClock(ahead bool) *serverClock {
	c := &serverClock{}
	switch {
	case s.execQuery == nil:
		c.unusable = "outside a client session"
		return c
	case !ahead:
		c.unusable = "for a statement after the first of a query string"
		return c
	}
	c.fetch = func() (int64, int64, error) {
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
		return tx - unixToPG, stmt - unixToPG, nil
	}
	return c
}

// roundTime rounds microseconds t to p fractional digits of a second,
// as a time or timestamp typmod does (half away from zero).
func roundTime(t int64, p int64) (int64, error) {
	if p < 0 {
		return 0, fmt.Errorf("precision %d must not be negative", p)
	}
	if p >= 6 {
		return t, nil
	}
	scale := int64(1)
	for range 6 - p {
		scale *= 10
	}
	if t >= 0 {
		return (t + scale/2) / scale * scale, nil
	}
	return -((-t + scale/2) / scale * scale), nil
}

var (
	tTimestamptz = onion.Type{Base: onion.Timestamptz}
	tTimestamp   = onion.Type{Base: onion.Timestamp}
	tTime        = onion.Type{Base: onion.Time}
	tUUID        = onion.Type{Base: onion.UUID}
)

// precision types a call with an optional integer precision argument.
func precision(name string, result onion.Type) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return optional(name, []onion.Type{tInt4}, 0, result)
}

// precisionOf is the rounding precision of a call: 6 without argument.
func precisionOf(a []aval) int64 {
	if len(a) == 0 {
		return 6
	}
	return a[0].i
}

func clockFuncs() map[string]*scalarFunc {
	txTime := func(ev *evaluator, a []aval, _ onion.Type) (aval, error) {
		tx, _, err := ev.clock.times()
		if err != nil {
			return aval{}, err
		}
		t, err := roundTime(tx, precisionOf(a))
		return aval{t: tTimestamptz, i: t}, err
	}
	local := func(ev *evaluator) (int64, error) {
		tx, _, err := ev.clock.times()
		if err != nil {
			return 0, err
		}
		l, _ := onion.LocalTime(tx, ev.env.TimeZone)
		return l, nil
	}
	return map[string]*scalarFunc{
		"now":                   {sig: fixed("now", nil, tTimestamptz), call: txTime, volatile: true},
		"transaction_timestamp": {sig: fixed("transaction_timestamp", nil, tTimestamptz), call: txTime, volatile: true},
		"current_timestamp":     {sig: precision("current_timestamp", tTimestamptz), call: txTime, volatile: true},
		"statement_timestamp": {sig: fixed("statement_timestamp", nil, tTimestamptz), volatile: true, call: func(ev *evaluator, _ []aval, _ onion.Type) (aval, error) {
			_, stmt, err := ev.clock.times()
			return aval{t: tTimestamptz, i: stmt}, err
		}},
		"clock_timestamp": {sig: fixed("clock_timestamp", nil, tTimestamptz), volatile: true, call: func(ev *evaluator, _ []aval, _ onion.Type) (aval, error) {
			return aval{t: tTimestamptz, i: time.Now().UnixMicro() - unixToPG}, nil
		}},
		"localtimestamp": {sig: precision("localtimestamp", tTimestamp), volatile: true, call: func(ev *evaluator, a []aval, _ onion.Type) (aval, error) {
			l, err := local(ev)
			if err != nil {
				return aval{}, err
			}
			t, err := roundTime(l, precisionOf(a))
			return aval{t: tTimestamp, i: t}, err
		}},
		"current_date": {sig: fixed("current_date", nil, tDate), volatile: true, call: func(ev *evaluator, _ []aval, _ onion.Type) (aval, error) {
			l, err := local(ev)
			return aval{t: tDate, i: floorDivInt(l, usPerDay)}, err
		}},
		"localtime": {sig: precision("localtime", tTime), volatile: true, call: func(ev *evaluator, a []aval, _ onion.Type) (aval, error) {
			l, err := local(ev)
			if err != nil {
				return aval{}, err
			}
			t, err := roundTime(floorMod(l, usPerDay), precisionOf(a))
			if t == usPerDay {
				t = 0 // time wraps at midnight
			}
			return aval{t: tTime, i: t}, err
		}},
		"gen_random_uuid": {sig: fixed("gen_random_uuid", nil, tUUID), volatile: true, call: func(*evaluator, []aval, onion.Type) (aval, error) {
			var u [16]byte
			if _, err := cryptorand.Read(u[:]); err != nil {
				return aval{}, err
			}
			u[6] = u[6]&0x0f | 0x40 // version 4
			u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
			return aval{t: tUUID, s: string(u[:])}, nil
		}},
		"random": {sig: fixed("random", nil, tFloat8), volatile: true, call: func(*evaluator, []aval, onion.Type) (aval, error) {
			return float8Val(rand.Float64()), nil
		}},
	}
}

// volatileExpr reports whether e calls a function whose value is not a
// function of its arguments (computed anew for each execution).
func volatileExpr(e *ir.Expr) bool {
	found := false
	ir.WalkExpr(e, func(x *ir.Expr) {
		if x.Kind == ir.ExprFunc {
			if fn := scalarFuncs[x.Func]; fn != nil && fn.volatile {
				found = true
			}
		}
	})
	return found
}

// planDefaults refuses a DEFAULT expression of t's (DefaultExpr) the
// proxy could not compute, when the table is created or altered rather
// than at each INSERT.
func planDefaults(t *catalog.Table, env onion.Env) error {
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.DefaultExpr == nil {
			continue
		}
		e, err := rewrite.DefaultExprOf(c)
		if err != nil {
			return err
		}
		ev := &evaluator{env: env, consts: map[*ir.Expr]aval{}}
		if bad := ev.plan(e); bad != nil {
			return rewrite.Refusal("DEFAULT of encrypted column %s.%s: %s", t.Name, c.Name, errMessage(bad))
		}
	}
	return nil
}

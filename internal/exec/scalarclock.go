package exec

import (
	cryptorand "crypto/rand"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
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

// ServerClock is the server's transaction and statement start times,
// read once (fetch) when an expression first needs them.
type ServerClock struct {
	fetch    func() (tx, stmt int64, err error)
	known    func() (tx int64, ok bool) // the transaction's start, if known without a read
	read     bool
	txRead   bool  // tx is set, by known or fetch
	tx, stmt int64 // microseconds since 2000-01-01 UTC
	err      error
	unusable string // why fetch is nil, for the refusal
}

// NewServerClock returns the clock fetch reads, at the first call of
// times.
func NewServerClock(fetch func() (tx, stmt int64, err error)) *ServerClock {
	return &ServerClock{fetch: fetch}
}

// Knowing returns c, which asks known for the transaction's start before
// it reads the server's times; known says whether it knows it.
func (c *ServerClock) Knowing(known func() (tx int64, ok bool)) *ServerClock {
	c.known = known
	return c
}

// UnusableClock returns a clock that cannot be read, why says where, for
// the refusal.
func UnusableClock(why string) *ServerClock { return &ServerClock{unusable: why} }

// Times returns the server's Times, reading them at the first call.
func (c *ServerClock) Times() (tx, stmt int64, err error) {
	if c == nil || c.fetch == nil {
		why := "here"
		if c != nil && c.unusable != "" {
			why = c.unusable
		}
		return 0, 0, rewrite.Refusal("the current time is computed by the proxy from the server's transaction start, which it cannot read %s", why)
	}
	if !c.read {
		c.tx, c.stmt, c.err = c.fetch()
		c.read, c.txRead = true, true
	}
	return c.tx, c.stmt, c.err
}

// TxTime returns the start of the server's transaction: known, else
// read with Times.
func (c *ServerClock) TxTime() (int64, error) {
	if c != nil && !c.txRead && c.fetch != nil && c.known != nil {
		if tx, ok := c.known(); ok {
			c.tx, c.txRead = tx, true
		}
	}
	if c != nil && c.txRead && c.err == nil {
		return c.tx, nil
	}
	tx, _, err := c.Times()
	return tx, err
}

// UnixToPG converts microseconds since 1970 to since 2000 (PostgreSQL's
// epoch).
const UnixToPG = 946684800 * 1000000

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
	return optional(name, []onion.Type{TypeInt4}, 0, result)
}

// precisionOf is the rounding precision of a call: 6 without argument.
func precisionOf(a []Value) int64 {
	if len(a) == 0 {
		return 6
	}
	return a[0].Int
}

func clockFuncs() map[string]*scalarFunc {
	txTime := func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
		tx, err := ev.Clock.TxTime()
		if err != nil {
			return Value{}, err
		}
		t, err := roundTime(tx, precisionOf(a))
		return Value{Type: tTimestamptz, Int: t}, err
	}
	local := func(ev *Evaluator) (int64, error) {
		tx, err := ev.Clock.TxTime()
		if err != nil {
			return 0, err
		}
		l, _ := onion.LocalTime(tx, ev.Env.TimeZone)
		return l, nil
	}
	return map[string]*scalarFunc{
		"now":                   {sig: fixed("now", nil, tTimestamptz), call: txTime, volatile: true},
		"transaction_timestamp": {sig: fixed("transaction_timestamp", nil, tTimestamptz), call: txTime, volatile: true},
		"current_timestamp":     {sig: precision("current_timestamp", tTimestamptz), call: txTime, volatile: true},
		"statement_timestamp": {sig: fixed("statement_timestamp", nil, tTimestamptz), volatile: true, call: func(ev *Evaluator, _ []Value, _ onion.Type) (Value, error) {
			_, stmt, err := ev.Clock.Times()
			return Value{Type: tTimestamptz, Int: stmt}, err
		}},
		"clock_timestamp": {sig: fixed("clock_timestamp", nil, tTimestamptz), volatile: true, call: func(ev *Evaluator, _ []Value, _ onion.Type) (Value, error) {
			return Value{Type: tTimestamptz, Int: time.Now().UnixMicro() - UnixToPG}, nil
		}},
		"localtimestamp": {sig: precision("localtimestamp", tTimestamp), volatile: true, call: func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
			l, err := local(ev)
			if err != nil {
				return Value{}, err
			}
			t, err := roundTime(l, precisionOf(a))
			return Value{Type: tTimestamp, Int: t}, err
		}},
		"current_date": {sig: fixed("current_date", nil, TypeDate), volatile: true, call: func(ev *Evaluator, _ []Value, _ onion.Type) (Value, error) {
			l, err := local(ev)
			return Value{Type: TypeDate, Int: floorDivInt(l, usPerDay)}, err
		}},
		"localtime": {sig: precision("localtime", tTime), volatile: true, call: func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
			l, err := local(ev)
			if err != nil {
				return Value{}, err
			}
			t, err := roundTime(floorMod(l, usPerDay), precisionOf(a))
			if t == usPerDay {
				t = 0 // time wraps at midnight
			}
			return Value{Type: tTime, Int: t}, err
		}},
		"gen_random_uuid": {sig: fixed("gen_random_uuid", nil, tUUID), volatile: true, call: func(*Evaluator, []Value, onion.Type) (Value, error) {
			var u [16]byte
			if _, err := cryptorand.Read(u[:]); err != nil {
				return Value{}, err
			}
			u[6] = u[6]&0x0f | 0x40 // version 4
			u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
			return Value{Type: tUUID, Str: string(u[:])}, nil
		}},
		"random": {sig: fixed("random", nil, TypeFloat8), volatile: true, call: func(*Evaluator, []Value, onion.Type) (Value, error) {
			return Float8Value(rand.Float64()), nil
		}},
	}
}

// VolatileExpr reports whether e calls a function whose value is not a
// function of its arguments (computed anew for each execution).
func VolatileExpr(e *ir.Expr) bool {
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

package engine

import (
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/exec"
)

// heldBudget bounds the memory one statement's result holds in the proxy
// (groups and their aggregate states, rows a sort holds): without it, one
// client could make the proxy hold a whole table. It counts approximate
// bytes; exceeding the limit fails the statement with 53200, and the
// session goes on. Safe for concurrent use (split execution folds in
// parallel).
type heldBudget struct {
	used     atomic.Int64
	limit    int64
	exceeded atomic.Pointer[pgconn.PgError] // set by the first charge past the limit
}

// newHeldBudget returns a budget of limit bytes; nil (no limit) for 0.
func newHeldBudget(limit int64) *heldBudget {
	if limit <= 0 {
		return nil
	}
	return &heldBudget{limit: limit}
}

// Bytes a held row or group costs beyond its values (slice headers, map
// entry, aggregate state).
const (
	heldRowOverhead   = 64
	heldValueOverhead = 24
)

// charge adds n bytes, failing once the limit is passed.
func (b *heldBudget) charge(n int) error {
	if b == nil {
		return nil
	}
	if b.used.Add(int64(n)) > b.limit {
		err := &pgconn.PgError{Severity: "ERROR", Code: "53200",
			Message: fmt.Sprintf("out of memory: the statement's result needs more than %d MB in the proxy", b.limit>>20),
			Detail:  "The proxy holds rows to group, sort or filter them when the server cannot (split execution over encrypted columns).",
			Hint:    "Narrow the query, or raise the proxy's --max-held-memory."}
		b.exceeded.CompareAndSwap(nil, err)
		return err
	}
	return nil
}

// err returns the error of the first charge past the limit, nil before:
// a rewriter whose workers charge checks it to fail at once, rather than
// at the end of the result.
func (b *heldBudget) err() error {
	if b == nil {
		return nil
	}
	if e := b.exceeded.Load(); e != nil {
		return e
	}
	return nil
}

// groupCost is the cost of a group holding the input values in, with
// aggs aggregate states.
func groupCost(in []exec.Value, aggs int) int {
	n := heldRowOverhead + aggs*heldRowOverhead
	for _, v := range in {
		n += heldValueOverhead + len(v.Str)
	}
	return n
}

// release gives n bytes back.
func (b *heldBudget) release(n int) {
	if b != nil {
		b.used.Add(-int64(n))
	}
}

// rowCost is the cost of holding vals.
func rowCost(vals [][]byte) int {
	n := heldRowOverhead
	for _, v := range vals {
		n += len(v) + heldValueOverhead
	}
	return n
}

package wire

import (
	"sync"
	"time"
)

// request is one client message awaiting the server's answer. The session's
// client-reading goroutine appends requests in the order it forwards the
// messages; the server-reading goroutine consumes them in the same order as
// the answers arrive, which is how an answer is tied to the statement or
// portal it belongs to.
type request struct {
	kind     byte // frontend message type: 'Q', 'F', 'P', 'B', 'D', 'E', 'C', 'S'; copyEnd for CopyDone/CopyFail; sideQuery for Exec
	describe byte // for 'D': 'S' (statement) or 'P' (portal)

	stmt    *Statement       // for 'D' of a statement
	copyIn  CopyInRewriter   // 'Q'/'E' starting a rewritten COPY FROM STDIN
	results []ResultRewriter // 'Q': per statement; 'D'/'E': one entry
	limit   *rowLimit        // 'E' of a portal whose rows the session hands out by its row limits
	refusal error            // replaces the server's error for a refused message; guarded by queue.mu once pushed
	hidden  bool             // 'P' or 'C' the proxy sent to replace a stale statement: its success is not for the client
	fail    error            // the proxy failed the request before the server answered: its answer becomes this error (set before push)
	bound   bool             // 'Q' sent in the extended protocol (QueryPlan.Bound): ParseComplete, BindComplete, CloseComplete and NoData are not for the client
	parsed  string           // for bound: the statement prepared with it and bound, or "" for the unnamed one
	parsing bool             // for bound: parsed names a statement it prepares
	timed   string           // 'Q' or 'S': the key of the statement timed until its ReadyForQuery (slowSet)
	sentAt  time.Time        // when that statement was sent
	parseOK bool             // for bound: its ParseComplete arrived (serverToClient only)
	// infallible marks a Parse of the empty query (prepareUnnamed): its
	// answer is ParseComplete even in a failed transaction, so a held
	// side query need not wait for it (execSideQuery).
	infallible bool

	// done runs when the answer to the request is complete (or the request
	// is dropped, or the session ends); guarded by queue.mu once pushed.
	done     []func()
	finished bool

	side *sideQueryState // for sideQuery
}

// copyEnd marks CopyDone/CopyFail from the client; it has no answer of its
// own but tells where Syncs sent during COPY FROM STDIN end (the server
// ignores those).
const copyEnd = 'c'

// sideQuery marks a Query the proxy sent itself (SessionInfo.Exec): its
// answer goes to the Interceptor, not to the client.
const sideQuery = 'x'

// abortQuery marks the Query the proxy sends to make the server's
// transaction block fail (session.abortPending); its answer is dropped.
const abortQuery = 'a'

// queue is a FIFO of requests shared by the two goroutines of a session.
type queue struct {
	mu    sync.Mutex
	items []*request
	head  int
	// emptied is closed when the queue next becomes empty (waitEmpty).
	emptied chan struct{}
}

// waitEmpty blocks until every request pushed so far is answered.
func (q *queue) waitEmpty() {
	for {
		q.mu.Lock()
		if q.head == len(q.items) {
			q.mu.Unlock()
			return
		}
		if q.emptied == nil {
			q.emptied = make(chan struct{})
		}
		ch := q.emptied
		q.mu.Unlock()
		<-ch
	}
}

func (q *queue) push(r *request) {
	q.mu.Lock()
	q.items = append(q.items, r)
	q.mu.Unlock()
}

// peek returns the oldest request that expects an answer, dropping copyEnd
// markers at the front; nil when none.
func (q *queue) peek() *request {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.head < len(q.items) && q.items[q.head].kind == copyEnd {
		q.popLocked()
	}
	if q.head == len(q.items) {
		return nil
	}
	return q.items[q.head]
}

func (q *queue) pop() {
	q.mu.Lock()
	q.popLocked()
	q.mu.Unlock()
}

func (q *queue) popLocked() {
	finish(q.items[q.head])
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
		if q.emptied != nil {
			close(q.emptied)
			q.emptied = nil
		}
	}
}

// skipToSync drops the requests before the next Sync: after an error in the
// extended protocol the server discards messages until Sync.
func (q *queue) skipToSync() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.head < len(q.items) && q.items[q.head].kind != 'S' {
		q.popLocked()
	}
}

// dropCopySyncs removes the Syncs the client sent during COPY FROM STDIN
// (between the request at the head and its copyEnd marker, which is removed
// too), because the server ignores them.
func (q *queue) dropCopySyncs() {
	q.mu.Lock()
	defer q.mu.Unlock()
	kept := q.items[:q.head+1]
	i := q.head + 1
	for ; i < len(q.items); i++ {
		r := q.items[i]
		if r.kind == copyEnd {
			i++
			break
		}
		if r.kind != 'S' {
			kept = append(kept, r)
		} else {
			finish(r)
		}
	}
	kept = append(kept, q.items[i:]...)
	for j := len(kept); j < len(q.items); j++ {
		q.items[j] = nil
	}
	q.items = kept
}

// finish runs r's done functions once; the caller holds queue.mu.
func finish(r *request) {
	if r.finished {
		return
	}
	r.finished = true
	for _, f := range r.done {
		f()
	}
	r.done = nil
}

// attach arranges for f to run when the answer to r is complete: at once
// if it already is.
func (q *queue) attach(r *request, f func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if r.finished {
		f()
		return
	}
	r.done = append(r.done, f)
}

// finishAll runs the done functions of every request still queued, when
// the session ends.
func (q *queue) finishAll() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range q.items[q.head:] {
		finish(r)
	}
}

// refuse sets the refusal of a request already in the queue (a COPY whose
// data the Interceptor rejected midway).
func (q *queue) refuse(r *request, err error) {
	q.mu.Lock()
	r.refusal = err
	q.mu.Unlock()
}

// refusalOf returns r's refusal.
func (q *queue) refusalOf(r *request) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return r.refusal
}

// runsNothing reports whether every request awaiting an answer only
// prepares, binds, describes or closes (true for none): none runs a
// statement or ends an implicit transaction.
func (q *queue) runsNothing() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range q.items[q.head:] {
		switch r.kind {
		case 'P', 'B', 'D', 'C':
		default:
			return false
		}
	}
	return true
}

// onlyInfallible reports whether every request awaiting an answer is
// infallible (true for none).
func (q *queue) onlyInfallible() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range q.items[q.head:] {
		if !r.infallible {
			return false
		}
	}
	return true
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head
}

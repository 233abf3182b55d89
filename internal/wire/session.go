package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Statements that make the server fail without running anything. A refused
// message is replaced by one of them, so the server's transaction state is
// what PostgreSQL would have after a failing statement; the server's error
// is then replaced by the refusal.
const (
	refusedSQL       = "pgonion refused this statement"
	abortSQL         = "DO $pgonion$BEGIN RAISE EXCEPTION 'a statement of this transaction failed in the pgonion proxy' USING ERRCODE = '25P02'; END$pgonion$"
	refusedStatement = "\x7fpgonion refused statement" // a prepared statement that never exists
)

// session relays one client connection to its backend connection. Two
// goroutines run it: clientToServer (which owns cr, bw, stmts and portals)
// and serverToClient (which owns br and cw). They share only the request
// queue and atomics.
type session struct {
	srv       *Server
	log       *slog.Logger
	key       uint64   // our BackendKeyData
	rawClient net.Conn // before TLS, for bookkeeping
	client    net.Conn
	cr        *msgReader
	cw        *bufio.Writer

	backend       net.Conn
	br            *msgReader
	bw            *bufio.Writer
	backendPID    uint32
	backendSecret []byte
	backendAddr   net.Addr
	serverParams  map[string]string

	ic      Interceptor
	stmts   map[string]*Statement   // prepared statements by name
	sources map[string]*stmtSource  // what each named statement was parsed from (with a Replanner)
	portals map[string]*boundPortal // portals that need rewriting
	q       queue

	// sideOK is set while the Interceptor may run statements ahead
	// (SessionInfo.Exec): during Query, and during a Parse that begins a
	// request cycle (clientToServer only).
	sideOK bool
	// cycleQuiet is set while the request cycle has only parsed and
	// described: a Bind may then run statements ahead (ExecQuery).
	cycleQuiet bool
	// inBind is set during Statement.Bind.
	inBind bool

	// COPY FROM STDIN in progress whose data is rewritten (clientToServer only).
	copyIn     CopyInRewriter
	copyReq    *request // the Query or Execute that started it
	copyFailed bool     // the rewriter refused; discard data until CopyDone/CopyFail
	copyChunk  []byte   // consecutive CopyData bodies joined, reused

	// row is the DataRow handed to ResultRewriters, and rowVals the
	// values slice it decodes into, reused for every row
	// (serverToClient only): allocating them per row made the garbage
	// collector a large share of the proxy's work on long results.
	row     pgproto3.DataRow
	rowVals [][]byte
	copyBuf []byte // CopyOutRow's, reused
	// divert keeps the rows of a portal run to completion for a limited
	// Execute instead of sending them (rowlimit.go; serverToClient only).
	divert *heldRows
	// cycleFailed is set from the server's error in an extended-protocol
	// request cycle until its ReadyForQuery: the server skips messages
	// until the cycle's Sync.
	cycleFailed atomic.Bool

	// deferred holds what the Interceptor asked to run once the current
	// request cycle is answered (SessionInfo.Defer); it moves to the next
	// Query or Sync request (clientToServer only).
	deferred []func()

	// failed is set when a statement of the current request cycle failed
	// in the proxy: the rest of the answer is discarded until
	// ReadyForQuery (serverToClient only).
	failed bool
	// cancelling is closed once the cancel request for a statement that
	// failed in the proxy was delivered (nil when none; serverToClient
	// only).
	cancelling chan struct{}
	// abortPending asks clientToServer to make the server's transaction
	// block fail before the client's next message: the client was told
	// it failed (a statement failed in the proxy), the server was not.
	abortPending atomic.Bool

	// sides are the proxy's statements kept prepared (sidecache.go);
	// sidesGone is set when the client's DISCARD ALL or DEALLOCATE ALL
	// closed them (serverToClient sets it, clientToServer reads it).
	sides     sideCache
	sidesGone atomic.Bool
	// sidesLost are statements of sides whose Parse, sent with a bound
	// Query, failed (sidecache.go); guarded by sidesLostMu.
	sidesLostMu sync.Mutex
	sidesLost   []string
	// unnamedAs is the server statement that stands for the client's
	// unnamed one ("" for the server's unnamed statement itself; see
	// prepareUnnamed).
	unnamedAs string
	// cycleTimed is the key of the unnamed statement parsed in the
	// current request cycle, timed from cycleSent to its Sync's answer
	// (slow).
	cycleTimed string
	cycleSent  time.Time
	// slow are the client's statements that took longer than slowAfter.
	slow slowSet

	txStatus    atomic.Uint32 // of the last ReadyForQuery
	txEpoch     atomic.Uint64 // answers that may have ended a transaction (txepoch.go)
	draining    atomic.Bool
	terminating atomic.Bool
	clientGone  atomic.Bool                            // clientToServer has ended
	clientFault atomic.Pointer[pgproto3.ErrorResponse] // why the client was cut off, if it broke the protocol
	closeOnce   sync.Once
}

func (ss *session) id() string { return strconv.FormatUint(ss.key>>32, 10) }

// run relays until either side ends, then closes both connections.
func (ss *session) run() {
	ss.stmts = map[string]*Statement{}
	ss.sources = map[string]*stmtSource{}
	ss.portals = map[string]*boundPortal{}
	done := make(chan error, 1)
	go func() { done <- ss.protect("clientToServer", ss.clientToServer) }()
	serr := ss.protect("serverToClient", ss.serverToClient)
	// Wakes a client goroutine waiting in Exec.
	ss.q.finishAll()
	ss.client.Close()
	cerr := <-done
	ss.closeBackend()
	ss.q.finishAll()
	for _, f := range ss.deferred {
		f()
	}
	ss.deferred = nil
	if sc, ok := ss.ic.(SessionCloser); ok {
		_ = guard(ss.log, "Close", func() error { sc.Close(); return nil })
	}
	for _, err := range []error{serr, cerr} {
		if err != nil && !isClosedErr(err) {
			ss.log.Info("session error", "err", err)
		}
	}
}

func isClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, errClientTerminated) || errors.Is(err, errDrained)
}

var (
	errClientTerminated = errors.New("client sent Terminate")
	errDrained          = errors.New("session drained for shutdown")
)

func (ss *session) closeBackend() { ss.closeOnce.Do(func() { ss.backend.Close() }) }

// idle reports whether the session is between transactions with nothing in
// flight.
func (ss *session) idle() bool {
	return ss.txStatus.Load() == 'I' && ss.q.len() == 0
}

// drain asks the session to end at its next idle point (now, if idle).
func (ss *session) drain() {
	ss.draining.Store(true)
	if ss.idle() {
		ss.terminate()
	}
}

// terminate ends the session now: closing the backend makes serverToClient
// send FATAL 57P01 to the client and return.
func (ss *session) terminate() {
	ss.terminating.Store(true)
	ss.closeBackend()
}

// cancelBackend sends a CancelRequest for this session's backend process.
func (ss *session) cancelBackend() error {
	d := net.Dialer{Timeout: 10 * time.Second}
	c, err := d.Dial(ss.backendAddr.Network(), ss.backendAddr.String())
	if err != nil {
		return err
	}
	defer c.Close()
	req := &pgproto3.CancelRequest{ProcessID: ss.backendPID, SecretKey: ss.backendSecret}
	b, err := req.Encode(nil)
	if err != nil {
		return err
	}
	if _, err = c.Write(b); err != nil {
		return err
	}
	// The server closes the connection when done; wait briefly so the
	// cancel is processed before we report back.
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Read(make([]byte, 1))
	return nil
}

// clientToServer forwards client messages, letting the Interceptor rewrite
// them, and records what answer each one expects.
func (ss *session) clientToServer() (err error) {
	defer func() {
		// A client that vanishes mid-statement should not leave the server
		// working for nobody.
		if err != nil && !errors.Is(err, errClientTerminated) && ss.q.len() > 0 && !ss.terminating.Load() {
			_ = ss.cancelBackend()
		}
		ss.clientGone.Store(true)
		if errors.Is(err, errClientTerminated) {
			if b, e := (&pgproto3.Terminate{}).Encode(nil); e == nil {
				_, _ = ss.bw.Write(b)
				_ = ss.bw.Flush()
			}
		}
		ss.closeBackend()
	}()
	var scratch []byte
	atBoundary := true
	for {
		if !ss.cr.complete() {
			if err := ss.bw.Flush(); err != nil {
				return err
			}
		}
		msg, err := ss.cr.next()
		if err != nil {
			if errors.Is(err, ErrMessageTooLarge) || errors.Is(err, errInvalidLength) {
				ss.log.Warn("client broke the protocol", "err", err)
				ss.clientFault.Store(fatal(codeProtocolViolation, "invalid message: "+err.Error()))
			}
			return err
		}
		if atBoundary && msg[0] != 'X' && ss.abortPending.Swap(false) {
			// The client was told its transaction block failed; make
			// the server's fail too, so the next statement gets 25P02
			// from the server as it would from PostgreSQL.
			ss.q.push(&request{kind: abortQuery})
			if scratch, err = writeMsg(ss.bw, scratch, &pgproto3.Query{String: abortSQL}); err != nil {
				return err
			}
		}
		// A new request cycle starts after a Query or Sync: a Parse
		// that begins one may run statements ahead, since everything
		// the client sent before was synced.
		cycleStart := atBoundary
		atBoundary = msg[0] == 'Q' || msg[0] == 'S'
		if cycleStart {
			ss.cycleQuiet = true
		}
		switch msg[0] {
		case 'X':
			return errClientTerminated
		case 'Q':
			scratch, err = ss.forwardQuery(msg, scratch)
		case 'P':
			ss.sideOK = cycleStart
			scratch, err = ss.forwardParse(msg, scratch)
			ss.sideOK = false
		case 'B':
			scratch, err = ss.forwardBind(msg, scratch)
		case 'D':
			err = ss.forwardDescribe(msg)
		case 'E':
			name, rest := cstring(body(msg))
			r := &request{kind: 'E'}
			ss.copyIn, ss.copyReq, ss.copyFailed = nil, r, false
			if pt := ss.portals[name]; pt != nil {
				if r.limit = limitExecute(pt, rest); r.limit != nil {
					if r.limit.first {
						r.results = []ResultRewriter{pt.results}
					}
					ss.q.push(r)
					scratch, err = writeMsg(ss.bw, scratch, &pgproto3.Execute{Portal: name})
					break
				}
				r.results = []ResultRewriter{pt.results}
				if pt.stmt.CopyIn != nil {
					n := len(ss.deferred)
					if err := guard(ss.log, "CopyIn", func() error { ss.copyIn = pt.stmt.CopyIn(); return nil }); err != nil {
						// The data must still never reach the server as sent.
						ss.copyIn = refusingCopyIn{err}
					}
					r.copyIn = ss.copyIn
					// What the rewriter deferred as it was made lasts
					// until the COPY completes.
					r.done = append(r.done, ss.deferred[n:]...)
					ss.deferred = ss.deferred[:n]
				}
			}
			ss.q.push(r)
			_, err = ss.bw.Write(msg)
		case 'C':
			b := body(msg)
			if len(b) > 1 {
				name, _ := cstring(b[1:])
				if b[0] == 'S' {
					delete(ss.stmts, name)
					delete(ss.sources, name)
					if name == "" {
						ss.unnamedAs = ""
					}
				} else {
					delete(ss.portals, name)
				}
			}
			ss.q.push(&request{kind: 'C'})
			_, err = ss.bw.Write(msg)
		case 'S', 'F':
			if msg[0] == 'S' {
				ss.pushCycleEnd(&request{kind: 'S', timed: ss.cycleTimed, sentAt: ss.cycleSent})
				ss.cycleTimed = ""
			} else {
				ss.q.push(&request{kind: 'F'})
			}
			_, err = ss.bw.Write(msg)
		case 'd': // CopyData
			if ss.copyIn != nil {
				scratch, err = ss.forwardCopyData(msg, scratch)
			} else {
				_, err = ss.bw.Write(msg)
			}
		case 'c', 'f': // CopyDone, CopyFail
			scratch, err = ss.forwardCopyEnd(msg, scratch)
		default: // Flush, and anything the server should judge
			_, err = ss.bw.Write(msg)
		}
		switch msg[0] {
		case 'P', 'D', 'C', 'H':
		default:
			ss.cycleQuiet = false // something of the cycle ran
		}
		if err != nil {
			return err
		}
	}
}

func (ss *session) forwardQuery(msg, scratch []byte) ([]byte, error) {
	ss.copyIn, ss.copyReq, ss.copyFailed = nil, nil, false
	ss.unnamedAs = "" // a Query discards the unnamed statement
	if ss.ic == nil {
		ss.pushCycleEnd(&request{kind: 'Q'})
		_, err := ss.bw.Write(msg)
		return scratch, err
	}
	sql, _ := cstring(body(msg))
	ss.log.Debug("query", "sql", sql)
	var plan *QueryPlan
	ss.sideOK = true
	perr := guard(ss.log, "Query", func() (err error) {
		plan, err = ss.ic.Query(sql)
		return err
	})
	ss.sideOK = false
	switch {
	case perr != nil:
		ss.log.Info("statement refused", refusalAttr(perr))
		ss.pushCycleEnd(&request{kind: 'Q', refusal: perr})
		return writeMsg(ss.bw, scratch, &pgproto3.Query{String: refusedSQL})
	case plan == nil:
		ss.pushCycleEnd(&request{kind: 'Q'})
		_, err := ss.bw.Write(msg)
		return scratch, err
	case plan.Bound != nil:
		r := &request{kind: 'Q', results: plan.Results, bound: true}
		b := plan.Bound
		msgs := ss.boundStatement(r, SideQuery{SQL: plan.SQL, ParamOIDs: b.ParamOIDs})
		ss.pushCycleEnd(r)
		msgs = append(msgs,
			&pgproto3.Bind{PreparedStatement: r.parsed, ParameterFormatCodes: b.ParamFormats, Parameters: b.Params, ResultFormatCodes: b.ResultFormats},
			&pgproto3.Describe{ObjectType: 'P'},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
		)
		for _, m := range msgs {
			var err error
			if scratch, err = writeMsg(ss.bw, scratch, m); err != nil {
				return scratch, err
			}
		}
		return scratch, nil
	default:
		r := &request{kind: 'Q', results: plan.Results, copyIn: plan.CopyIn}
		ss.copyIn, ss.copyReq = plan.CopyIn, r
		ss.pushCycleEnd(r)
		return writeMsg(ss.bw, scratch, &pgproto3.Query{String: plan.SQL})
	}
}

// pushCycleEnd queues a request the server answers with ReadyForQuery (a
// Query or Sync), handing it what the Interceptor deferred.
func (ss *session) pushCycleEnd(r *request) {
	r.done, ss.deferred = ss.deferred, nil
	ss.q.push(r)
}

// deferUntilAnswered implements SessionInfo.Defer (clientToServer only).
func (ss *session) deferUntilAnswered(f func()) {
	if ss.copyIn != nil && ss.copyReq != nil {
		// Called while COPY data streams: the COPY's statement ends the
		// work f guards.
		ss.q.attach(ss.copyReq, f)
		return
	}
	ss.deferred = append(ss.deferred, f)
}

// maxCopyChunk bounds the CopyData bytes joined into one chunk.
const maxCopyChunk = 1 << 20

// forwardCopyData sends the rewritten form of one CopyData message, and
// of the CopyData messages already buffered after it: a client that
// sends a row per message (libpq's PQputline, pgbench -i) would
// otherwise have its rows encrypted one at a time, on one core.
func (ss *session) forwardCopyData(msg, scratch []byte) ([]byte, error) {
	if ss.copyFailed {
		return scratch, nil
	}
	data := body(msg)
	if ss.cr.completeType() == 'd' {
		ss.copyChunk = append(ss.copyChunk[:0], data...)
		for len(ss.copyChunk) < maxCopyChunk && ss.cr.completeType() == 'd' {
			next, err := ss.cr.next()
			if err != nil {
				return scratch, err
			}
			ss.copyChunk = append(ss.copyChunk, body(next)...)
		}
		data = ss.copyChunk
		if cap(ss.copyChunk) > 2*maxCopyChunk {
			ss.copyChunk = nil // do not pin a chunk grown by one huge message
		}
	}
	var out []byte
	err := guard(ss.log, "CopyData", func() (err error) {
		out, err = ss.copyIn.Data(nil, data)
		return err
	})
	if err != nil {
		ss.copyFailed = true
		return ss.failCopy(err, scratch)
	}
	if len(out) == 0 {
		return scratch, nil
	}
	return writeMsg(ss.bw, scratch, &pgproto3.CopyData{Data: out})
}

// forwardCopyEnd handles CopyDone and CopyFail from the client.
func (ss *session) forwardCopyEnd(msg, scratch []byte) ([]byte, error) {
	ss.q.push(&request{kind: copyEnd})
	rw, failed := ss.copyIn, ss.copyFailed
	defer func() { ss.copyIn, ss.copyFailed = nil, false }() // after Done, which may Defer
	if failed {
		return scratch, nil // the server already had our CopyFail
	}
	if rw != nil && msg[0] == 'c' {
		var out []byte
		err := guard(ss.log, "CopyDone", func() (err error) {
			out, err = rw.Done(nil)
			return err
		})
		if err != nil {
			return ss.failCopy(err, scratch)
		}
		if len(out) > 0 {
			if scratch, err = writeMsg(ss.bw, scratch, &pgproto3.CopyData{Data: out}); err != nil {
				return scratch, err
			}
		}
	}
	_, err := ss.bw.Write(msg)
	return scratch, err
}

// failCopy makes the server abandon the COPY (so nothing is stored) and
// arranges for the client to see err instead of the server's error.
func (ss *session) failCopy(err error, scratch []byte) ([]byte, error) {
	ss.log.Info("copy refused", refusalAttr(err))
	if ss.copyReq != nil {
		ss.q.refuse(ss.copyReq, err)
	}
	return writeMsg(ss.bw, scratch, &pgproto3.CopyFail{Message: "pgonion refused the data"})
}

func (ss *session) forwardParse(msg, scratch []byte) ([]byte, error) {
	if ss.ic == nil {
		ss.q.push(&request{kind: 'P'})
		_, err := ss.bw.Write(msg)
		return scratch, err
	}
	var p pgproto3.Parse
	if err := p.Decode(body(msg)); err != nil {
		return scratch, fmt.Errorf("client sent a malformed Parse: %w", err)
	}
	ss.log.Debug("parse", "name", p.Name, "sql", p.Query)
	src := &stmtSource{query: p.Query, oids: p.ParameterOIDs}
	rp, replans := ss.ic.(Replanner)
	if replans {
		src.epoch = rp.PlanEpoch() // before planning: a change meanwhile makes it plan again
	}
	var st *Statement
	perr := guard(ss.log, "Parse", func() (err error) {
		st, err = ss.ic.Parse(p.Name, p.Query, p.ParameterOIDs)
		return err
	})
	if p.Name == "" {
		ss.unnamedAs = ""
	}
	if perr != nil {
		ss.log.Info("statement refused", refusalAttr(perr))
		if p.Name == "" {
			delete(ss.sources, "") // the server's unnamed statement is gone
		}
		ss.q.push(&request{kind: 'P', refusal: perr})
		return writeMsg(ss.bw, scratch, &pgproto3.Parse{Name: p.Name, Query: refusedSQL})
	}
	if _, exists := ss.stmts[p.Name]; exists && p.Name != "" {
		// The client may have deallocated it by SQL (DEALLOCATE,
		// DISCARD ALL), which this layer does not read: the server
		// would then take the new statement while ours stayed the old
		// one. Closing it first makes both the new one (where
		// PostgreSQL would fail with 42P05, the new one replaces it).
		ss.q.push(&request{kind: 'C', hidden: true})
		if scratch, err := writeMsg(ss.bw, scratch, &pgproto3.Close{ObjectType: 'S', Name: p.Name}); err != nil {
			return scratch, err
		}
	}
	ss.stmts[p.Name] = st
	if replans {
		ss.sources[p.Name] = src
	}
	if st == nil {
		ss.q.push(&request{kind: 'P'})
		_, err := ss.bw.Write(msg)
		return scratch, err
	}
	parse := &pgproto3.Parse{Name: p.Name, Query: st.SQL, ParameterOIDs: st.ParamOIDs}
	r := &request{kind: 'P'}
	if p.Name == "" {
		var err error
		if scratch, err = ss.prepareUnnamed(r, parse, scratch); err != nil {
			return scratch, err
		}
	}
	ss.q.push(r)
	return writeMsg(ss.bw, scratch, parse)
}

// prepareUnnamed lets a statement the proxy rewrote stay prepared on the
// server when the client parses it as its unnamed statement again and
// again (pgbench -M extended, drivers' first executions): from its second
// Parse, as for the proxy's side statements, it is a named statement of
// the server's, bound in place of the unnamed one, and the client's
// later Parses of it parse the empty query instead (its ParseComplete is
// still the client's). parse is changed to what to send; r is the
// Parse's request.
func (ss *session) prepareUnnamed(r *request, parse *pgproto3.Parse, scratch []byte) ([]byte, error) {
	if ss.q.len() != 0 || ss.txStatus.Load() == 'E' {
		return scratch, nil
	}
	q := SideQuery{SQL: parse.Query, ParamOIDs: parse.ParameterOIDs}
	key := sideKey(q.SQL, q.ParamOIDs)
	ss.cycleTimed, ss.cycleSent = key, time.Now()
	if ss.slow.has(key) {
		return scratch, nil
	}
	name, prepare := ss.sideStatementFor(q)
	if name == "" {
		return scratch, nil
	}
	for _, m := range ss.takeClosing() {
		ss.q.push(&request{kind: 'C', hidden: true})
		var err error
		if scratch, err = writeMsg(ss.bw, scratch, m); err != nil {
			return scratch, err
		}
	}
	if prepare {
		parse.Name = name
		ss.sidePrepared(q, name) // lostSide undoes it if the Parse fails
		r.parsed, r.parsing = name, true
	} else {
		parse.Query, parse.ParameterOIDs = "", nil
		r.infallible = true
	}
	ss.unnamedAs = name
	return scratch, nil
}

func (ss *session) forwardBind(msg, scratch []byte) ([]byte, error) {
	b := body(msg)
	portal, rest := cstring(b)
	stmtName, _ := cstring(rest)
	if src := ss.sources[stmtName]; src != nil {
		if rp := ss.ic.(Replanner); src.epoch != rp.PlanEpoch() {
			var err error
			if scratch, err = ss.replan(stmtName, src, rp, scratch); err != nil {
				var re *replanRefusal
				if !errors.As(err, &re) {
					return scratch, err
				}
				ss.log.Info("bind refused", refusalAttr(re.err))
				delete(ss.portals, portal)
				ss.q.push(&request{kind: 'B', refusal: re.err})
				return writeMsg(ss.bw, scratch, &pgproto3.Bind{DestinationPortal: portal, PreparedStatement: refusedStatement})
			}
		}
	}
	st := ss.stmts[stmtName]
	if st != nil && st.OnBind != nil {
		if err := guard(ss.log, "Bind", func() error { st.OnBind(); return nil }); err != nil {
			delete(ss.portals, portal)
			ss.q.push(&request{kind: 'B', refusal: err})
			return writeMsg(ss.bw, scratch, &pgproto3.Bind{DestinationPortal: portal, PreparedStatement: refusedStatement})
		}
	}
	if st == nil || (st.Bind == nil && st.Results == nil && st.CopyIn == nil) {
		delete(ss.portals, portal)
		ss.q.push(&request{kind: 'B'})
		if stmtName == "" && ss.unnamedAs != "" {
			var bind pgproto3.Bind
			if err := bind.Decode(b); err != nil {
				return scratch, fmt.Errorf("client sent a malformed Bind: %w", err)
			}
			bind.PreparedStatement = ss.unnamedAs
			return writeMsg(ss.bw, scratch, &bind)
		}
		_, err := ss.bw.Write(msg)
		return scratch, err
	}
	var bind pgproto3.Bind
	if err := bind.Decode(b); err != nil {
		return scratch, fmt.Errorf("client sent a malformed Bind: %w", err)
	}
	if stmtName == "" && ss.unnamedAs != "" {
		bind.PreparedStatement = ss.unnamedAs
	}
	pt := &boundPortal{stmt: st}
	ss.portals[portal] = pt
	ss.inBind = true
	ss.sideOK = ss.cycleQuiet || ss.txStatus.Load() == 'T'
	err := guard(ss.log, "Bind", func() error {
		if st.Results != nil {
			pt.results = st.Results(bind.ResultFormatCodes)
		}
		if st.Bind != nil {
			return st.Bind(&bind)
		}
		return nil
	})
	ss.inBind, ss.sideOK = false, false
	if err != nil {
		ss.log.Info("bind refused", refusalAttr(err))
		delete(ss.portals, portal)
		ss.q.push(&request{kind: 'B', refusal: err})
		return writeMsg(ss.bw, scratch, &pgproto3.Bind{DestinationPortal: portal, PreparedStatement: refusedStatement})
	}
	ss.q.push(&request{kind: 'B'})
	return writeMsg(ss.bw, scratch, &bind)
}

// stmtSource is what a prepared statement was parsed from, and the
// Replanner's epoch its plan was made at.
type stmtSource struct {
	query string
	oids  []uint32
	epoch uint64
}

// replanRefusal is the Interceptor's refusal of a statement parsed
// again: the Bind that needed it fails with it.
type replanRefusal struct{ err error }

func (e *replanRefusal) Error() string { return e.err.Error() }

// replan parses statement name again (its plan went stale) and replaces
// the server's statement before the Bind that follows: Close and Parse,
// whose success the client does not see (it sent neither); a server
// error is the Bind's.
func (ss *session) replan(name string, src *stmtSource, rp Replanner, scratch []byte) ([]byte, error) {
	epoch := rp.PlanEpoch()
	ss.log.Debug("replan", "name", name)
	var st *Statement
	if err := guard(ss.log, "Parse", func() (err error) {
		st, err = ss.ic.Parse(name, src.query, src.oids)
		return err
	}); err != nil {
		return scratch, &replanRefusal{err}
	}
	var err error
	if name != "" {
		ss.q.push(&request{kind: 'C', hidden: true})
		if scratch, err = writeMsg(ss.bw, scratch, &pgproto3.Close{ObjectType: 'S', Name: name}); err != nil {
			return scratch, err
		}
	}
	ss.q.push(&request{kind: 'P', hidden: true})
	parse := &pgproto3.Parse{Name: name, Query: src.query, ParameterOIDs: src.oids}
	if st != nil {
		parse.Query, parse.ParameterOIDs = st.SQL, st.ParamOIDs
	}
	if scratch, err = writeMsg(ss.bw, scratch, parse); err != nil {
		return scratch, err
	}
	if st != nil && st.Results != nil {
		// What the new plan needs to know of its result, as a
		// client's Describe would have taught it.
		r := &request{kind: 'D', describe: 'S', stmt: st, hidden: true}
		var rr ResultRewriter
		r.fail = guard(ss.log, "Describe", func() error { rr = st.Results(nil); return nil })
		r.results = []ResultRewriter{rr}
		ss.q.push(r)
		if scratch, err = writeMsg(ss.bw, scratch, &pgproto3.Describe{ObjectType: 'S', Name: name}); err != nil {
			return scratch, err
		}
	}
	ss.stmts[name] = st
	src.epoch = epoch
	if name == "" {
		ss.unnamedAs = ""
	}
	return scratch, nil
}

func (ss *session) forwardDescribe(msg []byte) error {
	b := body(msg)
	r := &request{kind: 'D'}
	if len(b) > 0 {
		r.describe = b[0]
		name, _ := cstring(b[1:])
		if r.describe == 'S' {
			if name == "" && ss.unnamedAs != "" {
				msg = nil // describe the statement that stands for it
			}
			if st := ss.stmts[name]; st != nil {
				r.stmt = st
				if st.Results != nil {
					var rr ResultRewriter
					r.fail = guard(ss.log, "Describe", func() error { rr = st.Results(nil); return nil })
					r.results = []ResultRewriter{rr}
				}
			}
		} else if pt := ss.portals[name]; pt != nil {
			r.results = []ResultRewriter{pt.results}
		} else if pd, ok := ss.ic.(PortalDescriber); ok && name != "" {
			var rr ResultRewriter
			r.fail = guard(ss.log, "DescribePortal", func() error { rr = pd.DescribePortal(name); return nil })
			if rr != nil {
				r.results = []ResultRewriter{rr}
			}
		}
	}
	ss.q.push(r)
	if msg == nil {
		_, err := writeMsg(ss.bw, nil, &pgproto3.Describe{ObjectType: 'S', Name: ss.unnamedAs})
		return err
	}
	_, err := ss.bw.Write(msg)
	return err
}

// serverToClient relays the server's messages, rewriting those that belong
// to intercepted statements, and flushes before it would block.
func (ss *session) serverToClient() error {
	var (
		scratch   []byte
		stmtIdx   int  // statement within the current simple Query
		copyIn    bool // the current statement is in COPY FROM STDIN
		lastFatal bool // the last message relayed was a FATAL error
	)
	for {
		if !ss.br.complete() {
			if err := ss.cw.Flush(); err != nil {
				return err
			}
		}
		msg, err := ss.br.next()
		if err != nil {
			switch {
			case ss.clientGone.Load():
				if e := ss.clientFault.Load(); e != nil {
					sendFatal(ss.cw, e)
				}
				return nil
			case ss.terminating.Load() || ss.draining.Load():
				sendFatal(ss.cw, fatal(codeAdminShutdown, "terminating connection due to administrator command"))
				return errDrained
			case !lastFatal:
				ss.log.Warn("backend connection lost", "err", err)
				sendFatal(ss.cw, fatalWithHint(codeConnectionFailure, "the proxy lost its connection to the server", "The server may have been restarted or the session terminated."))
			}
			return err
		}
		t := msg[0]
		lastFatal = false
		if endsTransactionMaybe(t, body(msg)) {
			ss.txEpoch.Add(1)
		}
		if t == 'S' {
			if po, ok := ss.ic.(ParameterObserver); ok {
				name, rest := cstring(body(msg))
				value, _ := cstring(rest)
				_ = guard(ss.log, "ParameterStatus", func() error { po.ParameterStatus(name, value); return nil })
			}
		}
		if t == 'N' || t == 'S' || t == 'A' { // asynchronous: notice, parameter status, notification
			_, err = ss.cw.Write(msg)
			if err != nil {
				return err
			}
			continue
		}
		r := ss.q.peek()
		if r != nil && r.kind == sideQuery {
			if ss.sideAnswer(r, t, msg) {
				ss.q.pop()
			}
			continue
		}
		if r != nil && r.kind == abortQuery {
			// Its error and ReadyForQuery ('E') are not for the client.
			if t == 'Z' {
				ss.txStatus.Store(uint32(body(msg)[0]))
				ss.q.pop()
			}
			continue
		}
		if t == 'Z' && r != nil && r.kind != 'Q' && r.kind != 'F' && r.kind != 'S' {
			// The requests before the Sync the server answers were
			// skipped after an error (sent after it was relayed, so
			// afterServerError could not drop them).
			ss.q.skipToSync()
			r = ss.q.peek()
		}
		if r == nil { // nothing asked for: pass on (e.g. FATAL before a disconnect)
			lastFatal = t == 'E' && isFatalError(body(msg))
			if _, err = ss.cw.Write(msg); err != nil {
				return err
			}
			continue
		}
		if r.hidden && t != 'E' {
			// The answer to what the proxy sent to replace a stale
			// statement: not for the client.
			switch {
			case t == 'T' && len(r.results) > 0 && r.results[0] != nil:
				var rd pgproto3.RowDescription
				if err := rd.Decode(body(msg)); err != nil {
					return fmt.Errorf("server sent a malformed RowDescription: %w", err)
				}
				rr := r.results[0]
				if err := guard(ss.log, "RowDescription", func() error { return rr.RowDescription(&rd) }); err != nil {
					ss.log.Info("describing a statement planned again failed", "err", err)
				}
				ss.q.pop()
			case t == '1' || t == '3' || t == 'n' || t == 'T':
				ss.q.pop()
			}
			continue
		}
		if r.parsing {
			switch t {
			case '1':
				r.parseOK = true
			case 'E':
				if !r.parseOK {
					ss.lostSide(r.parsed)
				}
			}
		}
		if r.bound && (t == '1' || t == '2' || t == '3' || t == 'n') {
			continue // the extended protocol's, not in a Query's answer
		}
		done := false // the answer to r is complete
		var rr ResultRewriter
		switch r.kind {
		case 'Q', 'F':
			if stmtIdx < len(r.results) {
				rr = r.results[stmtIdx]
			}
			switch t {
			case 'C', 'I':
				stmtIdx++
				if copyIn {
					copyIn = false
					ss.q.dropCopySyncs()
				}
			case 'G':
				copyIn = true
			case 'E':
				if copyIn {
					copyIn = false
					ss.q.dropCopySyncs()
				}
			case 'Z':
				done = true
			}
		case 'E':
			if len(r.results) > 0 {
				rr = r.results[0]
			}
			switch t {
			case 'C', 'I', 's':
				done = true
				if copyIn {
					copyIn = false
					ss.q.dropCopySyncs()
				}
			case 'G':
				copyIn = true
			}
		case 'D':
			if len(r.results) > 0 {
				rr = r.results[0]
			}
			done = t == 'T' || t == 'n'
		case 'P':
			done = t == '1'
		case 'B':
			done = t == '2'
		case 'C':
			done = t == '3'
		case 'S':
			done = t == 'Z'
		}
		if r.fail != nil && !ss.failed {
			// The proxy failed the request before the server answered.
			scratch = ss.failStatement(r.fail, scratch)
		}
		if t == 'C' && closesPrepared(body(msg)) {
			ss.sidesGone.Store(true) // relayed or not, the server ran it
		}
		if ss.failed {
			// A statement of this cycle failed in the proxy: the client
			// has its error, and sees nothing more until ReadyForQuery.
			err = ss.discard(r, t, msg, &copyIn, &stmtIdx)
		} else {
			scratch, err = ss.relay(r, t, msg, scratch, rr, &copyIn, &stmtIdx, &lastFatal)
		}
		if err != nil {
			var re *rewriteError
			if errors.As(err, &re) {
				ss.log.Error("result rewriting failed", "err", re.err)
				sendFatal(ss.cw, errorResponse(re.err, "FATAL"))
			}
			return err
		}
		if done {
			if r.timed != "" && t == 'Z' {
				ss.slow.timed(r.timed, r.sentAt)
			}
			ss.q.pop()
			stmtIdx = 0
			if t == 'Z' && ss.draining.Load() && ss.idle() {
				sendFatal(ss.cw, fatal(codeAdminShutdown, "terminating connection due to administrator command"))
				return errDrained
			}
		}
	}
}

// relay passes one message of the answer to r on to the client,
// rewriting it with rr.
func (ss *session) relay(r *request, t byte, msg, scratch []byte, rr ResultRewriter, copyIn *bool, stmtIdx *int, lastFatal *bool) ([]byte, error) {
	ss.divert = nil
	if r.limit != nil && r.limit.first {
		ss.divert = r.limit.held
	}
	var err error
	switch t {
	case 'E':
		*lastFatal = isFatalError(body(msg))
		scratch = ss.releaseBeforeError(scratch, rr)
		if refusal := ss.q.refusalOf(r); refusal != nil {
			scratch, err = writeMsg(ss.cw, scratch, errorResponse(refusal, "ERROR"))
		} else {
			_, err = ss.cw.Write(msg)
		}
		ss.afterServerError(r, copyIn, stmtIdx)
	case 'T':
		scratch, err = ss.relayRowDescription(msg, scratch, rr)
	case 'D':
		scratch, err = ss.relayDataRow(msg, scratch, rr)
	case 't':
		scratch, err = ss.relayParameterDescription(msg, scratch, r.stmt)
	case 'G':
		scratch, err = ss.relayCopyInResponse(msg, scratch, r.copyIn)
	case 'C':
		if r.limit != nil {
			scratch, err = ss.completeLimited(r.limit, msg, scratch, rr)
		} else {
			scratch, err = ss.relayCommandComplete(msg, scratch, rr)
		}
	case 'Z':
		err = ss.relayReadyForQuery(msg, body(msg)[0])
	case 's':
		if ra, ok := rr.(ReleasesAtSuspend); ok && ra.ReleasesAtSuspend() {
			if scratch, err = ss.release(scratch, rr, true); err != nil {
				break
			}
		}
		_, err = ss.cw.Write(msg)
	default:
		_, err = ss.cw.Write(msg)
	}
	if err == nil {
		// Declared below, se would be allocated for every message.
		return scratch, nil
	}
	var se *statementError
	if errors.As(err, &se) {
		if t == 'D' || t == 'T' {
			// The server may still be producing rows nobody will see:
			// stop it.
			ss.cancelFailed()
		}
		return ss.failStatement(se.err, scratch), nil
	}
	return scratch, err
}

// cancelFailed cancels, on the server, the statement that failed in the
// proxy. ReadyForQuery waits for the cancel request to be delivered, so
// that it cannot reach a later statement: the server ignores a cancel
// that arrives while it waits for the client.
func (ss *session) cancelFailed() {
	if ss.cancelling != nil {
		return
	}
	done := make(chan struct{})
	ss.cancelling = done
	go func() {
		defer close(done)
		if err := ss.cancelBackend(); err != nil {
			ss.log.Warn("cancelling a statement that failed in the proxy", "err", err)
		}
	}()
}

// afterServerError keeps the queue in step after the server reported an
// error: in the extended protocol it skips to the next Sync.
func (ss *session) afterServerError(r *request, copyIn *bool, stmtIdx *int) {
	if r.kind != 'Q' && r.kind != 'F' && r.kind != 'S' {
		ss.cycleFailed.Store(true) // the server skips to the next Sync
		if *copyIn {
			*copyIn = false
			ss.q.dropCopySyncs()
		}
		ss.q.pop()
		ss.q.skipToSync()
		*stmtIdx = 0
	}
}

// relayReadyForQuery ends a request cycle. After a statement failed in
// the proxy inside a transaction block, the client is told the block
// failed ('E'), as PostgreSQL would, and the server's transaction is
// made to fail before the client's next message (abortPending).
func (ss *session) relayReadyForQuery(msg []byte, status byte) error {
	ss.txStatus.Store(uint32(status))
	ss.cycleFailed.Store(false)
	if to, ok := ss.ic.(TransactionObserver); ok {
		_ = guard(ss.log, "ReadyForQuery", func() error { to.ReadyForQuery(status); return nil })
	}
	if ss.cancelling != nil {
		select {
		case <-ss.cancelling:
		case <-time.After(10 * time.Second):
		}
		ss.cancelling = nil
	}
	if ss.failed {
		ss.failed = false
		if status == 'T' {
			ss.abortPending.Store(true)
			_, err := writeMsg(ss.cw, nil, &pgproto3.ReadyForQuery{TxStatus: 'E'})
			return err
		}
	}
	_, err := ss.cw.Write(msg)
	return err
}

// failStatement reports err to the client as the error of the statement
// being answered and discards the rest of the answer until the cycle's
// ReadyForQuery (the client expects nothing else after an error). Rows a
// RowReleaser holds are dropped with the rewriter.
func (ss *session) failStatement(err error, scratch []byte) []byte {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code != codeInternal {
		ss.log.Info("statement failed in the proxy", refusalAttr(err))
	} else {
		ss.log.Error("statement failed in the proxy", "err", err)
	}
	ss.failed = true
	scratch, _ = writeMsg(ss.cw, scratch, errorResponse(clientError(err), "ERROR"))
	return scratch
}

// clientError is err as the client may see it: errors that are not
// PostgreSQL errors become XX000 with err's text (the proxy's own errors
// quote no values).
func clientError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe
	}
	return &pgconn.PgError{Severity: "ERROR", Code: codeInternal, Message: "the proxy could not complete the result: " + err.Error()}
}

// discard consumes one message of an answer the client no longer expects
// (after failStatement), keeping the queue and COPY state in step.
func (ss *session) discard(r *request, t byte, msg []byte, copyIn *bool, stmtIdx *int) error {
	switch t {
	case 'E':
		ss.afterServerError(r, copyIn, stmtIdx)
	case 'G':
		// A later COPY FROM STDIN of the same query string: the client
		// will not send its data, and the server waits for it.
		return errors.New("wire: a COPY FROM STDIN followed a statement that failed in the proxy")
	case 'Z':
		return ss.relayReadyForQuery(msg, body(msg)[0])
	}
	return nil
}

func (ss *session) relayRowDescription(msg, scratch []byte, rr ResultRewriter) ([]byte, error) {
	if rr == nil {
		_, err := ss.cw.Write(msg)
		return scratch, err
	}
	if rb, ok := rr.(RowDescriptionBytes); ok {
		var out []byte
		if err := guard(ss.log, "RowDescription", func() error { out = rb.RowDescriptionBytes(msg); return nil }); err != nil {
			return scratch, &statementError{err}
		}
		if out != nil {
			_, err := ss.cw.Write(out)
			return scratch, err
		}
	}
	var rd pgproto3.RowDescription
	if err := rd.Decode(body(msg)); err != nil {
		return scratch, fmt.Errorf("server sent a malformed RowDescription: %w", err)
	}
	if err := guard(ss.log, "RowDescription", func() error { return rr.RowDescription(&rd) }); err != nil {
		return scratch, &statementError{err}
	}
	if co, ok := rr.(CopyOut); ok {
		var resp *pgproto3.CopyOutResponse
		var head []byte
		if err := guard(ss.log, "CopyOutStart", func() (err error) { resp, head, err = co.CopyOutStart(&rd); return err }); err != nil {
			return scratch, &statementError{err}
		}
		scratch, err := writeMsg(ss.cw, scratch, resp)
		if err != nil || head == nil {
			return scratch, err
		}
		return writeMsg(ss.cw, scratch, &pgproto3.CopyData{Data: head})
	}
	return writeMsg(ss.cw, scratch, &rd)
}

// writeRow sends one row of rr's statement: a DataRow, or CopyData
// (CopyOut).
func (ss *session) writeRow(scratch []byte, rr ResultRewriter, row *pgproto3.DataRow) ([]byte, error) {
	if ss.divert != nil {
		if rk, ok := rr.(RowKeeper); ok {
			if err := guard(ss.log, "KeepRow", func() error { return rk.KeepRow(row) }); err != nil {
				return scratch, &statementError{err}
			}
		}
		ss.divert.keep(row)
		return scratch, nil
	}
	co, ok := rr.(CopyOut)
	if !ok {
		return writeMsg(ss.cw, scratch, row)
	}
	var data []byte
	if err := guard(ss.log, "CopyOutRow", func() (err error) { data, err = co.CopyOutRow(ss.copyBuf[:0], row); return err }); err != nil {
		return scratch, &statementError{err}
	}
	ss.copyBuf = data
	return writeMsg(ss.cw, scratch, &pgproto3.CopyData{Data: data})
}

func (ss *session) relayDataRow(msg, scratch []byte, rr ResultRewriter) ([]byte, error) {
	if rr == nil {
		_, err := ss.cw.Write(msg)
		return scratch, err
	}
	row, err := ss.decodeDataRow(msg)
	if err != nil {
		return scratch, fmt.Errorf("server sent a malformed DataRow: %w", err)
	}
	err = guard(ss.log, "DataRow", func() error { return rr.DataRow(row) })
	switch {
	case err == nil:
		if scratch, err = ss.writeRow(scratch, rr, row); err != nil {
			return scratch, err
		}
	case !errors.Is(err, ErrSkipRow):
		return scratch, &statementError{err}
	}
	return ss.release(scratch, rr, false)
}

// decodeDataRow decodes a DataRow message into the session's row, whose
// values alias msg. The row is valid until the next call.
func (ss *session) decodeDataRow(msg []byte) (*pgproto3.DataRow, error) {
	// A rewriter may have replaced Values with a slice of its own:
	// start from the session's.
	ss.row.Values = ss.rowVals
	err := ss.row.Decode(body(msg))
	ss.rowVals = ss.row.Values[:0]
	return &ss.row, err
}

// release sends the rows a RowReleaser lets go.
func (ss *session) release(scratch []byte, rr ResultRewriter, atEnd bool) ([]byte, error) {
	rel, ok := rr.(RowReleaser)
	if !ok {
		return scratch, nil
	}
	var rows []*pgproto3.DataRow
	err := guard(ss.log, "Release", func() (err error) {
		rows, err = rel.Release(atEnd)
		return err
	})
	if err != nil {
		return scratch, &statementError{err}
	}
	for _, r := range rows {
		if scratch, err = ss.writeRow(scratch, rr, r); err != nil {
			return scratch, err
		}
	}
	return scratch, nil
}

// releaseBeforeError sends the rows a rewriter that gives every row of
// the server's still holds (for its workers) when the server fails the
// statement: PostgreSQL sends the rows it produced before an error, and
// a client reading rows as they come (single-row mode, COPY TO STDOUT)
// sees them. Rows that fail to decrypt are dropped: the client gets the
// server's error.
func (ss *session) releaseBeforeError(scratch []byte, rr ResultRewriter) []byte {
	if ra, ok := rr.(ReleasesAtSuspend); !ok || !ra.ReleasesAtSuspend() {
		return scratch
	}
	scratch, err := ss.release(scratch, rr, true)
	if err != nil {
		ss.log.Debug("rows before a server error dropped", "err", err)
	}
	return scratch
}

func (ss *session) relayCommandComplete(msg, scratch []byte, rr ResultRewriter) ([]byte, error) {
	// A failure here means the statement's result cannot be
	// completed: the client gets the error instead of CommandComplete.
	scratch, err := ss.release(scratch, rr, true)
	if err != nil {
		return scratch, err
	}
	if _, copyOut := rr.(CopyOut); copyOut {
		if scratch, err = writeMsg(ss.cw, scratch, &pgproto3.CopyDone{}); err != nil {
			return scratch, err
		}
	}
	tr, ok := rr.(TagRewriter)
	silent := false
	if sr, isSilent := rr.(Silent); isSilent {
		silent = sr.Silent()
	}
	if !ok {
		if silent {
			return scratch, nil
		}
		_, err := ss.cw.Write(msg)
		return scratch, err
	}
	tag, _ := cstring(body(msg))
	var out []byte
	if err := guard(ss.log, "CommandTag", func() error { out = tr.CommandTag([]byte(tag)); return nil }); err != nil {
		return scratch, &statementError{err}
	}
	if silent {
		return scratch, nil // CommandTag ran for what it does
	}
	return writeMsg(ss.cw, scratch, &pgproto3.CommandComplete{CommandTag: out})
}

func (ss *session) relayCopyInResponse(msg, scratch []byte, rw CopyInRewriter) ([]byte, error) {
	if rw == nil {
		_, err := ss.cw.Write(msg)
		return scratch, err
	}
	var cr pgproto3.CopyInResponse
	if err := cr.Decode(body(msg)); err != nil {
		return scratch, fmt.Errorf("server sent a malformed CopyInResponse: %w", err)
	}
	if err := guard(ss.log, "CopyInResponse", func() error { return rw.CopyInResponse(&cr) }); err != nil {
		// The server now waits for data the client was told nothing
		// about: the protocol state cannot be kept.
		return scratch, &rewriteError{err}
	}
	return writeMsg(ss.cw, scratch, &cr)
}

func (ss *session) relayParameterDescription(msg, scratch []byte, st *Statement) ([]byte, error) {
	if st == nil || st.DescribeParams == nil {
		_, err := ss.cw.Write(msg)
		return scratch, err
	}
	var pd pgproto3.ParameterDescription
	if err := pd.Decode(body(msg)); err != nil {
		return scratch, fmt.Errorf("server sent a malformed ParameterDescription: %w", err)
	}
	if err := guard(ss.log, "DescribeParams", func() error { return st.DescribeParams(&pd) }); err != nil {
		return scratch, &statementError{err}
	}
	return writeMsg(ss.cw, scratch, &pd)
}

func fatalWithHint(code, msg, hint string) *pgproto3.ErrorResponse {
	e := fatal(code, msg)
	e.Hint = hint
	return e
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) (string, []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}

// refusalAttr describes a refusal for the log. Only refusals of
// unsupported statements (0A000), whose messages name constructs and
// columns, are logged in full: other errors, such as a value that does not
// parse, may quote the client's plaintext, which must not reach the log.
func refusalAttr(err error) slog.Attr {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if pe.Code == "0A000" {
			return slog.String("err", pe.Message)
		}
		return slog.String("sqlstate", pe.Code)
	}
	return slog.String("err", err.Error()) // the proxy's own errors quote no values
}

// boundPortal is a bound portal whose statement has an Interceptor plan.
type boundPortal struct {
	stmt    *Statement
	results ResultRewriter
	held    *heldRows // set when a limited Execute ran it to completion (rowlimit.go)
}

// rewriteError is a failure that leaves no consistent protocol state (a
// CopyInResponse that cannot be rewritten): the session reports it to the
// client as FATAL and ends.
type rewriteError struct{ err error }

func (e *rewriteError) Error() string { return "rewriting a result: " + e.err.Error() }
func (e *rewriteError) Unwrap() error { return e.err }

// statementError is a failure of a ResultRewriter, RowReleaser or
// DescribeParams: an ERROR of the statement being answered (failStatement);
// the session goes on.
type statementError struct{ err error }

func (e *statementError) Error() string { return "rewriting a result: " + e.err.Error() }
func (e *statementError) Unwrap() error { return e.err }

// refusingCopyIn refuses every COPY FROM STDIN data message: the server
// gets CopyFail, the client err.
type refusingCopyIn struct{ err error }

func (r refusingCopyIn) CopyInResponse(*pgproto3.CopyInResponse) error { return nil }
func (r refusingCopyIn) Data(dst, src []byte) ([]byte, error)          { return dst, r.err }
func (r refusingCopyIn) Done(dst []byte) ([]byte, error)               { return dst, r.err }

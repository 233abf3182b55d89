package wire

import (
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// errSideLost is Exec's error when the session ends before the answer.
var errSideLost = errors.New("wire: the connection to the server ended during a statement the proxy ran")

// ErrExecUnavailable is Exec's error where it cannot run a statement
// ahead: in a Parse that follows other unsynced messages of the client,
// whose implicit transaction and unnamed statement a statement of the
// proxy would end.
var ErrExecUnavailable = errors.New("wire: statements ahead of the client's run only in Query, or in a Parse that begins a request cycle")

// sideQueryState is the answer to one Exec: written by serverToClient,
// read by the waiting client goroutine once done is closed.
type sideQueryState struct {
	rw       ResultRewriter
	params   []uint32 // a Describe's ParameterDescription
	err      error
	answered bool
	hold     bool // answered at the closes-th CloseComplete or an ErrorResponse (SideQuery.Hold)
	closes   int
	parsed   bool // its ParseComplete arrived
	done     chan struct{}
}

// execSide implements SessionInfo.Exec (clientToServer only).
func (ss *session) execSide(sql string, rw ResultRewriter, args ...[]byte) error {
	if !ss.sideOK {
		return ErrExecUnavailable
	}
	if ss.inBind {
		// The client's unnamed statement is being bound: a Query or a
		// Parse of the unnamed statement would discard it.
		return ss.execSideQuery(SideQuery{SQL: sql, ParamFormats: []int16{1}, Params: args}, rw)
	}
	var msgs []encoder
	if len(args) == 0 {
		msgs = []encoder{&pgproto3.Query{String: sql}}
	} else {
		// The unnamed statement and portal: a Query (the client's next
		// one included) discards them anyway.
		msgs = []encoder{
			&pgproto3.Parse{Query: sql},
			&pgproto3.Bind{ParameterFormatCodes: []int16{1}, Parameters: args},
			&pgproto3.Describe{ObjectType: 'P'},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
		}
	}
	return ss.runSide(sql, len(args), msgs, rw)
}

// SideQuery is a statement the proxy runs ahead of the client's, with
// parameters in the given formats and types (SessionInfo.ExecQuery).
type SideQuery struct {
	SQL           string
	ParamOIDs     []uint32
	ParamFormats  []int16
	Params        [][]byte
	ResultFormats []int16
	// Hold sends no Sync after the statement: its transaction (an
	// implicit one outside a transaction block) stays open, with the
	// row locks it took, for the client's statement that must follow
	// at once (the Query being planned, or the Execute of the portal
	// being bound), which ends it. When the statement fails, the proxy
	// syncs at once (the transaction rolls back) and ExecQuery returns
	// the error.
	Hold bool
}

// sideStatement names the prepared statement of a SideQuery: not the
// unnamed one, which may be the client's being bound.
const sideStatement = "pgonion_side"

// execSideQuery implements SessionInfo.ExecQuery (clientToServer only).
func (ss *session) execSideQuery(q SideQuery, rw ResultRewriter) error {
	if !ss.sideOK {
		return ErrExecUnavailable
	}
	if q.Hold {
		// Without a Sync, the statement would get no answer at all if
		// the server were skipping messages after an error of the
		// client's earlier in the request cycle: those are answered
		// first, and a failed cycle runs nothing held.
		// (A Flush message: the server sends what it answered so far.)
		// With nothing of the client's unanswered but what cannot fail
		// (the empty Parse standing for an unnamed statement kept
		// prepared), that round trip would wait for nothing; it cost a
		// write per held read (6% of the proxy's CPU under tpcb-like).
		if !ss.q.onlyInfallible() {
			if _, err := writeMsg(ss.bw, nil, &pgproto3.Flush{}); err != nil {
				return err
			}
			if err := ss.bw.Flush(); err != nil {
				return err
			}
			ss.q.waitEmpty()
		}
		if ss.cycleFailed.Load() {
			return ErrExecUnavailable
		}
	}
	name, parse := "", true
	if q.Hold || ss.q.len() == 0 {
		name, parse = ss.sideStatementFor(q)
	}
	st := &sideQueryState{rw: rw, hold: q.Hold, done: make(chan struct{})}
	var msgs []encoder
	if name == "" {
		msgs = []encoder{
			// Closed first as well: a statement that failed skipped
			// the Close after it.
			&pgproto3.Close{ObjectType: 'S', Name: sideStatement},
			&pgproto3.Parse{Name: sideStatement, Query: q.SQL, ParameterOIDs: q.ParamOIDs},
			&pgproto3.Bind{PreparedStatement: sideStatement, ParameterFormatCodes: q.ParamFormats, Parameters: q.Params, ResultFormatCodes: q.ResultFormats},
			&pgproto3.Describe{ObjectType: 'P'},
			&pgproto3.Execute{},
			&pgproto3.Close{ObjectType: 'S', Name: sideStatement},
		}
		st.closes = 2
	} else {
		msgs = ss.takeClosing()
		st.closes = len(msgs) + 1
		if parse {
			msgs = append(msgs, &pgproto3.Parse{Name: name, Query: q.SQL, ParameterOIDs: q.ParamOIDs})
		}
		msgs = append(msgs,
			&pgproto3.Bind{PreparedStatement: name, ParameterFormatCodes: q.ParamFormats, Parameters: q.Params, ResultFormatCodes: q.ResultFormats},
			&pgproto3.Describe{ObjectType: 'P'},
			&pgproto3.Execute{},
			&pgproto3.Close{ObjectType: 'P'}, // the unnamed portal; its CloseComplete ends a held answer
		)
	}
	end := encoder(&pgproto3.Sync{})
	if q.Hold {
		end = &pgproto3.Flush{}
	}
	err := ss.sendSide(q.SQL, len(q.Params), append(msgs, end), st)
	if name != "" && parse && st.parsed {
		ss.sidePrepared(q, name) // even if it failed later: it exists
	}
	if !q.Hold || err == nil || !st.answered {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// The server discards what follows until a Sync: end the
		// failed transaction now, or the client's statement is lost.
		if serr := ss.runSide("sync", 0, []encoder{&pgproto3.Sync{}}, nil); serr != nil {
			return serr
		}
	}
	return err
}

// describeSide implements SessionInfo.DescribeQuery (clientToServer
// only).
func (ss *session) describeSide(sql string, oids []uint32, rw ResultRewriter) ([]uint32, error) {
	if !ss.sideOK {
		return nil, ErrExecUnavailable
	}
	msgs := []encoder{
		&pgproto3.Parse{Name: sideStatement, Query: sql, ParameterOIDs: oids},
		&pgproto3.Describe{ObjectType: 'S', Name: sideStatement},
		&pgproto3.Close{ObjectType: 'S', Name: sideStatement},
		&pgproto3.Sync{},
	}
	st := &sideQueryState{rw: rw, done: make(chan struct{})}
	if err := ss.sendSide(sql, 0, msgs, st); err != nil {
		return nil, err
	}
	return st.params, st.err
}

// runSide sends one statement the proxy runs and waits for its answer.
func (ss *session) runSide(sql string, params int, msgs []encoder, rw ResultRewriter) error {
	return ss.sendSide(sql, params, msgs, &sideQueryState{rw: rw, done: make(chan struct{})})
}

// sendSide sends msgs and waits for the answer, into st.
func (ss *session) sendSide(sql string, params int, msgs []encoder, st *sideQueryState) error {
	r := &request{kind: sideQuery, side: st, done: []func(){func() { close(st.done) }}}
	ss.q.push(r)
	ss.log.Debug("side query", "sql", sql, "params", params)
	for _, m := range msgs {
		if _, err := writeMsg(ss.bw, nil, m); err != nil {
			return err
		}
	}
	if err := ss.bw.Flush(); err != nil {
		return err
	}
	<-st.done
	if !st.answered {
		return errSideLost
	}
	return st.err
}

// sideAnswer handles one message of the answer to an Exec and reports
// whether the answer is complete (ReadyForQuery).
func (ss *session) sideAnswer(r *request, t byte, msg []byte) bool {
	st := r.side
	fail := func(err error) {
		if st.err == nil {
			st.err = err
		}
	}
	switch t {
	case 't':
		var pd pgproto3.ParameterDescription
		if err := pd.Decode(body(msg)); err != nil {
			fail(fmt.Errorf("server sent a malformed ParameterDescription: %w", err))
		} else {
			st.params = slices.Clone(pd.ParameterOIDs)
		}
	case 'T':
		if st.rw == nil {
			return false // a Describe's
		}
		var rd pgproto3.RowDescription
		if err := rd.Decode(body(msg)); err != nil {
			fail(fmt.Errorf("server sent a malformed RowDescription: %w", err))
		} else if st.err == nil {
			fail(st.rw.RowDescription(&rd))
		}
	case 'D':
		if st.err != nil {
			return false
		}
		if row, err := ss.decodeDataRow(msg); err != nil {
			fail(fmt.Errorf("server sent a malformed DataRow: %w", err))
		} else if err := st.rw.DataRow(row); err != nil && !errors.Is(err, ErrSkipRow) {
			fail(err)
		}
	case 'C':
		if rel, ok := st.rw.(RowReleaser); ok && st.err == nil {
			_, err := rel.Release(true)
			fail(err)
		}
	case 'E':
		var er pgproto3.ErrorResponse
		if err := er.Decode(body(msg)); err != nil {
			fail(fmt.Errorf("server sent a malformed ErrorResponse: %w", err))
		} else {
			st.err = pgconn.ErrorResponseToPgError(&er) // the server's error wins
		}
		if st.hold {
			st.answered = true // nothing follows until a Sync
			return true
		}
	case '3':
		if st.closes--; st.hold && st.closes <= 0 {
			st.answered = true // the CloseComplete that ends it
			return true
		}
	case '1':
		st.parsed = true
	case 'Z':
		ss.txStatus.Store(uint32(body(msg)[0]))
		ss.cycleFailed.Store(false)
		st.answered = true
		return true
	case 'I', '2', 'n':
		// EmptyQueryResponse; ParseComplete, BindComplete,
		// CloseComplete and NoData of a statement with parameters.
	default:
		fail(fmt.Errorf("wire: unexpected message %q in the answer to a statement the proxy ran", t))
	}
	return false
}

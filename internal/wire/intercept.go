package wire

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Interceptor sees each statement of one client session before the server
// does. Its methods are called from the session's client-reading goroutine,
// one at a time. Returning a nil plan forwards the message unchanged.
// Returning an error refuses the statement: the client receives that error
// (a *pgconn.PgError keeps its SQLSTATE; other errors become XX000) exactly
// where the server's answer would have been, and the server sees a
// statement that fails without running anything, so transaction state
// matches what PostgreSQL would do with a failing statement.
type Interceptor interface {
	// Query is called for a simple-protocol Query message.
	Query(sql string) (*QueryPlan, error)
	// Parse is called for an extended-protocol Parse message.
	Parse(name, sql string, paramOIDs []uint32) (*Statement, error)
}

// ParameterObserver may be implemented by an Interceptor to follow the
// server's ParameterStatus reports (e.g. TimeZone and DateStyle after a
// SET), which the proxy needs to read and write values as the server
// would. It is called from the session's server-reading goroutine, before
// the client sees the report; name and value are copies.
type ParameterObserver interface {
	ParameterStatus(name, value string)
}

// PortalDescriber may be implemented by an Interceptor to rewrite the
// RowDescription of a Describe of a portal the client did not Bind: an
// SQL cursor (DECLARE name CURSOR ...), which drivers such as psycopg
// describe by name before they FETCH. It returns nil to relay the
// server's description unchanged.
type PortalDescriber interface {
	DescribePortal(name string) ResultRewriter
}

// TransactionObserver may be implemented by an Interceptor to learn when
// the session is ready for a new statement: txStatus is the status byte of
// ReadyForQuery ('I' idle, 'T' in a transaction block, 'E' in a failed
// one). It is called from the session's server-reading goroutine.
type TransactionObserver interface {
	ReadyForQuery(txStatus byte)
}

// Replanner may be implemented by an Interceptor whose plans depend on
// state that can change under a prepared statement (for the proxy, its
// catalog: a table adopted, a column's onions changed). PlanEpoch
// changes whenever plans made before may be wrong; a statement parsed at
// an older epoch is parsed again (Interceptor.Parse with the client's
// text) before its next Bind, and the server's statement is replaced, so
// that clients never have to prepare again. It is called from the
// session's client-reading goroutine.
type Replanner interface {
	PlanEpoch() uint64
}

// SessionCloser may be implemented by an Interceptor to learn that its
// session has ended (after both connections closed). It is called once,
// from the session's goroutine.
type SessionCloser interface {
	Close()
}

// SessionInfo describes a client session to an InterceptorFactory.
type SessionInfo struct {
	User            string            // authenticated client user
	Database        string            // database the client asked for
	ApplicationName string            // application_name startup parameter
	ServerParams    map[string]string // ParameterStatus values of the backend
	// BackendPID is the process ID of the session's server backend
	// (pg_locks.pid of its locks).
	BackendPID uint32

	// Defer arranges for f to run once the server has answered the
	// statement being rewritten: at the ReadyForQuery that answers the
	// client's Query, or its next Sync for the extended protocol; for a
	// call made from Statement.CopyIn or while COPY FROM STDIN data
	// streams, when the COPY completes. f also runs if the session ends first, and runs exactly
	// once, on whichever goroutine finishes the request.
	//
	// Defer may be called only from the Interceptor's client-goroutine
	// callbacks: Query, Parse, Statement.Bind, Statement.CopyIn,
	// CopyInRewriter.Data and CopyInRewriter.Done. f must not block.
	Defer func(f func())

	// Exec runs the single statement sql on the session's server
	// connection ahead of the client's statement being planned: in the
	// client's transaction block if one is open (an error then fails
	// it, as the client's statement would have), else in an implicit
	// transaction of its own. Its answer goes to rw and never to the
	// client: the RowDescription, every DataRow (what DataRow does to a
	// row, and ErrSkipRow, have no effect) and, when rw is a
	// RowReleaser, Release(true) at the CommandComplete (the rows it
	// returns are dropped). Exec returns the server's error (a
	// *pgconn.PgError) or the first error of rw; after an error of rw
	// the rest of the answer is read and discarded.
	//
	// With args, sql is sent in the extended protocol with args as its
	// binary parameters ($1, $2, ...), so that they appear in no
	// statement text (pg_stat_activity); rw then also gets the
	// RowDescription (or nothing, for a statement returning no rows).
	//
	// Exec may be called from Interceptor.Query, and from
	// Interceptor.Parse when the Parse begins a request cycle (the
	// client's first message after a Sync or Query: nothing unsynced of
	// the client's is at the server); elsewhere it returns
	// ErrExecUnavailable. It blocks until the server has answered,
	// after everything the client sent before.
	// Notices and other asynchronous messages the statement causes reach
	// the client.
	Exec func(sql string, rw ResultRewriter, args ...[]byte) error
	// ExecQuery is Exec for a statement with parameters of any type and
	// format, in a prepared statement of its own. Besides where Exec
	// runs, it runs in Statement.Bind when the Bind cannot be affected
	// by it: nothing of the request cycle has run yet (only Parse and
	// Describe came before it) or the session is in a transaction block.
	ExecQuery func(q SideQuery, rw ResultRewriter) error
	// DescribeQuery returns the parameter types the server infers for
	// sql (ParameterDescription), where Exec runs; rw, if not nil, is
	// given the statement's RowDescription.
	DescribeQuery func(sql string, oids []uint32, rw ResultRewriter) ([]uint32, error)
	// TxEpoch returns a count of the server's answers that may have
	// ended or begun a transaction, and whether nothing the client sent
	// that could run a statement is unanswered (settled). Settled, with
	// the epoch unchanged since a statement the proxy ran (ExecQuery),
	// the next statement runs in that statement's transaction. It is
	// called from the session's client-reading goroutine.
	TxEpoch func() (epoch uint64, settled bool)
}

// InterceptorFactory creates the Interceptor of a new session. It may return
// a nil Interceptor for a transparent session.
type InterceptorFactory func(ctx context.Context, info SessionInfo) (Interceptor, error)

// QueryPlan is the rewritten form of a simple-protocol Query.
type QueryPlan struct {
	// SQL is sent to the server instead of the client's text.
	SQL string
	// Results[i] rewrites the result of the i-th statement in SQL; missing
	// or nil entries are relayed unchanged.
	Results []ResultRewriter
	// CopyIn, if set, rewrites the data of the COPY ... FROM STDIN in SQL.
	CopyIn CopyInRewriter
	// Bound, if set, sends SQL, a single statement, in the extended
	// protocol with these parameters and result formats; the client
	// still gets the answer to its Query.
	Bound *Bound
}

// Bound is the parameters and result formats of a QueryPlan's statement.
type Bound struct {
	ParamOIDs     []uint32
	ParamFormats  []int16
	Params        [][]byte
	ResultFormats []int16
}

// Statement is the rewritten form of a prepared statement (Parse). Any nil
// field means "unchanged".
type Statement struct {
	// SQL and ParamOIDs are sent to the server in the Parse message.
	SQL       string
	ParamOIDs []uint32
	// Bind rewrites a Bind message for this statement in place, e.g. to
	// encrypt parameters. The message's slices are valid only during the call.
	Bind func(b *pgproto3.Bind) error
	// DescribeParams rewrites the ParameterDescription the server returns
	// into the one the client sees.
	DescribeParams func(pd *pgproto3.ParameterDescription) error
	// Results returns the rewriter for the rows of a portal bound with the
	// given result format codes (nil formats for Describe of the statement).
	Results func(resultFormats []int16) ResultRewriter
	// CopyIn, if set, returns the rewriter for the data of one execution of
	// a COPY ... FROM STDIN statement.
	CopyIn func() CopyInRewriter
	// OnBind, if set, runs at each Bind of the statement before anything
	// else of it (it may call SessionInfo.Defer), even when the Bind is
	// forwarded unchanged.
	OnBind func()
}

// ErrSkipRow is returned by ResultRewriter.DataRow to drop a row.
var ErrSkipRow = errors.New("wire: skip this row")

// Silent may be implemented by the ResultRewriter of a statement the
// Interceptor added to a Query's SQL (one returning no rows, such as the
// DDL of a CREATE TABLE AS): when Silent returns true its CommandComplete
// is not relayed (its TagRewriter still runs), so the client sees the
// answers of its own statements only. Its errors and notices are.
type Silent interface {
	Silent() bool
}

// CopyOut may be implemented by the ResultRewriter of a COPY ... TO
// STDOUT the Interceptor runs as a query (to decrypt its rows): the
// client gets the query's answer as COPY data. After RowDescription,
// CopyOutStart gives the CopyOutResponse sent instead, and data to send
// first (a header line, or nil); after each DataRow the client gets
// CopyData with CopyOutRow's bytes instead; before CommandComplete,
// CopyDone. Only in the simple protocol.
type CopyOut interface {
	CopyOutStart(rd *pgproto3.RowDescription) (*pgproto3.CopyOutResponse, []byte, error)
	// CopyOutRow appends row's data to dst.
	CopyOutRow(dst []byte, row *pgproto3.DataRow) ([]byte, error)
}

// TagRewriter may be implemented by a ResultRewriter to change the command
// tag of its statement's CommandComplete, e.g. to report "CREATE TABLE"
// for the DO block the proxy ran instead. tag is valid only during the call.
type TagRewriter interface {
	CommandTag(tag []byte) []byte
}

// RowReleaser may be implemented by a ResultRewriter that holds rows back,
// e.g. to sort or aggregate them: its DataRow returns ErrSkipRow for a row
// it keeps. After each DataRow call the session sends the rows
// Release(false) returns (after the row DataRow rewrote, if any), and
// before the statement's CommandComplete those Release(true) returns:
// then every row still held must be released. Rows held when the
// statement fails are dropped. The rows are valid until the next call;
// Release is called from the server-reading goroutine.
//
// An error from Release(true) that is a *pgconn.PgError replaces the
// statement's CommandComplete with that error (the rows returned with it
// are not sent); any other error ends the session.
type RowReleaser interface {
	Release(atEnd bool) ([]*pgproto3.DataRow, error)
}

// ReleasesAtSuspend may be implemented by a RowReleaser that holds rows
// only to work on them: it gives every row of the server's, in the
// server's order. When ReleasesAtSuspend returns true, an Execute's row
// limit goes to the server as sent, and at PortalSuspended the session
// calls Release(true) and sends the rows before it. The portal of any
// other RowReleaser runs to completion at its first Execute with a row
// limit, and the session hands out its rows by the limits (rowlimit.go).
type ReleasesAtSuspend interface {
	ReleasesAtSuspend() bool
}

// RowKeeper may be implemented by a ResultRewriter to bound the rows the
// session keeps for it: KeepRow is called for each row kept for an
// Execute with a row limit (rowlimit.go) before it is kept. row is valid
// only during the call. An error fails the statement.
type RowKeeper interface {
	KeepRow(row *pgproto3.DataRow) error
}

// CopyInRewriter rewrites the data a client sends for COPY ... FROM STDIN,
// e.g. to encrypt it row by row. It is called from the session's
// client-reading goroutine, except CopyInResponse, which is called from
// the server-reading goroutine before any Data call.
//
// A row may be split across CopyData messages: Data must keep incomplete
// input until the next call. An error refuses the COPY: the server is sent
// CopyFail (so nothing is stored), the rest of the client's data is
// discarded, and the client receives the error.
type CopyInRewriter interface {
	// CopyInResponse rewrites the server's CopyInResponse (e.g. the column
	// count) into what the client expects.
	CopyInResponse(r *pgproto3.CopyInResponse) error
	// Data appends the rewritten form of src to dst. src is valid only
	// during the call.
	Data(dst, src []byte) ([]byte, error)
	// Done appends what remains at CopyDone to dst.
	Done(dst []byte) ([]byte, error)
}

// ResultRewriter rewrites the rows of one statement's result before the
// client sees them. It is called from the session's server-reading
// goroutine.
//
// DataRow may return ErrSkipRow to drop the row: the client does not see
// it (the rewriter then also reports the right row count in the command
// tag, as a TagRewriter).
type ResultRewriter interface {
	// RowDescription rewrites the row description in place.
	RowDescription(rd *pgproto3.RowDescription) error
	// DataRow rewrites one row's values in place. The row, its Values
	// slice and the values alias the session's buffers and are valid only
	// during the call (a rewriter may replace Values with a slice of its
	// own).
	DataRow(row *pgproto3.DataRow) error
}

// RowDescriptionBytes is implemented by a ResultRewriter that can
// rewrite the server's RowDescription message as bytes, remembering the
// last one: a statement executed again is described again the same way.
// RowDescriptionBytes returns the message to send for msg (whole, type
// byte included), or nil to have RowDescription rewrite it. The result
// is read-only.
type RowDescriptionBytes interface {
	RowDescriptionBytes(msg []byte) []byte
}

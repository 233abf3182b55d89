package wire

import (
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/jackc/pgx/v5/pgconn"
)

// panicError is a panic of an Interceptor callback, turned into an error
// of the statement it was handling.
type panicError struct {
	value any
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

// internalError is what the client sees for a panic: the statement fails
// with XX000; the value and stack go to the proxy's log only (they may
// hold data).
var internalError = &pgconn.PgError{Severity: "ERROR", Code: codeInternal,
	Message: "internal error in the proxy while handling this statement",
	Hint:    "The proxy's log has the details; the session goes on."}

// guard runs f, turning a panic into an error: one statement's bug must
// not end the session, let alone the proxy. The stack is logged.
func guard(log *slog.Logger, what string, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("recovered from a panic", "in", what, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = internalError
		}
	}()
	return f()
}

// protect runs one of the session's goroutines; a panic the callbacks'
// guards did not catch ends this session only (its connections close),
// never the proxy.
func (ss *session) protect(what string, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			ss.log.Error("session ended by a panic", "in", what, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			ss.closeBackend()
			ss.client.Close()
			err = fmt.Errorf("wire: panic in %s: %v", what, v)
		}
	}()
	return f()
}

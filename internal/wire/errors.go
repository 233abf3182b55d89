package wire

import (
	"bufio"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// SQLSTATE codes the proxy itself raises.
const (
	codeFeatureNotSupported  = "0A000"
	codeProtocolViolation    = "08P01"
	codeConnectionFailure    = "08006"
	codeInvalidPassword      = "28P01"
	codeInvalidAuthorization = "28000"
	codeAdminShutdown        = "57P01"
	codeInternal             = "XX000"
	codeTooManyConnections   = "53300"
)

// errorResponse converts err into the ErrorResponse a client sees. A
// *pgconn.PgError keeps all its fields; anything else becomes an internal
// error carrying err's text.
func errorResponse(err error, severity string) *pgproto3.ErrorResponse {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// The caller's severity, whatever pe says: a statement the proxy
		// refuses because of a server's FATAL on one of its own
		// connections must not look fatal to the client's session.
		sev := severity
		return &pgproto3.ErrorResponse{
			Severity: sev, SeverityUnlocalized: sev, Code: pe.Code, Message: pe.Message,
			Detail: pe.Detail, Hint: pe.Hint, Position: pe.Position, SchemaName: pe.SchemaName,
			TableName: pe.TableName, ColumnName: pe.ColumnName, DataTypeName: pe.DataTypeName,
			ConstraintName: pe.ConstraintName,
		}
	}
	return &pgproto3.ErrorResponse{Severity: severity, SeverityUnlocalized: severity, Code: codeInternal, Message: err.Error()}
}

func fatal(code, msg string) *pgproto3.ErrorResponse {
	return &pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg}
}

// sendFatal writes a FATAL error and flushes; errors are ignored because the
// connection is being closed anyway.
func sendFatal(w *bufio.Writer, e *pgproto3.ErrorResponse) {
	b, err := e.Encode(nil)
	if err == nil {
		_, _ = w.Write(b)
		_ = w.Flush()
	}
}

// isFatalError reports whether the body of an ErrorResponse has severity
// FATAL or PANIC, reading only the severity fields.
func isFatalError(body []byte) bool {
	for len(body) > 0 && body[0] != 0 {
		typ := body[0]
		end := 1
		for end < len(body) && body[end] != 0 {
			end++
		}
		val := string(body[1:end])
		if typ == 'V' || typ == 'S' {
			return val == "FATAL" || val == "PANIC"
		}
		if end >= len(body) {
			break
		}
		body = body[end+1:]
	}
	return false
}

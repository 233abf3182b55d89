package pgcopy

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATEs of the errors this package returns.
const (
	codeSyntax        = "42601" // syntax_error
	codeInvalidParam  = "22023" // invalid_parameter_value
	codeNotSupported  = "0A000" // feature_not_supported
	codeBadCopyFormat = "22P04" // bad_copy_file_format
	codeBadEncoding   = "22021" // character_not_in_repertoire
	codeLimitExceeded = "54000" // program_limit_exceeded
	codeInvalidColRef = "42P10" // invalid_column_reference
)

// pgErr returns an ERROR with the given SQLSTATE.
func pgErr(code, format string, a ...any) *pgconn.PgError {
	return &pgconn.PgError{Severity: "ERROR", Code: code, Message: fmt.Sprintf(format, a...)}
}

package rewrite

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// Refused is a statement, or a part of one, the proxy cannot run
// correctly and securely: the client gets it as SQLSTATE 0A000, its
// Message naming the construct and the column, with Detail and Hint
// where they help. Planners tell it by its type from the statement's own
// errors and from PostgreSQL's 0A000s ("interval units ... not
// supported"), which a query computed elsewhere raises alike.
type Refused struct {
	pgconn.PgError
}

// Unwrap is the error the client gets: errors.As finds it as a
// *pgconn.PgError, and a Detail or Hint set through it stays.
func (r *Refused) Unwrap() error { return &r.PgError }

// Refusal returns a *Refused whose Message is the formatted text.
func Refusal(format string, a ...any) error {
	return Refuse(fmt.Sprintf(format, a...), "", "")
}

// Refuse returns a *Refused with its Message, Detail and Hint.
func Refuse(message, detail, hint string) *Refused {
	return &Refused{pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: message, Detail: detail, Hint: hint}}
}

// IsRefusal reports whether err is, or wraps, a *Refused.
func IsRefusal(err error) bool {
	var r *Refused
	return errors.As(err, &r)
}

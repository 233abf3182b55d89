package onion

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATE codes used by this package, as PostgreSQL uses them.
const (
	codeFeatureNotSupported     = "0A000"
	codeProtocolViolation       = "08P01"
	codeStringRightTruncation   = "22001"
	codeNumericOutOfRange       = "22003"
	codeInvalidDatetimeFormat   = "22007"
	codeDatetimeFieldOverflow   = "22008" // also ERRCODE_DATETIME_VALUE_OUT_OF_RANGE
	codeInvalidTZDisplacement   = "22009"
	codeCharacterNotInRepertory = "22021"
	codeInvalidParameterValue   = "22023"
	codeInvalidTextRep          = "22P02"
	codeInvalidBinaryRep        = "22P03"
)

// pgErr returns an ERROR-level *pgconn.PgError.
func pgErr(code, format string, args ...any) *pgconn.PgError {
	return &pgconn.PgError{
		Severity:            "ERROR",
		SeverityUnlocalized: "ERROR",
		Code:                code,
		Message:             fmt.Sprintf(format, args...),
	}
}

// refusedDetail marks errors for inputs that PostgreSQL may accept but that
// this package refuses on purpose (a form it does not implement, or one whose
// meaning depends on the time of evaluation). Tests use it to tell refusals
// from PostgreSQL-compatible errors.
const refusedDetail = "pgonion accepts only a subset of PostgreSQL's input forms for values of encrypted columns"

// refuse returns a refusal error: code is 22007 for an unsupported input
// form, 0A000 for an input that cannot be evaluated exactly in the proxy.
func refuse(code, format string, args ...any) *pgconn.PgError {
	e := pgErr(code, format, args...)
	e.Detail = refusedDetail + "."
	return e
}

// IsRefusal reports whether err is a deliberate refusal of an input form
// that PostgreSQL itself might accept (see the package documentation for the
// list), as opposed to an error PostgreSQL would also raise.
func IsRefusal(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && len(pe.Detail) >= len(refusedDetail) && pe.Detail[:len(refusedDetail)] == refusedDetail
}

// ErrDecrypt is the only error Decrypt and the other decryption methods
// return for a ciphertext that does not decrypt (wrong key, wrong column or
// row, modified or truncated ciphertext). It does not say which check failed.
var ErrDecrypt = errors.New("onion: ciphertext does not decrypt")

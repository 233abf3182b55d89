package exec

import (
	"github.com/pgonion/pgonion/internal/pgnumeric"
)

// Decimal is an exact numeric value for the proxy's own arithmetic
// (split execution), with PostgreSQL's rules (internal/pgnumeric).
type Decimal = pgnumeric.Decimal

func decimalFromInt(i int64) Decimal { return pgnumeric.FromInt64(i) }

// parseDecimal reads numeric_out's text ("-12.50", "NaN", "Infinity").
func parseDecimal(s string) (Decimal, error) { return pgnumeric.Parse(s) }

var errDivisionByZero = divisionByZero()

func divisionByZero() error {
	_, err := pgnumeric.FromInt64(1).Div(pgnumeric.FromInt64(0))
	return err
}

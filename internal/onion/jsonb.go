package onion

import (
	"unicode/utf8"

	"github.com/pgonion/pgonion/internal/pgjson"
)

// A jsonb value is stored as jsonb_out prints it: object keys sorted (by
// length, then bytes) with the last of duplicate keys kept, numbers as
// numeric_out prints them, strings re-escaped, ", " and ": " between
// items. PostgreSQL compares jsonb numbers as numerics (1.0 = 1): the
// equality key prints them without trailing fraction zeros, and the
// exact text is kept in the Val copy.

// parseJSONText is json_in: the text as given, once it parses as JSON
// (input the jsonb parser refuses is refused, not misread).
func parseJSONText(s string) (Value, error) {
	if !utf8.ValidString(s) || !pgjson.Valid(s) {
		return Value{}, refuse(codeInvalidTextRep, "invalid input syntax for type json")
	}
	return TextValue(s), nil
}

// parseJSONBText is jsonb_in for well-formed JSON; other input is refused.
func parseJSONBText(s string) (Value, error) {
	v, err := pgjson.Parse(s)
	if err != nil {
		return Value{}, refuse(codeInvalidTextRep, "invalid input syntax for type json")
	}
	return TextValue(v.String()), nil
}

// jsonbKey is the equality key of a stored jsonb text.
func jsonbKey(stored string) []byte {
	v, err := pgjson.Parse(stored)
	if err != nil {
		return []byte(stored)
	}
	return v.AppendEqualityKey(nil)
}

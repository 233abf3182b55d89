package exec

import "github.com/pgonion/pgonion/internal/onion"

// TypeOfOID is the type of a plain column the proxy computes over.
func TypeOfOID(oid uint32) (onion.Type, bool) {
	switch oid {
	case 21:
		return onion.Type{Base: onion.SmallInt}, true
	case 23:
		return TypeInt4, true
	case 20:
		return TypeInt8, true
	case 1700:
		return TypeNumeric, true
	case 25, 1043:
		return TypeText, true
	case 1042:
		return onion.Type{Base: onion.Char}, true
	case 1082:
		return TypeDate, true
	case 16:
		return TypeBool, true
	case 701:
		return TypeFloat8, true
	case 1083:
		return onion.Type{Base: onion.Time}, true
	case 1114:
		return onion.Type{Base: onion.Timestamp}, true
	case 1184:
		return onion.Type{Base: onion.Timestamptz}, true
	case 1186:
		return onion.Type{Base: onion.Interval}, true
	case 2950:
		return onion.Type{Base: onion.UUID}, true
	case 1009: // text[]
		return TypeTextArray, true
	}
	return onion.Type{}, false
}

// SubqueryTypeNames names the types a subquery's result may have for
// the proxy to substitute it (ir.SubqueryResult.Types).
var SubqueryTypeNames = map[uint32]string{16: "bool", 20: "int8", 21: "int2", 23: "int4", 25: "text", 27: "tid", 1042: "bpchar", 1043: "varchar",
	1082: "date", 1114: "timestamp", 1184: "timestamptz", 1700: "numeric"}

// TypeOfName is the type of a lookup's column (ir.Lookup), named as
// in subqueryTypeNames.
func TypeOfName(name string) (onion.Type, bool) {
	for oid, n := range SubqueryTypeNames {
		if n == name {
			return TypeOfOID(oid)
		}
	}
	return onion.Type{}, false
}

package onion

import (
	"fmt"
	"strings"
)

// Base is the base type of a logical column.
type Base uint8

// The supported base types.
const (
	Invalid Base = iota
	SmallInt
	Integer
	BigInt
	Numeric
	Text
	Varchar
	Char // bpchar: character(n), or bpchar without a length
	Date
	Timestamp
	Timestamptz
	Boolean
	Bytea
	UUID
	Float8
	Time // time without time zone
	Inet
	Interval
	JSONB
	Float4 // real: its value widened to double precision (exactly)
	Cidr   // stored as inet is
	Array  // a one-dimensional array of Elem (array.go)
	Enum   // an enum type's label (enum.go)
	TimeTZ // time with time zone (timetz.go)
	JSON   // json: the text as given, validated
)

// Limits of type modifiers (PostgreSQL 15).
const (
	maxNumericPrecision = 1000
	minNumericScale     = -1000
	maxNumericScale     = 1000
	maxCharLength       = 10485760
)

// Type is the logical (plaintext) type of a column, as the client sees it.
//
// Precision and Scale are numeric(p,s)'s modifiers; both 0 for an
// unconstrained numeric. PostgreSQL 15 allows a scale from -1000 to 1000
// (also greater than the precision, or negative: numeric(2,-3) rounds to
// thousands).
//
// Length is varchar(n)'s or character(n)'s n. For Varchar, 0 means no limit.
// For Char, 0 means bpchar without a length (blank-padded, unlimited: what
// the literal 'x'::bpchar has); character without a length is character(1),
// and TypeFromNames gives Length 1 for it.
//
// For an Array, Elem is the element's base and the modifiers are the
// element's. For an Enum, EnumName is the type's name as format_type
// prints it and EnumOID its OID.
type Type struct {
	Base             Base
	Precision, Scale int
	Length           int
	Elem             Base
	EnumName         string
	EnumOID          uint32
}

// TypeFromNames returns the Type of a pg_query TypeName given its names
// (["pg_catalog","int4"], ["text"], ...) and its integer modifiers (typmods,
// e.g. [10, 2] for numeric(10,2)). The caller must refuse array types itself
// (a TypeName with arrayBounds); internal array names such as "_int4" are
// refused here.
//
// The SQL spellings "integer", "int", "smallint", "bigint", "boolean",
// "decimal", "character varying", "character", "timestamp without time zone"
// and "timestamp with time zone" are accepted as well. serial, bigserial and
// smallserial are refused (they are not types: the caller decides how to
// handle the sequence and declares the column as the integer type). The
// single-byte internal type "char" (the name char without pg_catalog, as
// pg_query gives for a quoted "char") is refused: character is
// ["pg_catalog","bpchar"] with typmod 1.
func TypeFromNames(names []string, typmods []int32) (Type, error) {
	if len(names) == 0 {
		return Type{}, fmt.Errorf("onion: empty type name")
	}
	name := strings.ToLower(names[len(names)-1])
	qualified := false
	switch len(names) {
	case 1:
	case 2:
		if !strings.EqualFold(names[0], "pg_catalog") {
			return Type{}, fmt.Errorf("onion: type %q is not supported for encrypted columns", strings.Join(names, "."))
		}
		qualified = true
	default:
		return Type{}, fmt.Errorf("onion: type %q is not supported for encrypted columns", strings.Join(names, "."))
	}
	full := strings.Join(names, ".")
	noMods := func(t Type) (Type, error) {
		if len(typmods) != 0 {
			return Type{}, fmt.Errorf("onion: type modifier is not allowed for type %s", t)
		}
		return t, nil
	}
	switch name {
	case "int2", "smallint":
		return noMods(Type{Base: SmallInt})
	case "int4", "integer", "int":
		return noMods(Type{Base: Integer})
	case "int8", "bigint":
		return noMods(Type{Base: BigInt})
	case "numeric", "decimal":
		return numericType(typmods)
	case "text":
		return noMods(Type{Base: Text})
	case "varchar", "character varying":
		return charType(Varchar, typmods, 0)
	case "bpchar":
		return charType(Char, typmods, 0)
	case "character":
		return charType(Char, typmods, 1)
	case "char":
		if !qualified {
			return Type{}, fmt.Errorf(`onion: type "char" (the single-byte internal type) is not supported for encrypted columns`)
		}
		return charType(Char, typmods, 1)
	case "date":
		return noMods(Type{Base: Date})
	case "timestamp", "timestamp without time zone":
		if len(typmods) != 0 {
			return Type{}, fmt.Errorf("onion: timestamp(p) is not supported for encrypted columns yet; use timestamp")
		}
		return Type{Base: Timestamp}, nil
	case "timestamptz", "timestamp with time zone":
		if len(typmods) != 0 {
			return Type{}, fmt.Errorf("onion: timestamp(p) with time zone is not supported for encrypted columns yet; use timestamp with time zone")
		}
		return Type{Base: Timestamptz}, nil
	case "bool", "boolean":
		return noMods(Type{Base: Boolean})
	case "bytea":
		return noMods(Type{Base: Bytea})
	case "uuid":
		return noMods(Type{Base: UUID})
	case "inet":
		return noMods(Type{Base: Inet})
	case "cidr":
		return noMods(Type{Base: Cidr})
	case "jsonb":
		return noMods(Type{Base: JSONB})
	case "json":
		return noMods(Type{Base: JSON})
	case "interval":
		if len(typmods) != 0 {
			return Type{}, fmt.Errorf("onion: interval with fields or a precision is not supported for encrypted columns yet; use interval")
		}
		return Type{Base: Interval}, nil
	case "timetz", "time with time zone":
		if len(typmods) != 0 {
			return Type{}, fmt.Errorf("onion: time(p) with time zone is not supported for encrypted columns yet; use time with time zone")
		}
		return Type{Base: TimeTZ}, nil
	case "time", "time without time zone":
		if len(typmods) != 0 {
			return Type{}, fmt.Errorf("onion: time(p) is not supported for encrypted columns yet; use time")
		}
		return Type{Base: Time}, nil
	case "float8", "double precision":
		return noMods(Type{Base: Float8})
	case "float4", "real":
		return noMods(Type{Base: Float4})
	case "float":
		// float(p): real for p <= 24, double precision up to 53.
		switch {
		case len(typmods) == 0 || len(typmods) == 1 && typmods[0] >= 25 && typmods[0] <= 53:
			return Type{Base: Float8}, nil
		case len(typmods) == 1 && typmods[0] >= 1 && typmods[0] <= 24:
			return Type{Base: Float4}, nil
		}
		return Type{}, fmt.Errorf("onion: precision for type float must be between 1 and 53")
	case "serial", "serial4", "bigserial", "serial8", "smallserial", "serial2":
		return Type{}, fmt.Errorf("onion: %s is not supported for encrypted columns: declare the column with its integer type (and a sequence default if needed)", name)
	}
	if strings.HasPrefix(name, "_") {
		return Type{}, fmt.Errorf("onion: array type %q is not supported for encrypted columns", full)
	}
	return Type{}, fmt.Errorf("onion: type %q is not supported for encrypted columns", full)
}

func numericType(typmods []int32) (Type, error) {
	switch len(typmods) {
	case 0:
		return Type{Base: Numeric}, nil
	case 1, 2:
		p := int(typmods[0])
		s := 0
		if len(typmods) == 2 {
			s = int(typmods[1])
		}
		if p < 1 || p > maxNumericPrecision {
			return Type{}, fmt.Errorf("onion: NUMERIC precision %d must be between 1 and %d", p, maxNumericPrecision)
		}
		if s < minNumericScale || s > maxNumericScale {
			return Type{}, fmt.Errorf("onion: NUMERIC scale %d must be between %d and %d", s, minNumericScale, maxNumericScale)
		}
		return Type{Base: Numeric, Precision: p, Scale: s}, nil
	}
	return Type{}, fmt.Errorf("onion: invalid NUMERIC type modifier")
}

func charType(b Base, typmods []int32, dflt int) (Type, error) {
	name := "varchar"
	if b == Char {
		name = "char"
	}
	switch len(typmods) {
	case 0:
		return Type{Base: b, Length: dflt}, nil
	case 1:
		n := int(typmods[0])
		if n < 1 {
			return Type{}, fmt.Errorf("onion: length for type %s must be at least 1", name)
		}
		if n > maxCharLength {
			return Type{}, fmt.Errorf("onion: length for type %s cannot exceed %d", name, maxCharLength)
		}
		return Type{Base: b, Length: n}, nil
	}
	return Type{}, fmt.Errorf("onion: invalid type modifier")
}

// Check reports whether t is a valid Type (a supported base and valid
// modifiers).
func (t Type) Check() error {
	if t.Base != Array && t.Elem != Invalid || t.Base != Enum && (t.EnumName != "" || t.EnumOID != 0) {
		return fmt.Errorf("onion: invalid type")
	}
	switch t.Base {
	case Enum:
		if t.EnumName == "" || t.EnumOID == 0 || t.Precision != 0 || t.Scale != 0 || t.Length != 0 {
			return fmt.Errorf("onion: invalid enum type")
		}
	case Array:
		if t.Elem == Array {
			return fmt.Errorf("onion: invalid array type")
		}
		_, err := ArrayOf(t.Element())
		return err
	case SmallInt, Integer, BigInt, Text, Date, Timestamp, Timestamptz, Boolean, Bytea, UUID, Float8, Float4, Time, TimeTZ, Inet, Cidr, Interval, JSONB, JSON:
		if t.Precision != 0 || t.Scale != 0 || t.Length != 0 {
			return fmt.Errorf("onion: type %s takes no modifier", t.baseName())
		}
	case Numeric:
		if t.Length != 0 {
			return fmt.Errorf("onion: invalid numeric type")
		}
		if t.Precision == 0 && t.Scale == 0 {
			return nil
		}
		_, err := numericType([]int32{int32(t.Precision), int32(t.Scale)})
		return err
	case Varchar, Char:
		if t.Precision != 0 || t.Scale != 0 || t.Length < 0 || t.Length > maxCharLength {
			return fmt.Errorf("onion: invalid %s type", t.baseName())
		}
	default:
		return fmt.Errorf("onion: invalid type")
	}
	return nil
}

// numericConstrained reports whether t is numeric(p,s).
func (t Type) numericConstrained() bool { return t.Base == Numeric && t.Precision != 0 }

// OID returns the PostgreSQL type OID the client sees.
func (t Type) OID() uint32 {
	switch t.Base {
	case Array:
		return arrayOIDs[t.Elem]
	case Enum:
		return t.EnumOID
	case SmallInt:
		return 21
	case Integer:
		return 23
	case BigInt:
		return 20
	case Numeric:
		return 1700
	case Text:
		return 25
	case Varchar:
		return 1043
	case Char:
		return 1042
	case Date:
		return 1082
	case Timestamp:
		return 1114
	case Timestamptz:
		return 1184
	case Boolean:
		return 16
	case Bytea:
		return 17
	case UUID:
		return 2950
	case Float8:
		return 701
	case Float4:
		return 700
	case Time:
		return 1083
	case TimeTZ:
		return 1266
	case Inet:
		return 869
	case Cidr:
		return 650
	case Interval:
		return 1186
	case JSONB:
		return 3802
	case JSON:
		return 114
	}
	return 0
}

// Typmod returns the type modifier as in RowDescription: -1 when none;
// ((p << 16) | (s & 0x7ff)) + 4 for numeric(p,s); n + 4 for varchar(n) and
// character(n).
func (t Type) Typmod() int32 {
	switch t.Base {
	case Array:
		return t.Element().Typmod()
	case Numeric:
		if t.numericConstrained() {
			return int32((t.Precision<<16)|(t.Scale&0x7ff)) + 4
		}
	case Varchar, Char:
		if t.Length > 0 {
			return int32(t.Length) + 4
		}
	}
	return -1
}

// Size returns the DataTypeSize of RowDescription (pg_type.typlen): -1 for
// variable-length types.
func (t Type) Size() int16 {
	switch t.Base {
	case SmallInt:
		return 2
	case Integer, Date, Float4, Enum:
		return 4
	case BigInt, Timestamp, Timestamptz, Float8, Time:
		return 8
	case Boolean:
		return 1
	case UUID, Interval:
		return 16
	case TimeTZ:
		return 12
	}
	return -1
}

// BaseName is the type's name without modifiers, as PostgreSQL prints it
// in messages: "integer", "character varying", "timestamp with time zone".
func (t Type) BaseName() string { return t.baseName() }

// baseName is the name PostgreSQL uses for the type in input error messages
// (format_type without modifiers).
func (t Type) baseName() string {
	switch t.Base {
	case Array:
		return t.Element().baseName() + "[]"
	case Enum:
		return t.EnumName
	case SmallInt:
		return "smallint"
	case Integer:
		return "integer"
	case BigInt:
		return "bigint"
	case Numeric:
		return "numeric"
	case Text:
		return "text"
	case Varchar:
		return "character varying"
	case Char:
		if t.Length == 0 {
			return "bpchar"
		}
		return "character"
	case Date:
		return "date"
	case Timestamp:
		return "timestamp without time zone"
	case Timestamptz:
		return "timestamp with time zone"
	case Boolean:
		return "boolean"
	case Bytea:
		return "bytea"
	case UUID:
		return "uuid"
	case Float8:
		return "double precision"
	case Float4:
		return "real"
	case Time:
		return "time without time zone"
	case TimeTZ:
		return "time with time zone"
	case Inet:
		return "inet"
	case Cidr:
		return "cidr"
	case Interval:
		return "interval"
	case JSONB:
		return "jsonb"
	case JSON:
		return "json"
	}
	return "invalid"
}

// String returns the type in SQL, as PostgreSQL's format_type prints it:
// "numeric(10,2)", "character varying(20)", "character(3)", "timestamp
// with time zone", ...
func (t Type) String() string {
	switch t.Base {
	case Array:
		return t.Element().String() + "[]"
	case Enum:
		return t.EnumName
	case Numeric:
		if t.numericConstrained() {
			return fmt.Sprintf("numeric(%d,%d)", t.Precision, t.Scale)
		}
	case Varchar, Char:
		if t.Length > 0 {
			return fmt.Sprintf("%s(%d)", t.baseName(), t.Length)
		}
	}
	return t.baseName()
}

// isText reports whether t is one of the character string types.
func (t Type) isText() bool {
	return t.Base == Text || t.Base == Varchar || t.Base == Char
}

// Capability is an operation class the server can evaluate on a column's
// ciphertexts, each served by one onion.
type Capability string

// The capabilities.
const (
	Eq     Capability = "eq"     // =, <>, IN, GROUP BY, DISTINCT (Eq onion, DET layer)
	Ord    Capability = "ord"    // <, <=, >, >=, BETWEEN, ORDER BY, MIN, MAX (Ord onion, OPE layer; a prefix filter for texts)
	Add    Capability = "add"    // SUM, AVG (Add onion, HOM layer)
	Search Capability = "search" // LIKE, ILIKE prefilter (Search onion)
)

// Capabilities returns the capabilities the type supports:
//
//	smallint, integer, bigint          eq, ord, add
//	numeric(p,s), p <= 18              eq, ord, add
//	numeric(p,s), 18 < p <= 300        eq, add
//	numeric(p,s), p > 300              eq
//	numeric (unconstrained)            eq
//	date, timestamp, timestamptz       eq, ord
//	boolean                            eq, ord
//	text, varchar(n), character(n)     eq, ord, search
//	real, double precision, time       eq, ord
//	enums                              eq, ord (by the labels' sort order)
//	bytea, uuid, inet, cidr, interval  eq
//	jsonb, arrays                      eq
//	json                               eq, to store it (never peeled:
//	                                   PostgreSQL has no = for json)
//
// Ord on text types orders by an 8-byte prefix (OrdIsPrefix): comparisons
// on the server are a superset filter and the proxy checks the candidates
// and breaks ties. Unconstrained numeric has no fixed scale, so no integer
// form for OPE or Paillier.
func (t Type) Capabilities() []Capability {
	switch t.Base {
	case SmallInt, Integer, BigInt:
		return []Capability{Eq, Ord, Add}
	case Numeric:
		switch {
		case !t.numericConstrained():
			return []Capability{Eq}
		case t.Precision <= maxOrdNumericPrecision:
			return []Capability{Eq, Ord, Add}
		case t.Precision <= maxAddNumericPrecision:
			return []Capability{Eq, Add}
		}
		return []Capability{Eq}
	case Date, Timestamp, Timestamptz, Boolean, Float8, Float4, Time, TimeTZ, Enum:
		return []Capability{Eq, Ord}
	case Text, Varchar, Char:
		return []Capability{Eq, Ord, Search}
	case Bytea, UUID, Inet, Cidr, Interval, JSONB, Array:
		return []Capability{Eq}
	case JSON:
		// The Eq onion stores the value; PostgreSQL has no = for json,
		// so the proxy never peels it.
		return []Capability{Eq}
	}
	return nil
}

// Supports reports whether t supports capability c.
func (t Type) Supports(c Capability) bool {
	for _, x := range t.Capabilities() {
		if x == c {
			return true
		}
	}
	return false
}

const (
	// maxOrdNumericPrecision: numeric(p,s) values scaled by 10^s are
	// integers below 10^p in magnitude, which fit an int64 for p <= 18.
	maxOrdNumericPrecision = 18
	// maxAddNumericPrecision bounds the scaled integers added with Paillier
	// (below 10^300 < 2^997), so that sums of up to 2^64 of them stay far
	// below the NaN marker (see addNaN).
	maxAddNumericPrecision = 300
)

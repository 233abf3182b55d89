package onion

// Join groups: columns compared with each other on the server share the
// keys of their DET and OPE layers (NewColumnJoined). Whether the shared
// ciphertexts of two columns then compare as PostgreSQL compares their
// values depends on the types: EqJoinable and OrdJoinable tell, without
// keys, so a catalog can refuse a join group that would give wrong
// answers.

// eqJoinClass returns the class of types whose EqualityKeys agree with
// PostgreSQL's = between them: two types of one class give equal keys
// exactly for values the cross-type = finds equal.
func eqJoinClass(t Type) int {
	switch t.Base {
	case SmallInt, Integer, BigInt:
		return 1 // one 8-byte encoding for all widths
	case Numeric:
		return 2 // canonical decimal text, whatever the scale
	case Text, Varchar, Char:
		// character keys drop the padding, as the implicit cast of
		// character to text does when it is compared with text (see
		// textJoinable for varchar).
		return 3
	case Date:
		return 4
	case Timestamp:
		return 5
	case Timestamptz:
		return 6
	case Boolean:
		return 7
	case Bytea:
		return 8
	case UUID:
		return 9
	case Float8, Float4:
		return 10 // a real widens to double precision exactly (float48eq)
	case Time:
		return 11
	case Inet, Cidr:
		return 12 // cidr = inet compares as inet (network_eq)
	case Interval:
		return 13
	case JSONB:
		return 14
	case Array:
		return 100 + eqJoinClass(t.Element())
	case Enum:
		return 200 // of one enum type only (sameEnum)
	case TimeTZ:
		return 15
	}
	return 0
}

// sameEnum reports whether a and b are not enums, or the same enum type:
// PostgreSQL compares no two enum types with each other.
func sameEnum(a, b Type) bool {
	return a.Base != Enum && b.Base != Enum || a == b
}

// EqJoinable reports whether columns of types a and b in one join group
// give equal DET ciphertexts (EqDET, the Eq onion at DET) exactly for the
// pairs of values that PostgreSQL's a = b finds equal, so an equi-join can
// run on the server: both integer types (any widths), both numeric (any
// precision and scale), both character string types except varchar with
// character (text with varchar, text with character: a character value
// compared with text loses its padding, as its key does; character with
// character), or the same type for date, timestamp, timestamp with time
// zone, boolean and bytea. An integer and a numeric are not (their keys
// differ), nor are date and timestamp, timestamp and timestamptz (the
// server converts with the session's time zone), or varchar and character
// (the server compares them as character, ignoring the varchar's trailing
// spaces; a join written a.v::text = b.c would be joinable, as text and
// character). The types are those of the operands as the server resolves
// the operator: explicit casts in the query change them.
func EqJoinable(a, b Type) bool {
	if a.Check() != nil || b.Check() != nil {
		return false
	}
	return eqJoinClass(a) == eqJoinClass(b) && textJoinable(a, b) && sameEnum(a, b)
}

// textJoinable reports whether PostgreSQL compares values of a and b (if
// they are character string types) as the onions do. text = character
// resolves to text's operator (the character value loses its padding, the
// text keeps its trailing spaces), as the keys and prefixes do; but
// varchar = character resolves to character's operator (bpchareq, one
// exact match), which also ignores the varchar's trailing spaces, while
// the varchar's key and prefix keep them: 'ab '::varchar = 'ab'::bpchar is
// true, their DET ciphertexts differ.
func textJoinable(a, b Type) bool {
	return !(a.Base == Varchar && b.Base == Char || a.Base == Char && b.Base == Varchar)
}

// OrdJoinable reports whether the Ord onions (at OPE) of columns of types a
// and b in one join group compare as PostgreSQL compares a and b, so that
// a range join (a.x < b.y) or a merge of their orders can run on the
// server: both types must support ord and be both integers or numeric(p,s)
// with the same scale s (integers count as scale 0; integers of a group
// all use the 64-bit domain), both character string types except varchar
// with character (prefix order: a superset filter, see OrdIsPrefix), or
// the same type for date, timestamp, timestamp with time zone and boolean.
func OrdJoinable(a, b Type) bool {
	if a.Check() != nil || b.Check() != nil || !a.Supports(Ord) || !b.Supports(Ord) || !sameEnum(a, b) {
		return false
	}
	scale := func(t Type) (int, bool) {
		switch t.Base {
		case SmallInt, Integer, BigInt:
			return 0, true
		case Numeric:
			return t.Scale, true
		}
		return 0, false
	}
	sa, na := scale(a)
	sb, nb := scale(b)
	switch {
	case na || nb:
		return na && nb && sa == sb
	case a.isText() || b.isText():
		return a.isText() && b.isText() && textJoinable(a, b)
	}
	return a.Base == b.Base
}

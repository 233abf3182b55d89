package onion

import (
	"encoding/binary"
	"math"
)

// Format is the version of a column's cell formats. A column keeps the
// format it was created with (the catalog records it): cells of two
// formats never compare equal, so a column, and every column of its join
// group, must use one format for all its rows.
type Format int

const (
	// FormatSIV is the first format: the DET layer of every Eq onion is
	// AES-SIV (det.Cipher) of the EqualityKey, inside AES-CBC with PKCS#7
	// padding. Columns created before FormatCompact existed have it.
	FormatSIV Format = 1

	// FormatCompact is FormatSIV except for the Eq onion of integers,
	// dates, timestamps, booleans, and of numeric(p,s) with p <= 18
	// outside join groups ("compact" types, see Type.compactEq): its DET
	// layer encrypts their 8-byte integer form into one AES block
	// (det.Block, RFC 5649), and its RND layer is AES-CBC without padding.
	// An Eq cell of such a column is 16 bytes at either layer, where
	// FormatSIV needs 24 (DET) and 32 (RND).
	FormatCompact Format = 2

	// FormatUUID is FormatCompact with every cell of fixed length 16
	// stored as a PostgreSQL uuid instead of a bytea (UUIDCell): the Eq
	// onion of compact types, and every Ord onion. The server then reads
	// these cells at fixed offsets and compares them without the varlena
	// header (a scan over them takes about a fifth less time). To make
	// every Ord cell 16 bytes, a 32-bit-domain OPE ciphertext (8 bytes) is
	// followed by the byte 0x80 and seven zero bytes (ordPad), which keeps
	// the byte order of the ciphertexts and leaves the all-zero and
	// all-0xff uuids below and above every such cell (a 16-byte OPE
	// ciphertext of the 64-bit domain is either with probability about
	// 2^-64: the range is 2^64 times the domain); the RND layer of the Ord
	// onion is then AES-CBC without padding, like the compact Eq onion's.
	// An Ord cell is 16 bytes at either layer, where FormatCompact needs
	// 16 or 32 (RND) and 8 or 16 (OPE).
	FormatUUID Format = 3

	// FormatLatest is the format of new columns.
	FormatLatest = FormatUUID
)

// Valid reports whether f is a known format.
func (f Format) Valid() bool { return f >= FormatSIV && f <= FormatUUID }

// ordPad follows an 8-byte OPE ciphertext in an Ord cell of FormatUUID.
var ordPad = [8]byte{0x80}

// CellSQLType returns the PostgreSQL type of the cells of onion k (KindEq
// or KindOrd) of a column of type t (joined: in a join group) and format
// f: "uuid" for the fixed-length cells of FormatUUID, else "bytea".
func CellSQLType(t Type, k Kind, joined bool, f Format) string {
	if f >= FormatUUID && (k == KindOrd || k == KindEq && t.compactEq(joined)) {
		return "uuid"
	}
	return "bytea"
}

// layerDETBlock labels the key of det.Block (FormatCompact), so that it
// never equals the AES-SIV key of the same column or group.
const layerDETBlock Layer = "det-block"

// reservedCompactKey is the integer form no value of a compact column
// has: EqDET gives its ciphertext for a constant that equals no value of
// the column (a numeric with more fraction digits than the scale, or out
// of the precision's range).
const reservedCompactKey = math.MinInt64

// compactEq reports whether the Eq onion of a column of type t (joined: in
// a join group) is compact under FormatCompact. Numerics of a join group
// keep AES-SIV of the canonical decimal: their group may mix scales
// (numeric(15,2) = numeric(10,3)), which one integer form cannot.
func (t Type) compactEq(joined bool) bool {
	switch t.Base {
	case SmallInt, Integer, BigInt, Date, Timestamp, Timestamptz, Boolean, Time:
		return true
	case Numeric:
		return !joined && t.numericConstrained() && t.Precision <= 18
	}
	return false
}

// compactKey is the plaintext of det.Block for a value of a compact
// column: its integer form (ordinal: numeric(p,s) as v·10^s, NaN as
// math.MaxInt64; booleans 0/1; days; microseconds) as 8 big-endian bytes.
func (c *Column) compactKey(v Value) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(c.ordinal(v)))
}

// compactComparisonKey is compactKey for a constant of the column's
// ComparisonType: the reserved key if it equals no value of the column.
func (c *Column) compactComparisonKey(v Value) []byte {
	if c.t.Base != Numeric || c.t.Valid(v) {
		return c.compactKey(v)
	}
	if v.kind == kindNumeric && (v.flag == numPos || v.flag == numNeg) {
		if x, exact := scaledIntRounded(v, c.t.Scale, Exact); exact && x.IsInt64() {
			if w := fromScaledInt64(x.Int64(), c.t.Scale); c.t.Valid(w) {
				return c.compactKey(w)
			}
		}
	}
	reserved := int64(reservedCompactKey)
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(reserved))
}

// fromCompactKey rebuilds the value of a compact key, or ErrDecrypt.
func (c *Column) fromCompactKey(k []byte) (Value, error) {
	if len(k) != 8 {
		return Value{}, ErrDecrypt
	}
	return c.fromOrdinal(int64(binary.BigEndian.Uint64(k)))
}

// AppendUUIDText appends the text form PostgreSQL gives a uuid
// (8-4-4-4-12 lowercase hex digits) of the 16-byte cell b to dst.
func AppendUUIDText(dst, b []byte) []byte {
	const digits = "0123456789abcdef"
	for i, x := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, digits[x>>4], digits[x&15])
	}
	return dst
}

// DecodeUUIDText decodes the text form of a uuid as PostgreSQL outputs it
// (36 characters, hex digits, in either case, with dashes after the 8th, 12th,
// 16th and 20th) into dst, which must hold 16 bytes, and reports whether
// text was such a form.
func DecodeUUIDText(dst, text []byte) bool {
	if len(text) != 36 || len(dst) < 16 {
		return false
	}
	if text[8] != '-' || text[13] != '-' || text[18] != '-' || text[23] != '-' {
		return false
	}
	// Table lookups, not branches: the digits of ciphertexts are random,
	// and a split execution decodes millions of them.
	var bad byte
	for j, i := range uuidDigitAt {
		hi, lo := hexDigit[text[i]], hexDigit[text[i+1]]
		bad |= hi | lo
		dst[j] = hi<<4 | lo
	}
	return bad&0xf0 == 0
}

// uuidDigitAt is where the two hex digits of each byte of a uuid's text
// form start.
var uuidDigitAt = [16]int{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// hexDigit maps a character to its value as a hex digit, or to 0xff.
var hexDigit = func() (t [256]byte) {
	for c := range t {
		v, ok := hexVal(byte(c))
		if !ok {
			v = 0xff
		}
		t[c] = v
	}
	return t
}()

package onion

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

type valueKind uint8

const (
	kindNull    valueKind = iota
	kindInt               // integers, bool (0/1), date (days), timestamps (µs)
	kindBytes             // text, varchar, character (as stored: padded), bytea
	kindNumeric           // numeric
)

// Numeric flags.
const (
	numPos uint8 = iota
	numNeg
	numNaN
	numPInf
	numNInf
)

// Value is a normalized plaintext of one Type: what PostgreSQL stores for
// it, so that equal Values print identically. The zero Value is SQL NULL.
// Values are immutable and comparable with ==, which is exact identity of
// the stored form (1.5 and 1.50 differ; use Type.Compare or
// Type.EqualityKey for SQL equality).
//
// The canonical forms:
//
//	smallint, integer, bigint   the integer
//	boolean                     0 or 1
//	date                        days since 2000-01-01 (PostgreSQL's epoch);
//	                            math.MinInt32 is -infinity, math.MaxInt32 infinity
//	timestamp                   microseconds since 2000-01-01 00:00:00;
//	timestamptz                 microseconds since 2000-01-01 00:00:00 UTC;
//	                            math.MinInt64 is -infinity, math.MaxInt64 infinity
//	text, varchar, bytea        the bytes
//	character(n)                the bytes, blank-padded to n characters
//	numeric                     sign, decimal coefficient and display scale
//	                            (the number of fraction digits shown), or
//	                            NaN, Infinity, -Infinity
type Value struct {
	kind  valueKind
	flag  uint8 // numeric sign or special
	scale int32 // numeric display scale
	i     int64
	s     string // bytes, or numeric coefficient digits without leading zeros ("" for 0)
}

// Null returns SQL NULL.
func Null() Value { return Value{} }

// IntValue returns an integer Value (smallint, integer, bigint).
func IntValue(i int64) Value { return Value{kind: kindInt, i: i} }

// BoolValue returns a boolean Value.
func BoolValue(b bool) Value {
	if b {
		return Value{kind: kindInt, i: 1}
	}
	return Value{kind: kindInt}
}

// DateValue returns a date Value of the given number of days since
// 2000-01-01 (math.MinInt32 and math.MaxInt32 are -infinity and infinity).
func DateValue(days int32) Value { return Value{kind: kindInt, i: int64(days)} }

// TimestampValue returns a timestamp or timestamptz Value of the given
// number of microseconds since 2000-01-01 00:00:00 (UTC for timestamptz;
// math.MinInt64 and math.MaxInt64 are -infinity and infinity).
func TimestampValue(us int64) Value { return Value{kind: kindInt, i: us} }

// TextValue returns a Value of a character string type (for character(n),
// give the padded form, or use ParseText).
func TextValue(s string) Value { return Value{kind: kindBytes, s: s} }

// BytesValue returns a bytea Value (b is copied).
func BytesValue(b []byte) Value { return Value{kind: kindBytes, s: string(b)} }

// IsNull reports whether v is SQL NULL.
func (v Value) IsNull() bool { return v.kind == kindNull }

// Int64 returns the integer of an integer, boolean, date or timestamp
// Value (see Value for the units).
func (v Value) Int64() int64 { return v.i }

// Bool returns the boolean of a boolean Value.
func (v Value) Bool() bool { return v.i != 0 }

// Str returns the bytes of a text or bytea Value as a string.
func (v Value) Str() string { return v.s }

// NumericCoefficient returns a finite numeric Value as its parts: the
// value is digits·10^-scale, negative when neg, with digits in decimal
// without leading zeros ("" for zero) and scale the display scale. ok is
// false for NaN and the infinities (and for Values that are not numeric).
func (v Value) NumericCoefficient() (neg bool, digits string, scale int32, ok bool) {
	if v.kind != kindNumeric || (v.flag != numPos && v.flag != numNeg) {
		return false, "", 0, false
	}
	return v.flag == numNeg, v.s, v.scale, true
}

// Bytes returns a copy of the bytes of a text or bytea Value.
func (v Value) Bytes() []byte { return []byte(v.s) }

// GoString makes Values readable in test failures.
func (v Value) GoString() string {
	switch v.kind {
	case kindNull:
		return "NULL"
	case kindInt:
		return fmt.Sprintf("int(%d)", v.i)
	case kindBytes:
		return fmt.Sprintf("bytes(%q)", v.s)
	case kindNumeric:
		return fmt.Sprintf("numeric(%q)", string(appendNumericText(nil, v)))
	}
	return "invalid"
}

// Env holds the session settings that affect the text form of values.
type Env struct {
	// DateStyle is the session's DateStyle ("ISO, MDY" when empty). Only
	// the ISO output style is supported; the field order for input may be
	// MDY, DMY or YMD.
	DateStyle string
	// TimeZone is the session's TimeZone (UTC when nil): timestamptz input
	// without an offset is read in it, and timestamptz output is shown in it.
	TimeZone *time.Location
	// CType is the database's LC_CTYPE, which lower(), upper() and ILIKE
	// follow (pglocale); "" when not known.
	CType string
}

// Date field orders.
const (
	orderMDY = iota
	orderDMY
	orderYMD
)

// dateOrder parses DateStyle like PostgreSQL's check_datestyle: a list of
// style and order keywords, with ISO output required.
func (e Env) dateOrder() (int, error) {
	if e.DateStyle == "" {
		return orderMDY, nil
	}
	order, style := orderMDY, "ISO"
	for _, tok := range strings.Split(e.DateStyle, ",") {
		switch strings.ToUpper(strings.TrimSpace(tok)) {
		case "ISO":
			style = "ISO"
		case "SQL":
			style = "SQL"
		case "POSTGRES":
			style = "Postgres"
		case "GERMAN":
			style = "German"
		case "YMD":
			order = orderYMD
		case "DMY", "EURO", "EUROPEAN":
			order = orderDMY
		case "MDY", "US", "NONEURO", "NONEUROPEAN":
			order = orderMDY
		case "DEFAULT":
		default:
			return 0, fmt.Errorf("onion: invalid DateStyle %q", e.DateStyle)
		}
	}
	if style != "ISO" {
		return 0, refuse(codeFeatureNotSupported, "DateStyle %q is not supported for encrypted date/time columns: only the ISO output style is", e.DateStyle)
	}
	return order, nil
}

// Check reports whether the session settings are supported.
func (e Env) Check() error {
	_, err := e.dateOrder()
	return err
}

// NewEnv returns the Env of a session from its DateStyle and TimeZone
// parameters (as reported in ParameterStatus). The time zone must be an
// IANA zone name (or UTC/GMT): PostgreSQL's POSIX-style zone specifications
// such as "UTC+3" (three hours west) and numeric offsets are refused.
func NewEnv(dateStyle, timeZone string) (Env, error) {
	e := Env{DateStyle: dateStyle}
	if err := e.Check(); err != nil {
		return Env{}, err
	}
	loc, err := LoadTimeZone(timeZone)
	if err != nil {
		return Env{}, err
	}
	e.TimeZone = loc
	return e, nil
}

// LoadTimeZone maps a PostgreSQL TimeZone setting to a *time.Location.
func LoadTimeZone(name string) (*time.Location, error) {
	switch strings.ToUpper(name) {
	case "", "UTC", "ETC/UTC", "GMT", "ETC/GMT", "Z", "ZULU", "UCT", "UNIVERSAL":
		return time.UTC, nil
	}
	if strings.ContainsAny(name, "+-0123456789<>,") && !strings.Contains(name, "/") {
		return nil, refuse(codeFeatureNotSupported, "time zone %q is not supported for encrypted timestamp columns: use an IANA time zone name", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, refuse(codeFeatureNotSupported, "time zone %q is not supported for encrypted timestamp columns: %v", name, err)
	}
	return loc, nil
}

func (e Env) location() *time.Location {
	if e.TimeZone == nil {
		return time.UTC
	}
	return e.TimeZone
}

// ParseText parses s as PostgreSQL's input function for t would, in
// assignment context (the typmod is applied as when storing into a column
// of type t: numeric rounding, varchar and character length checks). It
// returns a *pgconn.PgError with PostgreSQL's SQLSTATE and message for input
// PostgreSQL rejects, or a refusal (IsRefusal) for an input form this package
// does not implement.
func (t Type) ParseText(s []byte, env Env) (Value, error) {
	if err := checkEncoding(s); err != nil {
		return Value{}, err
	}
	str := string(s)
	switch t.Base {
	case Array:
		return t.parseArrayText(str, env)
	case Enum:
		return TextValue(str), nil // the Column checks the label
	case TimeTZ:
		return parseTimeTZText(str, env)
	case JSON:
		return parseJSONText(str)
	case SmallInt:
		return parseInt(str, 16, "smallint")
	case Integer:
		return parseInt(str, 32, "integer")
	case BigInt:
		return parseInt(str, 64, "bigint")
	case Numeric:
		return parseNumericText(str, t)
	case Text, Varchar, Char:
		return t.applyLength(str)
	case Bytea:
		return parseByteaText(str)
	case UUID:
		return parseUUIDText(str)
	case Float8:
		return parseFloat8Text(str)
	case Float4:
		return parseFloat4Text(str)
	case Time:
		return parseTimeText(str)
	case Inet, Cidr:
		return parseInetText(str, t.Base == Cidr)
	case Interval:
		return parseIntervalText(str)
	case JSONB:
		return parseJSONBText(str)
	case Boolean:
		return parseBool(str)
	case Date, Timestamp, Timestamptz:
		return t.parseDateTime(str, env)
	}
	return Value{}, fmt.Errorf("onion: invalid type")
}

// checkEncoding rejects what PostgreSQL's encoding verification rejects for
// a UTF8 database: invalid UTF-8 and NUL bytes.
func checkEncoding(s []byte) error {
	// Eight bytes at a time while they are ASCII without NUL (most text):
	// the byte loop below was 3% of the proxy's CPU in a COPY.
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		const ones, highs = 0x0101010101010101, 0x8080808080808080
		if x&highs != 0 || (x-ones)&^x&highs != 0 {
			break
		}
	}
	for i < len(s) {
		c := s[i]
		if c != 0 && c < utf8.RuneSelf {
			i++
			continue
		}
		if c != 0 {
			r, n := utf8.DecodeRune(s[i:])
			if r != utf8.RuneError || n != 1 {
				i += n
				continue
			}
		}
		// Report the bytes of the sequence the first byte announces, as
		// PostgreSQL's report_invalid_encoding does.
		l := 1
		switch {
		case c&0xe0 == 0xc0:
			l = 2
		case c&0xf0 == 0xe0:
			l = 3
		case c&0xf8 == 0xf0:
			l = 4
		}
		if l > len(s)-i {
			l = len(s) - i
		}
		var b strings.Builder
		for j := 0; j < l; j++ {
			if j > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "0x%02x", s[i+j])
		}
		return pgErr(codeCharacterNotInRepertory, "invalid byte sequence for encoding \"UTF8\": %s", b.String())
	}
	return nil
}

// applyLength applies the length of varchar(n) or character(n) to s (a valid
// string) in assignment context.
func (t Type) applyLength(s string) (Value, error) {
	switch t.Base {
	case Varchar:
		if t.Length == 0 || len(s) <= t.Length {
			return TextValue(s), nil
		}
		cut, n := clip(s, t.Length)
		if n <= t.Length && cut == len(s) {
			return TextValue(s), nil
		}
		if strings.Trim(s[cut:], " ") != "" {
			return Value{}, pgErr(codeStringRightTruncation, "value too long for type character varying(%d)", t.Length)
		}
		return TextValue(s[:cut]), nil
	case Char:
		if t.Length == 0 {
			return TextValue(s), nil
		}
		cut, n := len(s), 0
		if len(s) <= t.Length {
			n = utf8.RuneCountInString(s)
		} else {
			cut, n = clip(s, t.Length)
		}
		if cut < len(s) {
			if strings.Trim(s[cut:], " ") != "" {
				return Value{}, pgErr(codeStringRightTruncation, "value too long for type character(%d)", t.Length)
			}
			return TextValue(s[:cut]), nil
		}
		if n < t.Length {
			var b strings.Builder
			b.Grow(len(s) + t.Length - n)
			b.WriteString(s)
			for pad := t.Length - n; pad > 0; pad -= len(blanks) {
				b.WriteString(blanks[:min(pad, len(blanks))])
			}
			return TextValue(b.String()), nil
		}
		return TextValue(s), nil
	}
	return TextValue(s), nil
}

// blanks pads character(n) values.
const blanks = "                                                                "

// clip returns the byte length of the first max characters of s and how
// many characters that is (fewer when s is shorter).
func clip(s string, max int) (cut, n int) {
	for i := range s {
		if n == max {
			return i, n
		}
		n++
	}
	return len(s), n
}

// ParseBinary parses b as PostgreSQL's receive function for t would
// (binary format of a Bind parameter), then applies t's typmod as in
// assignment context. A malformed message gives SQLSTATE 22P03 with the
// message "incorrect binary data format" (PostgreSQL adds "in bind parameter
// N"; the caller knows N) or 08P01 "insufficient data left in message", as
// PostgreSQL does.
func (t Type) ParseBinary(b []byte) (Value, error) {
	switch t.Base {
	case Array:
		return t.parseArrayBinary(b)
	case TimeTZ:
		return parseTimeTZBinary(b)
	case JSON:
		// json_recv reads the text.
		if err := checkEncoding(b); err != nil {
			return Value{}, err
		}
		return parseJSONText(string(b))
	case Enum:
		// enum_recv reads the label as text.
		if err := checkEncoding(b); err != nil {
			return Value{}, err
		}
		return TextValue(string(b)), nil
	case SmallInt:
		if err := binLen(b, 2); err != nil {
			return Value{}, err
		}
		return IntValue(int64(int16(binary.BigEndian.Uint16(b)))), nil
	case Integer:
		if err := binLen(b, 4); err != nil {
			return Value{}, err
		}
		return IntValue(int64(int32(binary.BigEndian.Uint32(b)))), nil
	case BigInt:
		if err := binLen(b, 8); err != nil {
			return Value{}, err
		}
		return IntValue(int64(binary.BigEndian.Uint64(b))), nil
	case Boolean:
		if err := binLen(b, 1); err != nil {
			return Value{}, err
		}
		return BoolValue(b[0] != 0), nil
	case Date:
		if err := binLen(b, 4); err != nil {
			return Value{}, err
		}
		d := int64(int32(binary.BigEndian.Uint32(b)))
		if d != math.MinInt32 && d != math.MaxInt32 && !validDate(d) {
			return Value{}, pgErr(codeDatetimeFieldOverflow, "date out of range")
		}
		return DateValue(int32(d)), nil
	case Timestamp, Timestamptz:
		if err := binLen(b, 8); err != nil {
			return Value{}, err
		}
		ts := int64(binary.BigEndian.Uint64(b))
		if ts != math.MinInt64 && ts != math.MaxInt64 && !validTimestamp(ts) {
			return Value{}, pgErr(codeDatetimeFieldOverflow, "timestamp out of range")
		}
		return TimestampValue(ts), nil
	case Text, Varchar, Char:
		if err := checkEncoding(b); err != nil {
			return Value{}, err
		}
		return t.applyLength(string(b))
	case Bytea:
		return BytesValue(b), nil
	case UUID:
		if err := binLen(b, 16); err != nil {
			return Value{}, err
		}
		return BytesValue(b), nil
	case Float8:
		if err := binLen(b, 8); err != nil {
			return Value{}, err
		}
		return IntValue(int64(binary.BigEndian.Uint64(b))), nil
	case Float4:
		if err := binLen(b, 4); err != nil {
			return Value{}, err
		}
		return float4Value(binary.BigEndian.Uint32(b)), nil
	case Inet, Cidr:
		return parseInetBinary(b, t.Base == Cidr)
	case Interval:
		if err := binLen(b, 16); err != nil {
			return Value{}, err
		}
		return BytesValue(b), nil
	case JSONB:
		if len(b) == 0 {
			return Value{}, pgErr(codeProtocolViolation, "insufficient data left in message")
		}
		if b[0] != 1 {
			return Value{}, pgErr("XX000", "unsupported jsonb version number %d", b[0])
		}
		if err := checkEncoding(b[1:]); err != nil {
			return Value{}, err
		}
		return parseJSONBText(string(b[1:]))
	case Time:
		if err := binLen(b, 8); err != nil {
			return Value{}, err
		}
		us := int64(binary.BigEndian.Uint64(b))
		if !validTime(us) {
			return Value{}, pgErr(codeDatetimeFieldOverflow, "time out of range")
		}
		return IntValue(us), nil
	case Numeric:
		return parseNumericBinary(b, t)
	}
	return Value{}, fmt.Errorf("onion: invalid type")
}

func binLen(b []byte, n int) error {
	if len(b) == 0 && n == 1 {
		return pgErr(codeProtocolViolation, "no data left in message") // pq_getmsgbyte
	}
	if len(b) < n {
		return pgErr(codeProtocolViolation, "insufficient data left in message")
	}
	if len(b) > n {
		return pgErr(codeInvalidBinaryRep, "incorrect binary data format")
	}
	return nil
}

// AppendText appends the text form of v as PostgreSQL's output function
// prints it (DateStyle ISO, bytea_output hex, timestamptz in env's time
// zone), and returns the extended slice. v must be a non-NULL Value of t.
func (t Type) AppendText(dst []byte, v Value, env Env) []byte {
	switch t.Base {
	case Array:
		return t.appendArrayText(dst, v, env)
	case Enum:
		return append(dst, v.s...)
	case TimeTZ:
		return appendTimeTZText(dst, v)
	case JSON:
		return append(dst, v.s...)
	case SmallInt, Integer, BigInt:
		return strconv.AppendInt(dst, v.i, 10)
	case Boolean:
		if v.i != 0 {
			return append(dst, 't')
		}
		return append(dst, 'f')
	case Numeric:
		return appendNumericText(dst, v)
	case Text, Varchar, Char:
		return append(dst, v.s...)
	case UUID:
		return appendUUIDText(dst, v.s)
	case Float8:
		return appendFloat8Text(dst, math.Float64frombits(uint64(v.i)))
	case Float4:
		return appendFloat4Text(dst, float32(math.Float64frombits(uint64(v.i))))
	case Time:
		return appendTime(dst, v.i)
	case Inet, Cidr:
		return appendInetText(dst, v.s, t.Base == Cidr)
	case Interval:
		return appendIntervalText(dst, v.s)
	case JSONB:
		return append(dst, v.s...)
	case Bytea:
		dst = append(dst, '\\', 'x')
		const hexdigits = "0123456789abcdef"
		for i := 0; i < len(v.s); i++ {
			dst = append(dst, hexdigits[v.s[i]>>4], hexdigits[v.s[i]&15])
		}
		return dst
	case Date:
		return appendDate(dst, v.i)
	case Timestamp:
		return appendTimestamp(dst, v.i, nil)
	case Timestamptz:
		return appendTimestamp(dst, v.i, env.location())
	}
	return dst
}

// AppendBinary appends the binary form of v as PostgreSQL's send function
// produces it, and returns the extended slice. v must be a non-NULL Value
// of t.
func (t Type) AppendBinary(dst []byte, v Value) []byte {
	switch t.Base {
	case SmallInt:
		return binary.BigEndian.AppendUint16(dst, uint16(v.i))
	case Integer, Date:
		return binary.BigEndian.AppendUint32(dst, uint32(v.i))
	case BigInt, Timestamp, Timestamptz, Float8, Time:
		return binary.BigEndian.AppendUint64(dst, uint64(v.i))
	case Float4:
		return binary.BigEndian.AppendUint32(dst, float4Bits(v))
	case Boolean:
		if v.i != 0 {
			return append(dst, 1)
		}
		return append(dst, 0)
	case Text, Varchar, Char, Bytea, UUID, Interval, Array, Enum, TimeTZ, JSON:
		return append(dst, v.s...)
	case Inet, Cidr:
		return appendInetBinary(dst, v.s, t.Base == Cidr)
	case JSONB:
		return append(append(dst, 1), v.s...)
	case Numeric:
		return appendNumericBinary(dst, v)
	}
	return dst
}

// Valid reports whether v is a valid non-NULL Value of t (as ParseText or
// ParseBinary would return).
func (t Type) Valid(v Value) bool {
	switch t.Base {
	case Array:
		return t.validArray(v)
	case TimeTZ:
		return validTimeTZ(v)
	case JSON:
		if v.kind != kindBytes {
			return false
		}
		w, err := parseJSONText(v.s)
		return err == nil && w == v
	case Enum:
		return v.kind == kindBytes && len(v.s) >= 1 && len(v.s) <= maxEnumLabel && checkEncoding([]byte(v.s)) == nil
	case SmallInt:
		return v.kind == kindInt && v.i >= math.MinInt16 && v.i <= math.MaxInt16
	case Integer:
		return v.kind == kindInt && v.i >= math.MinInt32 && v.i <= math.MaxInt32
	case BigInt:
		return v.kind == kindInt
	case Boolean:
		return v.kind == kindInt && (v.i == 0 || v.i == 1)
	case Date:
		return v.kind == kindInt && (v.i == math.MinInt32 || v.i == math.MaxInt32 || validDate(v.i))
	case Timestamp, Timestamptz:
		return v.kind == kindInt && (v.i == math.MinInt64 || v.i == math.MaxInt64 || validTimestamp(v.i))
	case Text, Varchar, Char:
		if v.kind != kindBytes || checkEncoding([]byte(v.s)) != nil {
			return false
		}
		w, err := t.applyLength(v.s)
		return err == nil && w == v
	case Bytea:
		return v.kind == kindBytes
	case UUID:
		return v.kind == kindBytes && len(v.s) == 16
	case Float8:
		return v.kind == kindInt
	case Float4:
		return v.kind == kindInt && float4Value(float4Bits(v)) == v
	case Time:
		return v.kind == kindInt && validTime(v.i)
	case Interval:
		return v.kind == kindBytes && len(v.s) == 16
	case JSONB:
		return v.kind == kindBytes && v.s != ""
	case Inet, Cidr:
		ok := v.kind == kindBytes && (len(v.s) == 6 && v.s[0] == pgInet4 && v.s[1] <= 32 || len(v.s) == 18 && v.s[0] == pgInet6 && v.s[1] <= 128)
		return ok && (t.Base == Inet || maskCovers([]byte(v.s[2:]), int(v.s[1])))
	case Numeric:
		return v.kind == kindNumeric && validNumeric(v, t)
	}
	return false
}

// EqualityKey returns the canonical bytes of v under SQL equality for t:
// two Values of t are equal in PostgreSQL (=) exactly when their keys are
// equal. It is what the DET layer of the Eq onion encrypts.
//
//	integers, date, timestamps  8-byte big-endian two's complement
//	boolean                     one byte, 0 or 1
//	numeric                     the decimal text without trailing fraction
//	                            zeros ("1.5" for 1.50, "0", "-12", "NaN",
//	                            "Infinity", "-Infinity")
//	text, varchar, bytea        the bytes
//	character                   the bytes without trailing spaces
//
// Integers of all widths share one encoding, so equal values of smallint,
// integer and bigint columns have equal keys.
func (t Type) EqualityKey(v Value) []byte {
	switch t.Base {
	case Array:
		return t.arrayKey(v)
	case SmallInt, Integer, BigInt, Date, Timestamp, Timestamptz, Time:
		return binary.BigEndian.AppendUint64(nil, uint64(v.i))
	case Boolean:
		return []byte{byte(v.i)}
	case Numeric:
		return numericKey(v)
	case Char:
		return []byte(strings.TrimRight(v.s, " "))
	case Text, Varchar, Bytea, UUID, Inet, Cidr, Enum, TimeTZ, JSON:
		return []byte(v.s)
	case Interval:
		return intervalKey(v.s)
	case JSONB:
		return jsonbKey(v.s)
	case Float8, Float4:
		return binary.BigEndian.AppendUint64(nil, uint64(float8Ordinal(v.i)))
	}
	return nil
}

// equalityLossless reports whether the Value can be rebuilt from its
// EqualityKey. It cannot for an unconstrained numeric (the display scale of
// 1.50 is lost) or an unlimited bpchar (trailing spaces are lost).
func (t Type) equalityLossless() bool {
	switch t.Base {
	case Numeric:
		return t.numericConstrained()
	case Char:
		return t.Length > 0
	case Float8, Float4:
		return false // -0 and NaN payloads equal 0 and NaN
	case Array:
		return false // its elements' keys may lose their form
	case Interval:
		return false // '1 day' equals '24:00:00'
	case JSONB:
		return false // 1.0 equals 1
	}
	return true
}

// fromEqualityKey rebuilds the Value of an EqualityKey (for lossless types).
func (t Type) fromEqualityKey(k []byte) (Value, error) {
	switch t.Base {
	case SmallInt, Integer, BigInt, Date, Timestamp, Timestamptz, Time:
		if len(k) != 8 {
			return Value{}, ErrDecrypt
		}
		v := IntValue(int64(binary.BigEndian.Uint64(k)))
		if !t.Valid(v) {
			return Value{}, ErrDecrypt
		}
		return v, nil
	case Boolean:
		if len(k) != 1 || k[0] > 1 {
			return Value{}, ErrDecrypt
		}
		return BoolValue(k[0] == 1), nil
	case Numeric:
		v, ok := parseNumericKey(string(k))
		if !ok {
			return Value{}, ErrDecrypt
		}
		if v.flag == numPos || v.flag == numNeg {
			sc := max(t.Scale, 0)
			if int(v.scale) > sc {
				return Value{}, ErrDecrypt
			}
			if v.s != "" {
				v.s += strings.Repeat("0", sc-int(v.scale))
			}
			v.scale = int32(sc)
		}
		if !t.Valid(v) {
			return Value{}, ErrDecrypt
		}
		return v, nil
	case Text, Varchar, Char, Bytea, UUID, Inet, Cidr, Enum, TimeTZ, JSON:
		v := TextValue(string(k))
		if t.Base == Char {
			w, err := t.applyLength(v.s)
			if err != nil {
				return Value{}, ErrDecrypt
			}
			v = w
		}
		if !t.Valid(v) {
			return Value{}, ErrDecrypt
		}
		return v, nil
	}
	return Value{}, ErrDecrypt
}

// Compare compares two valid non-NULL Values of t as PostgreSQL's default
// btree operator class does (what ORDER BY, <, = and MIN/MAX use): -1, 0 or
// +1. Texts (text, varchar) compare by bytes, as memcmp with the shorter
// first, which is the C collation (the database is created with
// --locale=C; other collations order text differently); character values
// compare the same way without their trailing spaces ('ab' = 'ab  ');
// bytea by bytes; numeric by value (1.5 = 1.50), with -Infinity below and
// Infinity above all numbers and NaN above Infinity; integers, dates,
// timestamps (infinities at the extremes) by their integer forms; false
// before true. Both values must be of t (or of t's ComparisonType: the
// comparison ignores modifiers).
//
// NULL is the caller's business: Compare does not order NULLs (PostgreSQL
// puts them last in ascending order by default, and a comparison with NULL
// is unknown). Compare is what the proxy uses to break ties of the
// prefix-ordered Ord onion of text columns and to check residual
// predicates.
func (t Type) Compare(a, b Value) int {
	switch t.Base {
	case Array:
		return t.compareArrays(a, b)
	case TimeTZ:
		return compareTimeTZ(a, b)
	case Numeric:
		return compareNumeric(a, b)
	case Char:
		return strings.Compare(strings.TrimRight(a.s, " "), strings.TrimRight(b.s, " "))
	case Text, Varchar, Enum, JSON:
		// An enum by its labels' bytes, not by the type's order, which
		// only its Ord onion knows; json has no order at all.
		return strings.Compare(a.s, b.s)
	case Bytea, UUID:
		// uuid_cmp is memcmp too.
		return bytes.Compare([]byte(a.s), []byte(b.s))
	case Float8, Float4:
		a.i, b.i = float8Ordinal(a.i), float8Ordinal(b.i)
	case Inet, Cidr:
		return compareInet(a.s, b.s)
	case Interval:
		return intervalSpan(a.s).Cmp(intervalSpan(b.s))
	case JSONB:
		// Equality only: the proxy does not order jsonb.
		return strings.Compare(string(jsonbKey(a.s)), string(jsonbKey(b.s)))
	}
	switch {
	case a.i < b.i:
		return -1
	case a.i > b.i:
		return 1
	}
	return 0
}

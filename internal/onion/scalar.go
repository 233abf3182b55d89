package onion

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// isSpace is C's isspace in the C locale, which PostgreSQL's input
// functions use.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlpha(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }

// isPunct is C's ispunct in the C locale.
func isPunct(c byte) bool {
	return c > ' ' && c < 0x7f && !isAlnum(c)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// parseInt is PostgreSQL 15's pg_strtoint16/32/64: optional whitespace,
// an optional sign, at least one digit, optional whitespace. Overflow is
// detected while reading digits, before trailing junk.
func parseInt(s string, bits uint, typ string) (Value, error) {
	lo := int64(-1) << (bits - 1) // the most negative value
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	} else if i < len(s) && s[i] == '+' {
		i++
	}
	if i >= len(s) || !isDigit(s[i]) {
		return Value{}, pgErr(codeInvalidTextRep, "invalid input syntax for type %s: \"%s\"", typ, s)
	}
	// Accumulate negatively, as the C code does, so that the most
	// negative value is representable.
	var acc int64
	for i < len(s) && isDigit(s[i]) {
		d := int64(s[i] - '0')
		if acc < lo/10 || acc*10 < lo+d {
			return Value{}, pgErr(codeNumericOutOfRange, "value \"%s\" is out of range for type %s", s, typ)
		}
		acc = acc*10 - d
		i++
	}
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i != len(s) {
		return Value{}, pgErr(codeInvalidTextRep, "invalid input syntax for type %s: \"%s\"", typ, s)
	}
	if !neg {
		if acc == lo {
			return Value{}, pgErr(codeNumericOutOfRange, "value \"%s\" is out of range for type %s", s, typ)
		}
		acc = -acc
	}
	return IntValue(acc), nil
}

// parseBool is PostgreSQL's boolin: whitespace around, then a
// case-insensitive prefix of true, false, yes, no, at least "on"/"of" of on
// and off, or exactly 1 or 0.
func parseBool(in string) (Value, error) {
	s := in
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	prefixOf := func(word string, minLen int) bool {
		return len(s) >= minLen && len(s) <= len(word) && strings.EqualFold(s, word[:len(s)])
	}
	if len(s) > 0 {
		switch lower(s[0]) {
		case 't':
			if prefixOf("true", 1) {
				return BoolValue(true), nil
			}
		case 'f':
			if prefixOf("false", 1) {
				return BoolValue(false), nil
			}
		case 'y':
			if prefixOf("yes", 1) {
				return BoolValue(true), nil
			}
		case 'n':
			if prefixOf("no", 1) {
				return BoolValue(false), nil
			}
		case 'o':
			if prefixOf("on", 2) {
				return BoolValue(true), nil
			}
			if prefixOf("off", 2) {
				return BoolValue(false), nil
			}
		case '1':
			if len(s) == 1 {
				return BoolValue(true), nil
			}
		case '0':
			if len(s) == 1 {
				return BoolValue(false), nil
			}
		}
	}
	return Value{}, pgErr(codeInvalidTextRep, "invalid input syntax for type boolean: \"%s\"", in)
}

// parseByteaText is PostgreSQL's byteain: "\x" followed by hex digits
// (whitespace allowed between pairs), or the escape format (backslash
// followed by three octal digits, or by a second backslash).
func parseByteaText(s string) (Value, error) {
	if len(s) >= 2 && s[0] == '\\' && s[1] == 'x' {
		out := make([]byte, 0, (len(s)-2)/2)
		for i := 2; i < len(s); {
			c := s[i]
			if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
				i++
				continue
			}
			hi, ok := hexVal(c)
			if !ok {
				return Value{}, badHexDigit(s[i:])
			}
			i++
			if i >= len(s) {
				return Value{}, pgErr(codeInvalidParameterValue, "invalid hexadecimal data: odd number of digits")
			}
			lo, ok := hexVal(s[i])
			if !ok {
				return Value{}, badHexDigit(s[i:])
			}
			i++
			out = append(out, hi<<4|lo)
		}
		return BytesValue(out), nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		switch {
		case s[i] != '\\':
			out = append(out, s[i])
			i++
		case i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && s[i+2] >= '0' && s[i+2] <= '7' && s[i+3] >= '0' && s[i+3] <= '7':
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 4
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i += 2
		default:
			return Value{}, pgErr(codeInvalidTextRep, "invalid input syntax for type bytea")
		}
	}
	return BytesValue(out), nil
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// badHexDigit reports the (whole, possibly multibyte) character at the
// start of s, as PostgreSQL does.
func badHexDigit(s string) error {
	_, n := utf8.DecodeRuneInString(s)
	return pgErr(codeInvalidParameterValue, "invalid hexadecimal digit: \"%s\"", s[:n])
}

// parseUUIDText is PostgreSQL's uuid_in: 32 hex digits (either case), a
// hyphen allowed after any even number of them but the last, optionally
// in braces; nothing else, not even white space.
func parseUUIDText(s string) (Value, error) {
	bad := func() (Value, error) {
		return Value{}, pgErr(codeInvalidTextRep, "invalid input syntax for type uuid: \"%s\"", s)
	}
	src := s
	braces := len(src) > 0 && src[0] == '{'
	if braces {
		src = src[1:]
	}
	out := make([]byte, 16)
	for i := range out {
		if len(src) < 2 {
			return bad()
		}
		hi, ok1 := hexVal(src[0])
		lo, ok2 := hexVal(src[1])
		if !ok1 || !ok2 {
			return bad()
		}
		out[i] = hi<<4 | lo
		src = src[2:]
		if len(src) > 0 && src[0] == '-' && i%2 == 1 && i < 15 {
			src = src[1:]
		}
	}
	if braces {
		if len(src) == 0 || src[0] != '}' {
			return bad()
		}
		src = src[1:]
	}
	if src != "" {
		return bad()
	}
	return BytesValue(out), nil
}

// appendUUIDText appends uuid_out's form of the 16 bytes u: lower-case
// hex digits grouped 8-4-4-4-12.
func appendUUIDText(dst []byte, u string) []byte {
	const hexdigits = "0123456789abcdef"
	for i := 0; i < len(u); i++ {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexdigits[u[i]>>4], hexdigits[u[i]&15])
	}
	return dst
}

// float8 values are their IEEE 754 bits (Value.i), as float8send sends
// them. PostgreSQL compares them with -0 equal to 0, every NaN equal to
// every other and above +Infinity: float8Ordinal maps the bits to an
// int64 that orders and compares that way.
const canonicalNaN = 0x7ff8000000000000

// float8Ordinal is the order-preserving integer of float8 bits: -0 as 0,
// every NaN as one value above +Infinity.
func float8Ordinal(bits int64) int64 {
	f := math.Float64frombits(uint64(bits))
	u := uint64(bits)
	switch {
	case f != f:
		u = canonicalNaN
	case f == 0:
		u = 0
	}
	if u>>63 == 1 {
		u = ^u
	} else {
		u |= 1 << 63
	}
	return int64(u ^ 1<<63)
}

// float4Value is the Value of a real's bits: the real widened to double
// precision exactly. A NaN keeps its sign and payload (float4recv keeps
// a signalling NaN's bits, which the FPU's conversion would quiet).
func float4Value(bits uint32) Value {
	if bits&0x7f800000 == 0x7f800000 && bits&0x7fffff != 0 {
		u := uint64(bits>>31)<<63 | 0x7ff<<52 | uint64(bits&0x7fffff)<<29
		return IntValue(int64(u))
	}
	return IntValue(int64(math.Float64bits(float64(math.Float32frombits(bits)))))
}

// float4Bits inverts float4Value.
func float4Bits(v Value) uint32 {
	u := uint64(v.i)
	if f := math.Float64frombits(u); f != f {
		return uint32(u>>63)<<31 | 0x7f800000 | uint32(u>>29)&0x7fffff
	}
	return math.Float32bits(float32(math.Float64frombits(u)))
}

// float8FromOrdinal inverts float8Ordinal (to +0 and the canonical NaN).
func float8FromOrdinal(x int64) int64 {
	u := uint64(x) ^ 1<<63
	if u>>63 == 1 {
		u &^= 1 << 63
	} else {
		u = ^u
	}
	return int64(u)
}

// parseFloat8Text is PostgreSQL's float8in: strtod's syntax after leading
// white space (decimal with optional exponent, hexadecimal, Infinity, inf
// and NaN in any case, with a sign), then trailing white space only. A
// value beyond the range (or a nonzero one that rounds to zero) is out
// of range.
func parseFloat8Text(s string) (Value, error) {
	return parseFloatText(s, 64)
}

// parseFloat4Text is float4in: float8in's syntax, the value rounded to
// real once (strtof), out of range beyond real's range.
func parseFloat4Text(s string) (Value, error) {
	return parseFloatText(s, 32)
}

// parseFloatText reads a float of bitSize bits, widened to float64 bits.
func parseFloatText(s string, bitSize int) (Value, error) {
	name := "double precision"
	if bitSize == 32 {
		name = "real"
	}
	bad := func() (Value, error) {
		return Value{}, pgErr(codeInvalidTextRep, "invalid input syntax for type %s: \"%s\"", name, s)
	}
	t := strings.TrimLeft(s, " \t\n\r\v\f")
	t = strings.TrimRight(t, " \t\n\r\v\f")
	if t == "" {
		return bad()
	}
	body, neg := t, false
	if body[0] == '+' || body[0] == '-' {
		neg = body[0] == '-'
		body = body[1:]
	}
	switch strings.ToLower(body) {
	case "nan":
		if neg {
			u := uint64(canonicalNaN)
			return IntValue(int64(u | 1<<63)), nil // strtod keeps the sign
		}
		return IntValue(canonicalNaN), nil
	case "inf", "infinity":
		if neg {
			return IntValue(int64(math.Float64bits(math.Inf(-1)))), nil
		}
		return IntValue(int64(math.Float64bits(math.Inf(1)))), nil
	}
	hex := len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')
	nonzero := false
	if hex {
		// strtod allows a hexadecimal number without a binary exponent.
		digits := body[2:]
		if p := strings.IndexAny(digits, "pP"); p >= 0 {
			digits = digits[:p]
		} else {
			t += "p0"
		}
		if !validDigits(digits, func(c byte) bool { _, ok := hexVal(c); return ok }) {
			return bad()
		}
		nonzero = strings.Trim(digits, "0.") != ""
	} else {
		mant := body
		if e := strings.IndexAny(body, "eE"); e >= 0 {
			mant = body[:e]
			exp := body[e+1:]
			if exp != "" && (exp[0] == '+' || exp[0] == '-') {
				exp = exp[1:]
			}
			if exp == "" || strings.Trim(exp, "0123456789") != "" {
				return bad()
			}
		}
		if !validDigits(mant, func(c byte) bool { return '0' <= c && c <= '9' }) {
			return bad()
		}
		nonzero = strings.Trim(mant, "0.") != ""
	}
	f, err := strconv.ParseFloat(t, bitSize)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return bad()
	}
	if errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) || f == 0 && nonzero {
		return Value{}, pgErr(codeNumericOutOfRange, "\"%s\" is out of range for type %s", s, name)
	}
	return IntValue(int64(math.Float64bits(f))), nil
}

// validDigits reports whether s is digits with at most one '.', and at
// least one digit.
func validDigits(s string, digit func(byte) bool) bool {
	dots, n := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '.':
			dots++
		case digit(s[i]):
			n++
		default:
			return false
		}
	}
	return dots <= 1 && n > 0
}

// appendFloat8Text is float8out with extra_float_digits 1 (the default):
// the shortest decimal that reads back as f, in fixed notation when its
// decimal exponent is from -4 to 14, else as d.ddde±XX.
func appendFloat8Text(dst []byte, f float64) []byte {
	return appendFloatText(dst, f, 64, 15)
}

// appendFloat4Text is float4out with extra_float_digits 1: as float8out
// with real's shortest digits, in fixed notation for exponents -4 to 5.
func appendFloat4Text(dst []byte, f float32) []byte {
	return appendFloatText(dst, float64(f), 32, 6)
}

// appendFloatText appends f (of bitSize bits) as PostgreSQL's Ryu output
// prints it, in fixed notation for decimal exponents from -4 to below
// fixedBelow.
func appendFloatText(dst []byte, f float64, bitSize, fixedBelow int) []byte {
	switch {
	case f != f:
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	e := shortestFloat(f, bitSize)
	exp, _ := strconv.Atoi(string(e[bytes.IndexByte(e, 'e')+1:]))
	if exp >= -4 && exp < fixedBelow {
		// The same digits in fixed notation.
		digits := bytes.IndexByte(e, 'e') // significant digits
		if bytes.IndexByte(e, '.') >= 0 {
			digits--
		}
		if math.Signbit(f) {
			digits--
		}
		return strconv.AppendFloat(dst, f, 'f', max(digits-1-exp, 0), bitSize)
	}
	return append(dst, e...)
}

// shortestFloat is f's shortest decimal form (d.ddde±XX) as a float of
// bitSize bits that lies strictly between f's rounding bounds, as
// PostgreSQL's Ryu does: Go's shortest form may lie on a bound (it reads
// back as f when f's mantissa is even), and PostgreSQL then prints more
// digits.
func shortestFloat(f float64, bitSize int) []byte {
	e := strconv.AppendFloat(nil, f, 'e', -1, bitSize)
	if f == 0 || strictlyInside(e, f, bitSize) {
		return e
	}
	digits := bytes.IndexByte(e, 'e') - 1
	if math.Signbit(f) {
		digits--
	}
	maxDigits := 17
	if bitSize == 32 {
		maxDigits = 9
	}
	for n := digits; n < maxDigits; n++ {
		c := strconv.AppendFloat(nil, f, 'e', n, bitSize)
		if strictlyInside(c, f, bitSize) {
			return c
		}
	}
	return strconv.AppendFloat(nil, f, 'e', maxDigits-1, bitSize)
}

// strictlyInside reports whether decimal d lies strictly between the
// midpoints of f and its neighbours among floats of bitSize bits.
func strictlyInside(d []byte, f float64, bitSize int) bool {
	x, ok := new(big.Rat).SetString(string(d))
	if !ok {
		return false
	}
	fx := new(big.Rat).SetFloat64(f)
	neighbours := []float64{math.Nextafter(f, math.Inf(-1)), math.Nextafter(f, math.Inf(1))}
	if bitSize == 32 {
		f32 := float32(f)
		neighbours = []float64{
			float64(math.Nextafter32(f32, float32(math.Inf(-1)))),
			float64(math.Nextafter32(f32, float32(math.Inf(1)))),
		}
	}
	for _, n := range neighbours {
		if math.IsInf(n, 0) {
			continue // the largest finite: no bound beyond
		}
		mid := new(big.Rat).Add(fx, new(big.Rat).SetFloat64(n))
		mid.Quo(mid, big.NewRat(2, 1))
		if n < f && x.Cmp(mid) <= 0 || n > f && x.Cmp(mid) >= 0 {
			return false
		}
	}
	return true
}

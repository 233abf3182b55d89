// Package pgnumeric computes with PostgreSQL 15's numeric type exactly as
// the server does, so that the proxy can evaluate arithmetic and aggregates
// on decrypted values and return the text the server would have returned,
// byte for byte. It also has PostgreSQL's smallint, integer and bigint
// arithmetic (int.go), for expressions that mix them.
//
// The reference for every rule is PostgreSQL 15's src/backend/utils/adt/
// numeric.c and int.c and int8.c; each function names the C functions
// whose behaviour it follows. The code is an independent implementation on
// math/big (a value is an integer coefficient and a display scale), not a
// translation of PostgreSQL's base-10000 algorithms; where the result
// depends on the base-10000 representation (the scale of a quotient), the
// package derives the base-10000 digit it needs.
//
// # Values
//
// A Decimal is NaN, +Infinity, -Infinity (PostgreSQL 14 and later) or a
// finite value coefficient × 10^-dscale, where dscale (0 to 16383) is the
// display scale: the number of digits after the decimal point that
// numeric_out prints, trailing zeros included ('1.50' has dscale 2 and is
// not the same text as '1.5', though the two are equal). A finite value is
// less than 10^131072 in absolute value. There is no negative zero. The
// zero Decimal is 0 with dscale 0. Decimals are immutable values; copying
// one is cheap and safe.
//
// # Errors
//
// Errors are *pgconn.PgError values with the server's SQLSTATE and message
// (Severity ERROR), so the proxy can forward them unchanged:
//
//   - 22P02 invalid input syntax for type numeric: "<input>" (Parse);
//   - 22003 value overflows numeric format (any result out of the range
//     above; make_result in numeric.c);
//   - 22012 division by zero (Div, DivInt, ModInt);
//   - 22003 smallint out of range, integer out of range, bigint out of
//     range (the integer functions);
//   - 2201E cannot take logarithm of zero, cannot take logarithm of a
//     negative number (Ln, Log10, LogBase);
//   - 2201F zero raised to a negative power is undefined, a negative
//     number raised to a non-integer power yields a complex result
//     (Power), cannot take square root of a negative number (SqrtNumeric).
//
// # Transcendental functions
//
// Ln, Log10, LogBase, Exp and Power (transcend.go) reproduce not only the
// scales of numeric_ln, numeric_log, numeric_exp and numeric_power but
// also the intermediate roundings of their algorithms, on which the last
// digits of PostgreSQL's results depend (see transcend.go).
//
// # Not covered
//
// Typmods (numeric(p,s) coercion, apply_typmod), div(), the remaining
// mathematical functions (cbrt, factorial, gcd, ...), casts between
// numeric and the integer or float types, and the binary wire format.
package pgnumeric

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
)

// Limits of the numeric type (numeric.c: NUMERIC_DSCALE_MAX,
// NUMERIC_WEIGHT_MAX, NUMERIC_MAX_DISPLAY_SCALE, NUMERIC_MIN_SIG_DIGITS).
const (
	// MaxScale is the largest display scale a value can have.
	MaxScale = 16383
	// maxExp10 is the smallest power of ten a finite value cannot reach:
	// base-10000 weight 32767 at most, so |x| < 10000^32768.
	maxExp10 = 131072
	// MaxDivScale is the largest scale of a quotient (and so of an
	// average).
	MaxDivScale = 1000
	// MinSigDigits is the number of significant digits a quotient has at
	// least (while its scale stays within MaxDivScale).
	MinSigDigits = 16
)

// SQLSTATEs of the errors of this package.
const (
	CodeInvalidTextRepresentation = "22P02"
	CodeNumericValueOutOfRange    = "22003"
	CodeDivisionByZero            = "22012"
)

type form uint8

const (
	finite form = iota
	nan
	pinf
	ninf
)

// Decimal is a PostgreSQL numeric value. See the package documentation.
type Decimal struct {
	form form
	// coef holds the sign and the digits: the value is coef·10^-dscale.
	// nil means the coefficient is small instead (zero included). A coef
	// is never modified once in a Decimal, and never fits in an int64
	// (see mk): the values of everyday data take the int64 fast paths.
	coef   *big.Int
	small  int64
	dscale int32
}

// mk returns the finite Decimal c·10^-dscale, in its small form when c
// fits in an int64. c must not be modified afterwards.
func mk(c *big.Int, dscale int32) Decimal {
	if c.IsInt64() {
		return Decimal{small: c.Int64(), dscale: dscale}
	}
	return Decimal{coef: c, dscale: dscale}
}

// isSmall reports whether d is finite with an int64 coefficient.
func (d Decimal) isSmall() bool { return d.form == finite && d.coef == nil }

// NaN returns the numeric NaN.
func NaN() Decimal { return Decimal{form: nan} }

// Inf returns +Infinity if sign >= 0 and -Infinity otherwise.
func Inf(sign int) Decimal {
	if sign < 0 {
		return Decimal{form: ninf}
	}
	return Decimal{form: pinf}
}

// FromInt64 returns v with dscale 0, as int8_numeric (int64_to_numeric)
// converts a smallint, integer or bigint to numeric: the conversion applied
// to an integer operand mixed with a numeric one, and to the count in avg.
func FromInt64(v int64) Decimal {
	return Decimal{small: v}
}

// IsNaN reports whether d is NaN.
func (d Decimal) IsNaN() bool { return d.form == nan }

// IsInf reports whether d is +Infinity or -Infinity.
func (d Decimal) IsInf() bool { return d.form == pinf || d.form == ninf }

// IsFinite reports whether d is neither NaN nor an infinity.
func (d Decimal) IsFinite() bool { return d.form == finite }

// Sign returns -1, 0 or +1 for a negative, zero or positive value (the
// infinities included), and 0 for NaN (SQL's sign(NaN) is NaN).
func (d Decimal) Sign() int {
	switch d.form {
	case pinf:
		return 1
	case ninf:
		return -1
	case nan:
		return 0
	}
	if d.coef == nil {
		switch {
		case d.small < 0:
			return -1
		case d.small > 0:
			return 1
		}
		return 0
	}
	return d.coef.Sign()
}

// Scale returns the display scale of a finite value (the number of digits
// after the decimal point in String, SQL's scale()), and 0 for NaN and the
// infinities.
func (d Decimal) Scale() int { return int(d.dscale) }

// Coefficient returns a new big.Int holding the finite value d without its
// decimal point: d = Coefficient·10^-Scale. It returns 0 for NaN and the
// infinities.
func (d Decimal) Coefficient() *big.Int { return new(big.Int).Set(d.c()) }

// c returns the coefficient as a big.Int, which must not be modified.
func (d Decimal) c() *big.Int {
	if d.coef == nil {
		return big.NewInt(d.small)
	}
	return d.coef
}

// String returns d as numeric_out (get_str_from_var) prints it: "NaN",
// "Infinity", "-Infinity", or an optional minus sign, the integer digits
// without leading zeros (at least "0"), and, if the display scale is
// positive, a point and exactly that many fraction digits.
func (d Decimal) String() string {
	return string(d.AppendText(nil))
}

// AppendText appends String's text to b.
func (d Decimal) AppendText(b []byte) []byte {
	switch d.form {
	case nan:
		return append(b, "NaN"...)
	case pinf:
		return append(b, "Infinity"...)
	case ninf:
		return append(b, "-Infinity"...)
	}
	start := len(b)
	if d.coef == nil {
		u := uint64(d.small)
		if d.small < 0 {
			b = append(b, '-')
			start++
			u = -u
		}
		b = strconv.AppendUint(b, u, 10)
	} else {
		if d.coef.Sign() < 0 {
			b = append(b, '-')
			start++
		}
		b = new(big.Int).Abs(d.coef).Append(b, 10)
	}
	scale := int(d.dscale)
	if scale == 0 {
		return b
	}
	// Pad with zeros to at least scale+1 digits, then insert the point.
	if n := len(b) - start; n <= scale {
		pad := scale + 1 - n
		b = append(b, make([]byte, pad)...)
		copy(b[start+pad:], b[start:start+n])
		for i := range pad {
			b[start+i] = '0'
		}
	}
	p := len(b) - scale
	b = append(b, 0)
	copy(b[p+1:], b[p:])
	b[p] = '.'
	return b
}

func pgError(code, msg string) error {
	return &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: code, Message: msg}
}

func syntaxError(s string) error {
	return pgError(CodeInvalidTextRepresentation, `invalid input syntax for type numeric: "`+s+`"`)
}

func overflowError() error {
	return pgError(CodeNumericValueOutOfRange, "value overflows numeric format")
}

// isSpace is C's isspace in the C locale, which numeric_in uses.
func isSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// hasPrefixFold reports whether s begins with the lower-case ASCII prefix,
// ignoring ASCII case (pg_strncasecmp).
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := range len(prefix) {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// specials are the texts numeric_in recognises for NaN and the infinities
// (case-insensitively, after leading white space): those of float8in.
var specials = []struct {
	text string
	form form
}{
	{"nan", nan},
	{"infinity", pinf}, {"+infinity", pinf}, {"-infinity", ninf},
	{"inf", pinf}, {"+inf", pinf}, {"-inf", ninf},
}

// Parse converts s as numeric_in (with set_var_from_str) does for an
// unconstrained numeric:
//
//   - leading and trailing white space (isspace in the C locale: space,
//     \t, \n, \v, \f, \r) is ignored;
//   - NaN, Infinity, +Infinity, -Infinity, inf, +inf, -inf in any case
//     (but not +NaN or -NaN) are the special values;
//   - otherwise an optional sign, digits with at most one decimal point and
//     at least one digit, the point possibly first or last ("5.", ".5"),
//     then optionally e or E and an exponent as C's strtol reads it:
//     optional white space, an optional sign, at least one digit ('1e 5'
//     and '1e\n-5' are valid, '1e+ 5' is not).
//
// The display scale is the number of digits after the point minus the
// exponent, or 0 if that is negative: '1.50' has scale 2, '1.50e1' is
// 15.0, '1.5e3' is 1500, '1e-3' is 0.001. A minus zero is zero.
//
// Errors: 22P02 for any other text (the message quotes s whole), and 22003
// "value overflows numeric format" when the exponent is 1073741823
// (INT_MAX/2) or more in absolute value (reported even if junk follows),
// when the display scale exceeds 16383 (even for zero: '0e-16384'), or when
// a non-zero value is 10^131072 or more. A NUL byte, which a PostgreSQL
// string cannot hold, is a syntax error.
func Parse(s string) (Decimal, error) {
	i := skipSpace(s, 0)
	for _, sp := range specials {
		if hasPrefixFold(s[i:], sp.text) {
			if skipSpace(s, i+len(sp.text)) != len(s) {
				return Decimal{}, syntaxError(s)
			}
			return Decimal{form: sp.form}, nil
		}
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	dp := false
	if i < len(s) && s[i] == '.' {
		dp = true
		i++
	}
	if i >= len(s) || !isDigit(s[i]) {
		return Decimal{}, syntaxError(s)
	}
	digits := make([]byte, 0, len(s)-i)
	frac := 0
	for ; i < len(s); i++ {
		if isDigit(s[i]) {
			if dp {
				frac++
			}
			digits = append(digits, s[i])
		} else if s[i] == '.' && !dp {
			dp = true
		} else {
			break
		}
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := skipSpace(s, i+1)
		eneg := false
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			eneg = s[j] == '-'
			j++
		}
		if j >= len(s) || !isDigit(s[j]) {
			return Decimal{}, syntaxError(s)
		}
		for ; j < len(s) && isDigit(s[j]); j++ {
			if exp < 1<<40 {
				exp = exp*10 + int64(s[j]-'0')
			}
		}
		if exp >= 1<<30-1 { // INT_MAX/2
			return Decimal{}, overflowError()
		}
		if eneg {
			exp = -exp
		}
		i = j
	}
	if skipSpace(s, i) != len(s) {
		return Decimal{}, syntaxError(s)
	}
	dscale := max(int64(frac)-exp, 0)
	if dscale > MaxScale {
		return Decimal{}, overflowError()
	}
	sig := strings.TrimLeft(string(digits), "0")
	if sig == "" {
		return Decimal{dscale: int32(dscale)}, nil
	}
	if shift := exp - int64(frac); len(sig) <= 18 && shift <= 0 {
		// The common case: fewer than 19 digits fit in an int64.
		v, _ := strconv.ParseInt(sig, 10, 64)
		if neg {
			v = -v
		}
		return Decimal{small: v, dscale: int32(dscale)}, nil
	}
	// The most significant digit is that of 10^(len(sig)-1-frac+exp).
	if int64(len(sig))-1-int64(frac)+exp >= maxExp10 {
		return Decimal{}, overflowError()
	}
	c, _ := new(big.Int).SetString(sig, 10)
	if shift := exp - int64(frac); shift > 0 {
		c.Mul(c, pow10(int(shift)))
	}
	if neg {
		c.Neg(c)
	}
	return mk(c, int32(dscale)), nil
}

// FromCoefficient returns the finite value digits·10^-dscale, negated when
// neg: digits are decimal digits (leading zeros allowed, "" is zero) and
// dscale is the display scale, 0 to MaxScale. It is Parse for values
// already taken apart (onion.Value.NumericCoefficient), without the text.
func FromCoefficient(neg bool, digits string, dscale int) (Decimal, error) {
	if dscale < 0 || dscale > MaxScale {
		return Decimal{}, overflowError()
	}
	digits = strings.TrimLeft(digits, "0")
	if len(digits) <= 18 {
		v, err := strconv.ParseInt("0"+digits, 10, 64)
		if err != nil {
			return Decimal{}, syntaxError(digits)
		}
		if neg {
			v = -v
		}
		return Decimal{small: v, dscale: int32(dscale)}, nil
	}
	c, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return Decimal{}, syntaxError(digits)
	}
	if neg {
		c.Neg(c)
	}
	return result(c, dscale)
}

// MustParse is Parse that panics on error, for constants.
func MustParse(s string) Decimal {
	d, err := Parse(s)
	if err != nil {
		panic("pgnumeric: " + err.Error())
	}
	return d
}

var pow10s = func() []*big.Int {
	t := make([]*big.Int, 64)
	t[0] = big.NewInt(1)
	for i := 1; i < len(t); i++ {
		t[i] = new(big.Int).Mul(t[i-1], big.NewInt(10))
	}
	return t
}()

// pow10 returns 10^n (n >= 0). The result must not be modified.
func pow10(n int) *big.Int {
	if n < len(pow10s) {
		return pow10s[n]
	}
	if p, ok := pow10Cache.Load(n); ok {
		return p.(*big.Int)
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
	// The transcendental functions round to the same large scales again
	// and again: keep the powers they use, up to a bounded total size.
	if pow10CacheBits.Add(int64(p.BitLen())) <= pow10CacheMaxBits {
		pow10Cache.Store(n, p)
	}
	return p
}

// pow10Cache holds the powers of ten above pow10s that pow10 computed,
// pow10CacheBits their total size in bits (the cache stops growing at
// pow10CacheMaxBits).
var (
	pow10Cache        sync.Map
	pow10CacheBits    atomic.Int64
	pow10CacheMaxBits = int64(1 << 25)
)

// numDigits returns the number of decimal digits of |x|, 0 for 0.
func numDigits(x *big.Int) int {
	b := x.BitLen()
	if b == 0 {
		return 0
	}
	// 2^(b-1) <= |x| < 2^b, so |x| has t+1 or t+2 digits.
	t := int(float64(b-1) * 0.30102999566398119521)
	if new(big.Int).Abs(x).Cmp(pow10(t+1)) >= 0 {
		return t + 2
	}
	return t + 1
}

// result checks that coef·10^-dscale fits in a numeric, as make_result
// does, and returns it.
func result(coef *big.Int, dscale int) (Decimal, error) {
	if dscale > MaxScale {
		return Decimal{}, overflowError()
	}
	if coef.IsInt64() {
		return Decimal{small: coef.Int64(), dscale: int32(dscale)}, nil
	}
	// Fast path: fewer than maxExp10+dscale digits cannot overflow.
	if float64(coef.BitLen())*0.30103+1 >= float64(maxExp10+dscale) &&
		numDigits(coef)-1-dscale >= maxExp10 {
		return Decimal{}, overflowError()
	}
	return Decimal{coef: coef, dscale: int32(dscale)}, nil
}

// pow10s64 are the powers of ten that fit in an int64.
var pow10s64 = func() [19]int64 {
	var t [19]int64
	t[0] = 1
	for i := 1; i < len(t); i++ {
		t[i] = t[i-1] * 10
	}
	return t
}()

// mul64 returns x·y and whether it fits in an int64.
func mul64(x, y int64) (int64, bool) {
	neg := (x < 0) != (y < 0)
	ux, uy := uint64(x), uint64(y)
	if x < 0 {
		ux = -ux
	}
	if y < 0 {
		uy = -uy
	}
	hi, lo := bits.Mul64(ux, uy)
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(lo), true
	}
	return int64(lo), true
}

// add64 returns x+y and whether it fits in an int64.
func add64(x, y int64) (int64, bool) {
	r := x + y
	return r, (x >= 0) != (y >= 0) || (r >= 0) == (x >= 0)
}

// scaleUp64 returns x·10^n and whether it fits in an int64.
func scaleUp64(x int64, n int32) (int64, bool) {
	if n == 0 {
		return x, true
	}
	if n < 0 || int(n) >= len(pow10s64) {
		return 0, x == 0
	}
	return mul64(x, pow10s64[n])
}

// aligned64 returns the small coefficients of a and b at the larger of
// their display scales, and false when either does not fit in an int64.
func aligned64(a, b Decimal) (x, y int64, scale int32, ok bool) {
	scale = max(a.dscale, b.dscale)
	x, okx := scaleUp64(a.small, scale-a.dscale)
	y, oky := scaleUp64(b.small, scale-b.dscale)
	return x, y, scale, okx && oky
}

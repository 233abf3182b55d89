package onion

import (
	"encoding/binary"
	"math/big"
	"strconv"
	"strings"
)

// Limits of PostgreSQL's numeric storage format.
const (
	numericMaxDscale = 0x3FFF // NUMERIC_DSCALE_MAX
	numericMaxWeight = 32767  // int16 weight, in base-10000 digits
	numericMinWeight = -32768
)

// decParse is a parsed decimal before normalization: value = ±coef·10^exp,
// shown with dscale fraction digits. coef has no leading zeros ("" is 0).
type decParse struct {
	neg    bool
	coef   string
	exp    int64
	dscale int64
}

func numericSyntax(s string) error {
	return pgErr(codeInvalidTextRep, "invalid input syntax for type numeric: \"%s\"", s)
}

func numericFormatOverflow() error {
	return pgErr(codeNumericOutOfRange, "value overflows numeric format")
}

// hasPrefixFold is pg_strncasecmp(s, prefix, len(prefix)) == 0.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// parseNumericText is PostgreSQL 15's numeric_in with t's typmod.
func parseNumericText(s string, t Type) (Value, error) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	rest := s[i:]
	special := uint8(255)
	// The same spellings as float8in, in the same order as numeric_in.
	for _, sp := range []struct {
		word string
		flag uint8
	}{
		{"NaN", numNaN}, {"Infinity", numPInf}, {"+Infinity", numPInf}, {"-Infinity", numNInf},
		{"inf", numPInf}, {"+inf", numPInf}, {"-inf", numNInf},
	} {
		if hasPrefixFold(rest, sp.word) {
			special = sp.flag
			i += len(sp.word)
			break
		}
	}
	if special != 255 {
		for ; i < len(s); i++ {
			if !isSpace(s[i]) {
				return Value{}, numericSyntax(s)
			}
		}
		v := Value{kind: kindNumeric, flag: special}
		if special != numNaN && t.numericConstrained() {
			return Value{}, infiniteOverflow(t)
		}
		return v, nil
	}

	// set_var_from_str
	var d decParse
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		d.neg = s[i] == '-'
		i++
	}
	haveDP := false
	if i < len(s) && s[i] == '.' {
		haveDP = true
		i++
	}
	if i >= len(s) || !isDigit(s[i]) {
		return Value{}, numericSyntax(s)
	}
	var digits strings.Builder
	var fracDigits int64
	for i < len(s) {
		c := s[i]
		if isDigit(c) {
			if digits.Len() > 0 || c != '0' {
				digits.WriteByte(c)
			}
			if haveDP {
				fracDigits++
			}
			i++
		} else if c == '.' {
			if haveDP {
				return Value{}, numericSyntax(s)
			}
			haveDP = true
			i++
		} else {
			break
		}
	}
	d.coef = digits.String()
	d.exp = -fracDigits
	d.dscale = fracDigits
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		// strtol: optional whitespace, optional sign, digits.
		j := i
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		eneg := false
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			eneg = s[j] == '-'
			j++
		}
		if j >= len(s) || !isDigit(s[j]) {
			return Value{}, numericSyntax(s)
		}
		var e int64
		big := false
		for j < len(s) && isDigit(s[j]) {
			if e < 1<<40 {
				e = e*10 + int64(s[j]-'0')
			} else {
				big = true
			}
			j++
		}
		i = j
		// INT_MAX/2 = 1073741823
		if big || e >= 1073741823 {
			return Value{}, numericFormatOverflow()
		}
		if eneg {
			e = -e
		}
		d.exp += e
		d.dscale -= e
		if d.dscale < 0 {
			d.dscale = 0
		}
	}
	// Trailing junk is a syntax error before any typmod error.
	for ; i < len(s); i++ {
		if !isSpace(s[i]) {
			return Value{}, numericSyntax(s)
		}
	}
	if d.coef == "" {
		d.neg = false
	}
	return finishNumeric(d, t)
}

func infiniteOverflow(t Type) error {
	e := pgErr(codeNumericOutOfRange, "numeric field overflow")
	e.Detail = "A field with precision " + strconv.Itoa(t.Precision) + ", scale " + strconv.Itoa(t.Scale) + " cannot hold an infinite value."
	return e
}

// leadExp returns the decimal exponent of the leading digit of a nonzero d.
func (d decParse) leadExp() int64 { return int64(len(d.coef)) - 1 + d.exp }

// finishNumeric applies the typmod of t (apply_typmod: round half away
// from zero to the scale, then check the precision) and the limits of the
// storage format (make_result), and returns the normalized Value.
func finishNumeric(d decParse, t Type) (Value, error) {
	// The limits of the storage format are checked first, on the value
	// as read (as PostgreSQL 15 does), then again after rounding.
	if err := checkNumericFormat(d); err != nil {
		return Value{}, err
	}
	if t.numericConstrained() {
		scale := int64(t.Scale)
		maxdigits := int64(t.Precision - t.Scale)
		d = roundDec(d, scale)
		if d.coef != "" && d.leadExp() >= maxdigits {
			e := pgErr(codeNumericOutOfRange, "numeric field overflow")
			lim := "1"
			if maxdigits != 0 {
				lim = "10^" + strconv.FormatInt(maxdigits, 10)
			}
			e.Detail = "A field with precision " + strconv.Itoa(t.Precision) + ", scale " + strconv.Itoa(t.Scale) +
				" must round to an absolute value less than " + lim + "."
			return Value{}, e
		}
		if d.dscale < 0 {
			d.dscale = 0
		}
		if err := checkNumericFormat(d); err != nil {
			return Value{}, err
		}
	}
	// Now value = coef·10^exp with exp >= -dscale: write it with dscale
	// fraction digits.
	v := Value{kind: kindNumeric, scale: int32(d.dscale)}
	if d.coef != "" {
		if d.neg {
			v.flag = numNeg
		}
		v.s = d.coef + strings.Repeat("0", int(d.exp+d.dscale))
	}
	return v, nil
}

// checkNumericFormat checks the display scale and the weight against the
// limits of the storage format.
func checkNumericFormat(d decParse) error {
	if d.dscale > numericMaxDscale {
		return numericFormatOverflow()
	}
	if d.coef != "" {
		w := floorDiv(d.leadExp(), 4)
		if w > numericMaxWeight || w < numericMinWeight {
			return numericFormatOverflow()
		}
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// roundDec rounds d to rscale fraction digits (rscale may be negative),
// half away from zero, as round_var does, and sets dscale to rscale.
func roundDec(d decParse, rscale int64) decParse {
	d.dscale = rscale
	if d.coef == "" {
		d.exp = -rscale
		return d
	}
	if d.exp >= -rscale {
		return d
	}
	// Drop the digits below 10^-rscale.
	drop := -rscale - d.exp // > 0
	keep := int64(len(d.coef)) - drop
	var first byte = '0'
	if keep >= 0 && keep < int64(len(d.coef)) {
		first = d.coef[keep]
	}
	kept := ""
	if keep > 0 {
		kept = d.coef[:keep]
	}
	if first >= '5' {
		kept = incDigits(kept)
	}
	kept = strings.TrimLeft(kept, "0")
	d.coef = kept
	d.exp = -rscale
	if d.coef == "" {
		d.neg = false
	}
	return d
}

// incDigits adds one to a decimal digit string.
func incDigits(s string) string {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < '9' {
			b[i]++
			return string(b)
		}
		b[i] = '0'
	}
	return "1" + string(b)
}

// appendNumericText is numeric_out.
func appendNumericText(dst []byte, v Value) []byte {
	switch v.flag {
	case numNaN:
		return append(dst, "NaN"...)
	case numPInf:
		return append(dst, "Infinity"...)
	case numNInf:
		return append(dst, "-Infinity"...)
	case numNeg:
		dst = append(dst, '-')
	}
	sc := int(v.scale)
	intLen := len(v.s) - sc
	if intLen > 0 {
		dst = append(dst, v.s[:intLen]...)
	} else {
		dst = append(dst, '0')
	}
	if sc > 0 {
		dst = append(dst, '.')
		if intLen < 0 {
			for j := 0; j < -intLen; j++ {
				dst = append(dst, '0')
			}
			dst = append(dst, v.s...)
		} else {
			dst = append(dst, v.s[intLen:]...)
		}
	}
	return dst
}

// numericGroups returns the base-10000 digits of a finite nonzero v,
// stripped of leading and trailing zero groups, and the weight of the first.
func numericGroups(v Value) (groups []int16, weight int) {
	sc := int(v.scale)
	intLen := len(v.s) - sc
	// Pad the integer part on the left and the fraction on the right to
	// multiples of 4.
	lpad := 0
	if intLen > 0 {
		lpad = (4 - intLen%4) % 4
	} else {
		lpad = -intLen // leading fraction zeros
	}
	var ipart, fpart string
	if intLen > 0 {
		ipart = strings.Repeat("0", lpad) + v.s[:intLen]
		fpart = v.s[intLen:]
	} else {
		fpart = strings.Repeat("0", lpad) + v.s
	}
	fpart += strings.Repeat("0", (4-len(fpart)%4)%4)
	all := ipart + fpart
	weight = len(ipart)/4 - 1
	for i := 0; i < len(all); i += 4 {
		g, _ := strconv.Atoi(all[i : i+4])
		groups = append(groups, int16(g))
	}
	for len(groups) > 0 && groups[0] == 0 {
		groups = groups[1:]
		weight--
	}
	for len(groups) > 0 && groups[len(groups)-1] == 0 {
		groups = groups[:len(groups)-1]
	}
	return groups, weight
}

// appendNumericBinary is numeric_send: ndigits, weight, sign, dscale
// (int16 each), then the base-10000 digits.
func appendNumericBinary(dst []byte, v Value) []byte {
	var sign uint16
	switch v.flag {
	case numNeg:
		sign = 0x4000
	case numNaN:
		sign = 0xC000
	case numPInf:
		sign = 0xD000
	case numNInf:
		sign = 0xF000
	}
	if v.flag != numPos && v.flag != numNeg {
		// PostgreSQL reads the display scale of a special value from
		// bits of its header: 32 for the infinities, 0 for NaN.
		var dscale byte
		if v.flag != numNaN {
			dscale = 32
		}
		return append(dst, 0, 0, 0, 0, byte(sign>>8), byte(sign), 0, dscale)
	}
	if v.s == "" {
		dst = append(dst, 0, 0, 0, 0, 0, 0)
		return binary.BigEndian.AppendUint16(dst, uint16(v.scale))
	}
	groups, weight := numericGroups(v)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(groups)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(weight)))
	dst = binary.BigEndian.AppendUint16(dst, sign)
	dst = binary.BigEndian.AppendUint16(dst, uint16(v.scale))
	for _, g := range groups {
		dst = binary.BigEndian.AppendUint16(dst, uint16(g))
	}
	return dst
}

// parseNumericBinary is numeric_recv with t's typmod applied.
func parseNumericBinary(b []byte, t Type) (Value, error) {
	short := func() (Value, error) {
		return Value{}, pgErr(codeProtocolViolation, "insufficient data left in message")
	}
	if len(b) < 2 {
		return short()
	}
	n := int(binary.BigEndian.Uint16(b[0:]))
	if len(b) < 6 {
		return short()
	}
	weight := int64(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	if sign != 0 && sign != 0x4000 && sign != 0xC000 && sign != 0xD000 && sign != 0xF000 {
		return Value{}, pgErr(codeInvalidBinaryRep, "invalid sign in external \"numeric\" value")
	}
	if len(b) < 8 {
		return short()
	}
	dscale := binary.BigEndian.Uint16(b[6:])
	if dscale&numericMaxDscale != dscale {
		return Value{}, pgErr(codeInvalidBinaryRep, "invalid scale in external \"numeric\" value")
	}
	var digits strings.Builder
	for i := 0; i < n; i++ {
		if len(b) < 8+2*i+2 {
			return short()
		}
		g := int16(binary.BigEndian.Uint16(b[8+2*i:]))
		if g < 0 || g >= 10000 {
			return Value{}, pgErr(codeInvalidBinaryRep, "invalid digit in external \"numeric\" value")
		}
		digits.WriteString(strconv.Itoa(int(g) + 10000)[1:])
	}
	if len(b) != 8+2*n {
		return Value{}, pgErr(codeInvalidBinaryRep, "incorrect binary data format")
	}
	switch sign {
	case 0xC000:
		return Value{kind: kindNumeric, flag: numNaN}, nil
	case 0xD000, 0xF000:
		if t.numericConstrained() {
			return Value{}, infiniteOverflow(t)
		}
		if sign == 0xD000 {
			return Value{kind: kindNumeric, flag: numPInf}, nil
		}
		return Value{kind: kindNumeric, flag: numNInf}, nil
	}
	// value = digits · 10^(4·(weight-n+1)); truncate to dscale (trunc_var).
	d := decParse{neg: sign == 0x4000, coef: strings.TrimLeft(digits.String(), "0"), exp: 4 * (weight - int64(n) + 1), dscale: int64(dscale)}
	if d.coef == "" {
		d.neg = false
	}
	if d.exp < -d.dscale && d.coef != "" {
		drop := -d.dscale - d.exp
		if drop >= int64(len(d.coef)) {
			d.coef = ""
		} else {
			d.coef = strings.TrimLeft(d.coef[:int64(len(d.coef))-drop], "0")
		}
		d.exp = -d.dscale
		if d.coef == "" {
			d.neg = false
		}
	}
	if d.coef == "" {
		d.exp = -d.dscale
	}
	return finishNumeric(d, t)
}

// validNumeric reports whether v is a normalized numeric Value of t.
func validNumeric(v Value, t Type) bool {
	switch v.flag {
	case numNaN:
		return v.s == "" && v.scale == 0
	case numPInf, numNInf:
		return v.s == "" && v.scale == 0 && !t.numericConstrained()
	case numPos, numNeg:
	default:
		return false
	}
	if v.scale < 0 || v.scale > numericMaxDscale || (v.s == "" && v.flag == numNeg) {
		return false
	}
	if v.s != "" && v.s[0] == '0' {
		return false
	}
	for i := 0; i < len(v.s); i++ {
		if !isDigit(v.s[i]) {
			return false
		}
	}
	d := decParse{neg: v.flag == numNeg, coef: v.s, exp: -int64(v.scale), dscale: int64(v.scale)}
	w, err := finishNumeric(d, t)
	return err == nil && w == v
}

// numericKey is the EqualityKey of a numeric: its text without trailing
// fraction zeros.
func numericKey(v Value) []byte {
	if v.flag == numPos || v.flag == numNeg {
		s, sc := v.s, int(v.scale)
		for sc > 0 && len(s) > 0 && s[len(s)-1] == '0' {
			s = s[:len(s)-1]
			sc--
		}
		if s == "" {
			sc = 0
		}
		v.s, v.scale = s, int32(sc)
	}
	return appendNumericText(nil, v)
}

// parseNumericKey parses a numericKey exactly (and only canonical keys).
func parseNumericKey(k string) (Value, bool) {
	switch k {
	case "NaN":
		return Value{kind: kindNumeric, flag: numNaN}, true
	case "Infinity":
		return Value{kind: kindNumeric, flag: numPInf}, true
	case "-Infinity":
		return Value{kind: kindNumeric, flag: numNInf}, true
	}
	v, err := parseNumericText(k, Type{Base: Numeric})
	if err != nil || string(numericKey(v)) != k {
		return Value{}, false
	}
	return v, true
}

// numericRank orders the classes: -Infinity < finite < Infinity < NaN.
func numericRank(v Value) int {
	switch v.flag {
	case numNInf:
		return 0
	case numPInf:
		return 2
	case numNaN:
		return 3
	}
	return 1
}

func compareNumeric(a, b Value) int {
	ra, rb := numericRank(a), numericRank(b)
	if ra != rb || ra != 1 {
		return cmpInt(ra, rb)
	}
	sa, sb := numericSign(a), numericSign(b)
	if sa != sb {
		return cmpInt(sa, sb)
	}
	if sa == 0 {
		return 0
	}
	m := compareMagnitude(a, b)
	if sa < 0 {
		return -m
	}
	return m
}

func numericSign(v Value) int {
	switch {
	case v.s == "":
		return 0
	case v.flag == numNeg:
		return -1
	}
	return 1
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareMagnitude compares |a| and |b| of finite nonzero numerics.
func compareMagnitude(a, b Value) int {
	ia, ib := len(a.s)-int(a.scale), len(b.s)-int(b.scale)
	if ia != ib {
		return cmpInt(ia, ib)
	}
	// Same number of integer digits: compare digit strings aligned on
	// the left, the shorter padded with zeros.
	x, y := a.s, b.s
	for i := 0; i < len(x) || i < len(y); i++ {
		var cx, cy byte = '0', '0'
		if i < len(x) {
			cx = x[i]
		}
		if i < len(y) {
			cy = y[i]
		}
		if cx != cy {
			return cmpInt(int(cx), int(cy))
		}
	}
	return 0
}

// scaledInt returns v·10^scale, an integer for a finite Value of a
// numeric(p,scale) column.
func scaledInt(v Value, scale int) *big.Int {
	x := new(big.Int)
	s := v.s
	if s == "" {
		return x
	}
	shift := scale - int(v.scale)
	switch {
	case shift > 0:
		s += strings.Repeat("0", shift)
	case shift < 0:
		s = s[:max(len(s)+shift, 0)]
		if s == "" {
			return x
		}
	}
	x.SetString(s, 10)
	if v.flag == numNeg {
		x.Neg(x)
	}
	return x
}

// fromScaledInt returns the numeric Value x·10^-scale with display scale
// max(scale, 0).
// fromScaledInt64 is fromScaledInt for an int64, without big.Int.
func fromScaledInt64(x int64, scale int) Value {
	v := Value{kind: kindNumeric, scale: int32(max(scale, 0))}
	if x == 0 {
		return v
	}
	abs := uint64(x)
	if x < 0 {
		v.flag = numNeg
		abs = -abs // two's complement: exact for math.MinInt64 too
	}
	v.s = strconv.FormatUint(abs, 10)
	if scale < 0 {
		v.s += strings.Repeat("0", -scale)
	}
	return v
}

func fromScaledInt(x *big.Int, scale int) Value {
	v := Value{kind: kindNumeric, scale: int32(max(scale, 0))}
	if x.Sign() == 0 {
		return v
	}
	if x.Sign() < 0 {
		v.flag = numNeg
	}
	v.s = new(big.Int).Abs(x).String()
	if scale < 0 {
		v.s += strings.Repeat("0", -scale)
	}
	return v
}

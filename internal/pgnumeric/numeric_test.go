package pgnumeric

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// numCase is one operation and its outcome in the server's notation: the
// result's text, or "ERR sqlstate|message". op is "in" (a::numeric),
// "neg", "round" (round(a, b::int)), "+", "-", "*", "/", "cmp" (-1, 0 or
// 1 from < and =), "ln", "log10" (log(a)), "log" (log(a, b)), "exp",
// "power" (power(a, b)), "^", or "int2+", "int4/", "int8neg"... (the
// integer operators on a::intN and b::intN: + - * / % neg). A want of "len=N"
// only checks the length of a long result here; the differential test
// compares it in full. The outcomes were checked against PostgreSQL 15
// (TestDifferentialTable checks them again).
type numCase struct {
	op, a, b, want string
}

const (
	errOverflow  = "ERR 22003|value overflows numeric format"
	errDivZero   = "ERR 22012|division by zero"
	errLogOfZero = "ERR 2201E|cannot take logarithm of zero"
	errLogOfNeg  = "ERR 2201E|cannot take logarithm of a negative number"
	errZeroToNeg = "ERR 2201F|zero raised to a negative power is undefined"
	errComplex   = "ERR 2201F|a negative number raised to a non-integer power yields a complex result"
)

func errSyntax(s string) string {
	return `ERR 22P02|invalid input syntax for type numeric: "` + s + `"`
}

var numCases = []numCase{
	// Input and output.
	{"in", "0", "", "0"},
	{"in", "-0", "", "0"},
	{"in", "-0.000", "", "0.000"},
	{"in", "00012.3400", "", "12.3400"},
	{"in", "1.5e3", "", "1500"},
	{"in", "1.50e1", "", "15.0"},
	{"in", "123.456e-1", "", "12.3456"},
	{"in", "0.0001e4", "", "1"},
	{"in", "1E-3", "", "0.001"},
	{"in", "1e0005", "", "100000"},
	{"in", "1.e5", "", "100000"},
	{"in", " +.5 ", "", "0.5"},
	{"in", "-.5", "", "-0.5"},
	{"in", "5.", "", "5"},
	{"in", "1e 5", "", "100000"},
	{"in", "1e\n-5", "", "0.00001"},
	{"in", "\v\f1\r\n\t ", "", "1"},
	{"in", "-12345678901234567890.123456789", "", "-12345678901234567890.123456789"},
	{"in", "nan", "", "NaN"},
	{"in", " NaN\t", "", "NaN"},
	{"in", " -INF ", "", "-Infinity"},
	{"in", "+Infinity", "", "Infinity"},
	{"in", "infinity ", "", "Infinity"},
	{"in", "Inf", "", "Infinity"},
	{"in", "-iNfInItY", "", "-Infinity"},
	{"in", "1e+ 5", "", errSyntax("1e+ 5")},
	{"in", "1e", "", errSyntax("1e")},
	{"in", "1e+", "", errSyntax("1e+")},
	{"in", "1e5.5", "", errSyntax("1e5.5")},
	{"in", ".", "", errSyntax(".")},
	{"in", ".e5", "", errSyntax(".e5")},
	{"in", "", "", errSyntax("")},
	{"in", "  ", "", errSyntax("  ")},
	{"in", "+", "", errSyntax("+")},
	{"in", "+-1", "", errSyntax("+-1")},
	{"in", "- 1", "", errSyntax("- 1")},
	{"in", "1.2.3", "", errSyntax("1.2.3")},
	{"in", "1..2", "", errSyntax("1..2")},
	{"in", "+nan", "", errSyntax("+nan")},
	{"in", "-NaN", "", errSyntax("-NaN")},
	{"in", "nanx", "", errSyntax("nanx")},
	{"in", "infinit", "", errSyntax("infinit")},
	{"in", "infinityinfinity", "", errSyntax("infinityinfinity")},
	{"in", "1_000", "", errSyntax("1_000")},
	{"in", "0x10", "", errSyntax("0x10")},
	{"in", "1 2", "", errSyntax("1 2")},
	{"in", "1\u00a0", "", errSyntax("1\u00a0")},
	{"in", "\u212anf", "", errSyntax("\u212anf")},
	{"in", "1e-16383", "", "len=16385"},
	{"in", "0e-16383", "", "len=16385"},
	{"in", "0e-16384", "", errOverflow},
	{"in", "1e-16384", "", errOverflow},
	{"in", "0e-16384x", "", errSyntax("0e-16384x")},
	{"in", "1e131071", "", "len=131072"},
	{"in", "9.99e131071", "", "len=131072"},
	{"in", "1e131072", "", errOverflow},
	{"in", "0.0001e131075", "", "len=131072"},
	{"in", "0e131072", "", "0"},
	{"in", "0e999999999", "", "0"},
	{"in", "1e1073741822", "", errOverflow},
	{"in", "0e1073741822", "", "0"},
	{"in", "0e1073741823", "", errOverflow},
	{"in", "1e-1073741823", "", errOverflow},
	{"in", "1e99999999999999999999", "", errOverflow},
	{"in", "1e99999999999999999999x", "", errOverflow},
	{"in", "1e-99999999999999999999", "", errOverflow},

	// Addition and subtraction: exact, the larger scale.
	{"+", "1.5", "2.25", "3.75"},
	{"+", "1.50", "1.5", "3.00"},
	{"+", "-1.5", "1.5", "0.0"},
	{"+", "0.000", "0", "0.000"},
	{"+", "99999999999999999999.99", "0.01", "100000000000000000000.00"},
	{"+", "Infinity", "-Infinity", "NaN"},
	{"+", "NaN", "Infinity", "NaN"},
	{"+", "Infinity", "1", "Infinity"},
	{"+", "1", "-Infinity", "-Infinity"},
	{"+", "-Infinity", "-Infinity", "-Infinity"},
	{"+", "9.99e131071", "9.99e131071", errOverflow},
	{"-", "Infinity", "Infinity", "NaN"},
	{"-", "-Infinity", "-Infinity", "NaN"},
	{"-", "Infinity", "-Infinity", "Infinity"},
	{"-", "1", "Infinity", "-Infinity"},
	{"-", "1", "-Infinity", "Infinity"},
	{"-", "-Infinity", "1", "-Infinity"},
	{"-", "1", "NaN", "NaN"},
	{"-", "1.5", "1.5", "0.0"},
	{"-", "0.1", "0.10000", "0.00000"},
	{"-", "-9.99e131071", "9.99e131071", errOverflow},

	// Multiplication: scale s1 + s2, capped at 16383.
	{"*", "1.5", "2.25", "3.375"},
	{"*", "1.10", "2", "2.20"},
	{"*", "-0.5", "0.5", "-0.25"},
	{"*", "0.00", "-5", "0.00"},
	{"*", "0", "Infinity", "NaN"},
	{"*", "-Infinity", "0.00", "NaN"},
	{"*", "-Infinity", "-2", "Infinity"},
	{"*", "Infinity", "-Infinity", "-Infinity"},
	{"*", "NaN", "0", "NaN"},
	{"*", "1e-10000", "1.5e-10000", "len=16385"},
	{"*", "5e-10000", "1e-6384", "len=16385"},
	{"*", "4e-10000", "-1e-6384", "len=16385"},
	{"*", "1e131071", "10", errOverflow},
	{"*", "1e131071", "0.1", "len=131073"},

	// Division: select_div_scale, rounded half away from zero.
	{"/", "1", "3", "0.33333333333333333333"},
	{"/", "2", "3", "0.66666666666666666667"},
	{"/", "-2", "3", "-0.66666666666666666667"},
	{"/", "10", "3", "3.3333333333333333"},
	{"/", "10000", "3", "3333.3333333333333333"},
	{"/", "0", "3", "0.00000000000000000000"},
	{"/", "0.000", "7", "0.00000000000000000000"},
	{"/", "1", "7", "0.14285714285714285714"},
	{"/", "9999", "10000", "0.99990000000000000000"},
	{"/", "10000", "9999", "1.0001000100010001"},
	{"/", "1", "10000", "0.000100000000000000000000"},
	{"/", "1", "3.000000000000000000000000000000", "0.333333333333333333333333333333"},
	{"/", "123456789012345678901234567890", "0.000001", "123456789012345678901234567890000000.000000"},
	{"/", "5", "2", "2.5000000000000000"},
	{"/", "-5", "2", "-2.5000000000000000"},
	{"/", "0.5", "0.3", "1.6666666666666667"},
	{"/", "1e-20", "3", "0.0000000000000000000033333333333333333333"},
	{"/", "2", "3e-20", "66666666666666666666.66666666666666666667"},
	{"/", "1e-1000", "3", "len=1002"},
	{"/", "1e-16383", "3", "len=1002"},
	{"/", "1e1000", "7", "len=1000"},
	{"/", "1", "0", errDivZero},
	{"/", "0", "0.00", errDivZero},
	{"/", "Infinity", "0", errDivZero},
	{"/", "NaN", "0", "NaN"},
	{"/", "0", "NaN", "NaN"},
	{"/", "Infinity", "Infinity", "NaN"},
	{"/", "Infinity", "-2", "-Infinity"},
	{"/", "-Infinity", "-0.5", "Infinity"},
	{"/", "1", "Infinity", "0"},
	{"/", "1.00", "-Infinity", "0"},
	{"/", "1e131071", "0.001", errOverflow},

	// Rounding.
	{"round", "1.5", "0", "2"},
	{"round", "2.5", "0", "3"},
	{"round", "-2.5", "0", "-3"},
	{"round", "-0.4", "0", "0"},
	{"round", "1.5", "3", "1.500"},
	{"round", "1234.5", "-2", "1200"},
	{"round", "5", "-1", "10"},
	{"round", "-5", "-1", "-10"},
	{"round", "0.00049", "3", "0.000"},
	{"round", "999.9995", "3", "1000.000"},
	{"round", "-999.9995", "3", "-1000.000"},
	{"round", "9.5", "-2000", "0"},
	{"round", "5e100", "-101", "len=102"},
	{"round", "5e100", "-102", "0"},
	{"round", "123.456", "-2147483648", "0"},
	{"round", "123.456", "2147483647", "len=16387"},
	{"round", "1.5", "20000", "len=16385"},
	{"round", "NaN", "2", "NaN"},
	{"round", "-Infinity", "2", "-Infinity"},
	{"round", "9.99e131071", "-2000", "len=131072"},
	{"round", "9.99e131071", "-131071", errOverflow},
	{"round", "5e131071", "-131072", errOverflow},
	{"round", "4.99e131071", "-131072", "0"},
	{"round", "5e131071", "-131073", "0"},

	// Comparison.
	{"cmp", "NaN", "NaN", "0"},
	{"cmp", "NaN", "Infinity", "1"},
	{"cmp", "Infinity", "NaN", "-1"},
	{"cmp", "-Infinity", "NaN", "-1"},
	{"cmp", "Infinity", "Infinity", "0"},
	{"cmp", "-Infinity", "-Infinity", "0"},
	{"cmp", "1", "-Infinity", "1"},
	{"cmp", "1e131071", "Infinity", "-1"},
	{"cmp", "1.5", "1.50", "0"},
	{"cmp", "-0", "0.000", "0"},
	{"cmp", "1e-16383", "0", "1"},
	{"cmp", "2", "10", "-1"},
	{"cmp", "-2", "-10", "1"},

	// Negation.
	{"neg", "0.00", "", "0.00"},
	{"neg", "-1.50", "", "1.50"},
	{"neg", "NaN", "", "NaN"},
	{"neg", "Infinity", "", "-Infinity"},
	{"neg", "-Infinity", "", "Infinity"},

	// Integers.
	{"int2+", "32767", "1", "ERR 22003|smallint out of range"},
	{"int2+", "-32768", "-1", "ERR 22003|smallint out of range"},
	{"int2+", "-32768", "32767", "-1"},
	{"int2-", "-32768", "1", "ERR 22003|smallint out of range"},
	{"int2-", "0", "-32768", "ERR 22003|smallint out of range"},
	{"int2-", "-1", "-32768", "32767"},
	{"int2*", "256", "128", "ERR 22003|smallint out of range"},
	{"int2*", "-256", "128", "-32768"},
	{"int2*", "-32768", "-1", "ERR 22003|smallint out of range"},
	{"int2/", "-32768", "-1", "ERR 22003|smallint out of range"},
	{"int2/", "7", "0", errDivZero},
	{"int2%", "-32768", "-1", "0"},
	{"int2neg", "-32768", "", "ERR 22003|smallint out of range"},
	{"int4+", "2147483647", "1", "ERR 22003|integer out of range"},
	{"int4-", "-2147483648", "1", "ERR 22003|integer out of range"},
	{"int4*", "2147483647", "2", "ERR 22003|integer out of range"},
	{"int4*", "-1", "-2147483648", "ERR 22003|integer out of range"},
	{"int4*", "65536", "-32768", "-2147483648"},
	{"int4/", "-2147483648", "-1", "ERR 22003|integer out of range"},
	{"int4/", "-7", "2", "-3"},
	{"int4/", "7", "-2", "-3"},
	{"int4/", "0", "0", errDivZero},
	{"int4%", "-7", "2", "-1"},
	{"int4%", "7", "-2", "1"},
	{"int4%", "-2147483648", "-1", "0"},
	{"int4%", "7", "0", errDivZero},
	{"int4neg", "-2147483648", "", "ERR 22003|integer out of range"},
	{"int4neg", "2147483647", "", "-2147483647"},
	{"int8+", "9223372036854775807", "1", "ERR 22003|bigint out of range"},
	{"int8-", "-9223372036854775808", "1", "ERR 22003|bigint out of range"},
	{"int8*", "4611686018427387904", "2", "ERR 22003|bigint out of range"},
	{"int8*", "-4611686018427387904", "2", "-9223372036854775808"},
	{"int8*", "-9223372036854775808", "-1", "ERR 22003|bigint out of range"},
	{"int8*", "3037000500", "3037000500", "ERR 22003|bigint out of range"},
	{"int8*", "3037000499", "-3037000499", "-9223372030926249001"},
	{"int8/", "-9223372036854775808", "-1", "ERR 22003|bigint out of range"},
	{"int8/", "-9223372036854775808", "2", "-4611686018427387904"},
	{"int8%", "-9223372036854775808", "-1", "0"},
	{"int8%", "1", "0", errDivZero},
	{"int8neg", "-9223372036854775808", "", "ERR 22003|bigint out of range"},

	// Logarithms (ln, log(x) = log10, log(base, x)): the result scale
	// aims at 16 significant digits, from estimate_ln_dweight.
	{"ln", "1", "", "0.0000000000000000"},
	{"ln", "2", "", "0.6931471805599453"},
	{"ln", "10", "", "2.3025850929940457"},
	{"ln", "0.5", "", "-0.6931471805599453"},
	{"ln", "0.9999", "", "-0.00010000500033335834"},
	{"ln", "1.0001", "", "0.00009999500033330834"},
	{"ln", "1e-100", "", "len=105"},
	{"ln", "1e100", "", "230.25850929940457"},
	{"ln", "0", "", errLogOfZero},
	{"ln", "0.000", "", errLogOfZero},
	{"ln", "-1", "", errLogOfNeg},
	{"ln", "NaN", "", "NaN"},
	{"ln", "Infinity", "", "Infinity"},
	{"ln", "-Infinity", "", errLogOfNeg},
	{"ln", "1.00000000000000000000000000000000000001", "", "0.000000000000000000000000000000000000010000000000000000"},
	{"ln", "0.99999999999999999999", "", "-0.000000000000000000010000000000000000"},
	{"ln", "2.718281828459045235360287", "", "1.000000000000000000000000"},
	{"ln", "12345678901234567890.123", "", "43.959837789202521"},
	{"ln", "1.5000", "", "0.4054651081081644"},
	{"ln", "1e-16383", "", "len=1007"},
	{"ln", "9.99e131071", "", "301804.43230841522"},
	{"ln", "1." + strings.Repeat("0", 1000) + "5", "", "len=1002"}, // 0.0*999 1, see TestLongResults
	{"ln", "0." + strings.Repeat("9", 1001) + "5", "", "len=1002"},
	{"ln", "1." + strings.Repeat("3", 16383), "", "len=1002"},
	{"log10", "100", "", "2.0000000000000000"},
	{"log10", "1000", "", "3.0000000000000000"},
	{"log10", "0.001", "", "-3.0000000000000000"},
	{"log10", "1", "", "0.0000000000000000"},
	{"log10", "2", "", "0.3010299956639812"},
	{"log10", "0", "", errLogOfZero},
	{"log10", "-5", "", errLogOfNeg},
	{"log10", "NaN", "", "NaN"},
	{"log10", "Infinity", "", "Infinity"},
	{"log10", "-Infinity", "", errLogOfNeg},
	{"log10", "1e100", "", "100.00000000000000"},
	{"log10", "1.0001", "", "0.00004342727686266964"},
	{"log10", "0.9999", "", "-0.00004343161980751038"},
	{"log10", "31.6227766016837933", "", "1.5000000000000000"},
	{"log", "2", "8", "3.0000000000000000"},
	{"log", "2", "1024", "10.0000000000000000"},
	{"log", "10", "0.001", "-3.0000000000000000"},
	{"log", "1", "1", errDivZero},
	{"log", "1", "5", errDivZero},
	{"log", "0", "5", errLogOfZero},
	{"log", "-2", "8", errLogOfNeg},
	{"log", "2", "0", errLogOfZero},
	{"log", "2", "-1", errLogOfNeg},
	{"log", "NaN", "1", "NaN"},
	{"log", "2", "NaN", "NaN"},
	{"log", "Infinity", "2", "0"},
	{"log", "Infinity", "Infinity", "NaN"},
	{"log", "2", "Infinity", "Infinity"},
	{"log", "1", "Infinity", "Infinity"},
	{"log", "Infinity", "0", errLogOfZero},
	{"log", "0", "-Infinity", errLogOfNeg},
	{"log", "0", "-1", errLogOfZero},
	{"log", "-1", "0", errLogOfNeg},
	{"log", "Infinity", "1", "0"},
	{"log", "-Infinity", "2", errLogOfNeg},
	{"log", "Infinity", "-2", errLogOfNeg},
	{"log", "0.5", "0.25", "2.0000000000000000"},
	{"log", "100", "10", "0.5000000000000000"},
	{"log", "4", "8", "1.5000000000000000"},
	{"log", "8", "2", "0.3333333333333333"},
	{"log", "1.000000000000000000000004", "1.00000000000000000000067", "167.499999999999999999944223"},
	{"log", "1.0000000001", "1.00000000000000000000000000000000000000000000000000000000000000000000000001", "len=82"},
	{"log", "10.00", "1e-50", "-50.00000000000000000000000000000000000000000000000000"},
	{"log", "1e-100", "1e100", "len=103"},
	// ln(base) rounds to 0 at the scale log_var gives it.
	{"log", "1.0000000001", "1." + strings.Repeat("0", 2000) + "1", errDivZero},
	{"log", "10", "1." + strings.Repeat("0", 995) + "1", "len=1002"},
	{"log", "1." + strings.Repeat("3", 16383), "2." + strings.Repeat("7", 16383), "len=1002"},

	// exp: 22003 from 6000 on, 0 from -6000 down.
	{"exp", "0", "", "1.0000000000000000"},
	{"exp", "0.000", "", "1.0000000000000000"},
	{"exp", "1", "", "2.7182818284590452"},
	{"exp", "-1", "", "0.3678794411714423"},
	{"exp", "0.0001", "", "1.0001000050001667"},
	{"exp", "100", "", "26881171418161354484126255515800135873611119"},
	{"exp", "-100", "", "0.00000000000000000000000000000000000000000003720075976020836"},
	{"exp", "1.5e-20", "", "1.000000000000000000015"},
	{"exp", "709.78", "", "len=312"},
	{"exp", "5999.99", "", "len=2609"},
	{"exp", "6000", "", errOverflow},
	{"exp", "-6000", "", "len=1002"},
	{"exp", "-5999.99", "", "len=1002"},
	{"exp", "1e100", "", errOverflow},
	{"exp", "-1e100", "", "len=1002"},
	{"exp", "NaN", "", "NaN"},
	{"exp", "Infinity", "", "Infinity"},
	{"exp", "-Infinity", "", "0"},
	{"exp", "90.000000000000000000000000000000000000005555", "", "len=83"},
	{"exp", "0." + strings.Repeat("0", 1000) + "5", "", "len=1002"}, // 1.0*999 1
	{"exp", "-0." + strings.Repeat("0", 1000) + "5", "", "len=1002"},
	{"exp", "-5999." + strings.Repeat("9", 16383), "", "len=1002"},

	// power and ^: the integer path (scale 16 or the base's), ties
	// rounded up, the general path, the special values.
	{"power", "2", "10", "1024.0000000000000000"},
	{"power", "2", "3.000", "8.0000000000000000"},
	{"power", "2", "-17", "0.0000076293945313"},
	{"power", "0.5", "17", "0.0000076293945313"},
	{"power", "0.4", "-17", "5820766.0913467407226563"},
	{"power", "12.5", "17", "4440892098500626161.6945266723632813"},
	{"power", "2", "0.5", "1.4142135623730950"},
	{"power", "4", "0.5", "2.0000000000000000"},
	{"power", "100", "1.5", "1000.0000000000000"},
	{"power", "0.01", "0.5", "0.10000000000000000"},
	{"power", "-2", "3", "-8.0000000000000000"},
	{"power", "-2", "3.000", "-8.0000000000000000"},
	{"power", "-2", "-3", "-0.1250000000000000"},
	{"power", "-2", "0.5", errComplex},
	{"power", "0", "0", "1.0000000000000000"},
	{"power", "0.00", "0", "1.0000000000000000"},
	{"power", "0", "-1", errZeroToNeg},
	{"power", "0", "0.5", "0.0000000000000000"},
	{"power", "0", "1e20", "0.0000000000000000"},
	{"power", "0", "3", "0.0000000000000000"},
	{"power", "NaN", "0", "1"},
	{"power", "NaN", "0.0", "1"},
	{"power", "1", "NaN", "1"},
	{"power", "NaN", "1", "NaN"},
	{"power", "2", "NaN", "NaN"},
	{"power", "NaN", "NaN", "NaN"},
	{"power", "-2", "Infinity", "Infinity"},
	{"power", "-0.5", "Infinity", "0"},
	{"power", "-1", "-Infinity", "1"},
	{"power", "0.5", "-Infinity", "Infinity"},
	{"power", "2", "-Infinity", "0"},
	{"power", "1", "Infinity", "1"},
	{"power", "0", "Infinity", "0"},
	{"power", "0", "-Infinity", errZeroToNeg},
	{"power", "Infinity", "-2", "0"},
	{"power", "Infinity", "0", "1"},
	{"power", "Infinity", "0.5", "Infinity"},
	{"power", "-Infinity", "3", "-Infinity"},
	{"power", "-Infinity", "4", "Infinity"},
	{"power", "-Infinity", "0.5", errComplex},
	{"power", "-Infinity", "-3", "0"},
	{"power", "-Infinity", "Infinity", "Infinity"},
	{"power", "10", "2700.5", errOverflow},
	{"power", "1.5", "2147483648", errOverflow},
	{"power", "-1.5", "2147483647", errOverflow},
	{"power", "10", "-2147483648", "0.0000000000000000"},
	{"power", "0.99", "2147483647", "0.0000000000000000"},
	{"power", "1.0000001", "1e10", "len=443"},
	{"power", "10", "131071", "len=131089"},
	{"power", "10", "131072", errOverflow},
	{"power", "1e100", "1e100", errOverflow},
	{"power", "0.1", "1e100", "len=1002"},
	{"power", "-1", "1e30", "1.0000000000000000"},
	{"power", "-1", "1000000000000000000001", "-1.0000000000000000"},
	{"power", "1.0000000000000000009", "15.5", "1.0000000000000000139"},
	{"power", "0.99999999999999999999", "4.5", "0.99999999999999999995"},
	{"power", "2", "3.5", "11.313708498984760"},
	{"power", "-8", "0.3333333333333333", errComplex},
	{"power", "1.0001", "10000.5", "2.7182818307240536"},
	{"power", "3.14159", "2.71828", "22.459059142513843"},
	{"power", "0.000001", "-3", "1000000000000000000.0000000000000000"},
	{"power", "1.23456789", "-7", "0.2287679391221273"},
	{"power", "7", "2000.5", "len=1693"},
	{"power", "0.5", "-6000.5", "len=1809"},
	{"power", "9.9", "-100000", "0.0000000000000000"},
	{"power", "1." + strings.Repeat("0", 16382) + "1", "1e16383", "len=1002"},
	{"power", "1." + strings.Repeat("3", 16383), "2." + strings.Repeat("7", 16383), "len=1002"},
	{"^", "2", "10", "1024.0000000000000000"},
	{"^", "-3", "0.5", errComplex},
	{"^", "1.1", "-2.5", "0.7879856109467705"},
}

// errText renders err in the differential tests' notation, or says why it
// is not a server error.
func errText(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Severity != "ERROR" || pe.SeverityUnlocalized != "ERROR" {
		return "bad error " + err.Error()
	}
	return "ERR " + pe.Code + "|" + pe.Message
}

// local evaluates a case with this package.
func local(op, a, b string) string {
	if strings.HasPrefix(op, "int") {
		return localInt(op, a, b)
	}
	x, err := Parse(a)
	if err != nil {
		return errText(err)
	}
	var d Decimal
	switch op {
	case "in":
		return x.String()
	case "neg":
		d = x.Neg()
	case "round", "trunc":
		s, err := strconv.Atoi(b)
		if err != nil {
			return "bad scale " + b
		}
		if op == "round" {
			d, err = x.Round(s)
		} else {
			d, err = x.Trunc(s)
		}
		if err != nil {
			return errText(err)
		}
	case "ceil", "floor":
		if op == "ceil" {
			d, err = x.Ceil()
		} else {
			d, err = x.Floor()
		}
		if err != nil {
			return errText(err)
		}
	case "abs":
		d = x.Abs()
	case "ln", "log10", "exp":
		switch op {
		case "ln":
			d, err = x.Ln()
		case "log10":
			d, err = x.Log10()
		default:
			d, err = x.Exp()
		}
		if err != nil {
			return errText(err)
		}
	default:
		y, err := Parse(b)
		if err != nil {
			return errText(err)
		}
		switch op {
		case "+":
			d, err = x.Add(y)
		case "-":
			d, err = x.Sub(y)
		case "*":
			d, err = x.Mul(y)
		case "/":
			d, err = x.Div(y)
		case "cmp":
			return strconv.Itoa(x.Cmp(y))
		case "mod":
			d, err = x.Mod(y)
		case "log":
			d, err = LogBase(x, y)
		case "power", "^":
			d, err = x.Power(y)
		default:
			return "bad op " + op
		}
		if err != nil {
			return errText(err)
		}
	}
	return d.String()
}

func localInt(op, a, b string) string {
	bits, _ := strconv.Atoi(op[3:4])
	x, err1 := strconv.ParseInt(a, 10, 8*bits)
	y, err2 := strconv.ParseInt(b, 10, 8*bits)
	name := op[4:]
	if err1 != nil || (err2 != nil && name != "neg") {
		return "bad operands " + a + ", " + b
	}
	var r int64
	var err error
	switch bits {
	case 2:
		var v int16
		v, err = intOp(name, int16(x), int16(y))
		r = int64(v)
	case 4:
		var v int32
		v, err = intOp(name, int32(x), int32(y))
		r = int64(v)
	default:
		r, err = intOp(name, x, y)
	}
	if err != nil {
		return errText(err)
	}
	return strconv.FormatInt(r, 10)
}

func intOp[T Int](name string, a, b T) (T, error) {
	switch name {
	case "+":
		return AddInt(a, b)
	case "-":
		return SubInt(a, b)
	case "*":
		return MulInt(a, b)
	case "/":
		return DivInt(a, b)
	case "%":
		return ModInt(a, b)
	case "neg":
		return NegInt(a)
	}
	return 0, errors.New("bad op " + name)
}

func TestCases(t *testing.T) {
	for _, c := range numCases {
		got := local(c.op, c.a, c.b)
		if n, ok := strings.CutPrefix(c.want, "len="); ok && !strings.HasPrefix(got, "ERR") {
			got = "len=" + strconv.Itoa(len(got))
			c.want = "len=" + n
		}
		if got != c.want {
			t.Errorf("%s %q %q: got %.80s, want %.80s", c.op, c.a, c.b, got, c.want)
		}
	}
}

// TestLongResults checks the digits of some long results of the table.
func TestLongResults(t *testing.T) {
	for _, c := range []struct {
		op, a, b string
		want     string // with "0*N" standing for N zeros
	}{
		{"in", "1e-16383", "", "0.0*16382 1"},
		{"in", "1e131071", "", "1 0*131071"},
		{"*", "1e-10000", "1.5e-10000", "0.0*16383"},
		{"*", "5e-10000", "1e-6384", "0.0*16382 1"},
		{"*", "4e-10000", "-1e-6384", "0.0*16383"},
		{"/", "1e-1000", "3", "0.0*1000"},
		{"/", "1e1000", "7", "1 428571*166 4 2 9"},
		{"round", "1.5", "20000", "1.5 0*16382"},
		{"round", "5e100", "-101", "1 0*101"},
		// Halfway at scale 1000: exp and ln round the first terms of
		// their series, which land exactly halfway, away from zero
		// (exactly, ln(1 + 5e-1001) is just below halfway).
		{"exp", "0." + strings.Repeat("0", 1000) + "5", "", "1. 0*999 1"},
		{"exp", "-0." + strings.Repeat("0", 1000) + "5", "", "1. 0*1000"},
		{"ln", "1." + strings.Repeat("0", 1000) + "5", "", "0.0*999 1"},
		{"log", "10", "1." + strings.Repeat("0", 995) + "1", "0.0*996 4343"},
		{"power", "10", "131071", "1 0*131071 . 0*16"},
	} {
		var want strings.Builder
		for part := range strings.FieldsSeq(c.want) {
			if s, n, ok := strings.Cut(part, "*"); ok {
				k, _ := strconv.Atoi(n)
				if s == "0.0" {
					want.WriteString("0.")
					s = "0"
				}
				want.WriteString(strings.Repeat(s, k))
			} else {
				want.WriteString(part)
			}
		}
		if got := local(c.op, c.a, c.b); got != want.String() {
			t.Errorf("%s %q %q: got %.60s... (%d chars), want %.60s... (%d chars)", c.op, c.a, c.b, got, len(got), want.String(), len(want.String()))
		}
	}
}

func TestDivScale(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1", "3", 20},
		{"10", "3", 16},
		{"9999", "3", 16},
		{"10000", "3", 16},
		{"3", "3", 20},
		{"4", "3", 16},
		{"0", "3", 20},
		{"1.23", "0.000", 16},
		{"1e-1000", "3", 1000},
		{"1", "1e-12", 12},
		{"1e20", "3", 0},
		{"1.5e20", "1.5", 1},
		{"1e-12", "1e12", 44},
		{"1e-300", "1e700", 1000},
	} {
		if got := DivScale(MustParse(c.a), MustParse(c.b)); got != c.want {
			t.Errorf("DivScale(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestNbaseLead(t *testing.T) {
	for _, c := range []struct {
		v         string
		w, first  int
		wantScale int
	}{
		{"0", 0, 0, 0},
		{"0.000", 0, 0, 3},
		{"1", 0, 1, 0},
		{"9999", 0, 9999, 0},
		{"10000", 1, 1, 0},
		{"-123456789", 2, 1, 0},
		{"0.5", -1, 5000, 1},
		{"0.0001", -1, 1, 4},
		{"0.00001", -2, 1000, 5},
		{"12.34e-6", -2, 1234, 8},
	} {
		d := MustParse(c.v)
		w, f := nbaseLead(d)
		if w != c.w || f != c.first || d.Scale() != c.wantScale {
			t.Errorf("%s: weight %d, first %d, scale %d; want %d, %d, %d", c.v, w, f, d.Scale(), c.w, c.first, c.wantScale)
		}
	}
}

// sumCase is an aggregate over values (nil is NULL).
type sumCase struct {
	vals          []string
	sum, avg, cnt string
}

var sumCases = []sumCase{
	{[]string{"1.5", "2.25", "NULL"}, "3.75", "1.8750000000000000", "2"},
	{[]string{"1.5", "2.25", "Infinity", "NaN"}, "NaN", "NaN", "4"},
	{[]string{"1.5", "-Infinity", "Infinity"}, "NaN", "NaN", "3"},
	{[]string{"Infinity", "1"}, "Infinity", "Infinity", "2"},
	{[]string{"-Infinity", "-Infinity", "1"}, "-Infinity", "-Infinity", "3"},
	{[]string{"1", "-1"}, "0", "0.00000000000000000000", "2"},
	{[]string{"10000", "20000", "30000"}, "60000", "20000.000000000000", "3"},
	{[]string{"0.00"}, "0.00", "0.00000000000000000000", "1"},
	{[]string{"1.10", "2.205", "3"}, "6.305", "2.1016666666666667", "3"},
	{[]string{"1", "2"}, "3", "1.5000000000000000", "2"},
	{[]string{"NULL"}, "NULL", "NULL", "0"},
	{[]string{"123456789012.34", "0.01", "-99999999999.99"}, "23456789012.36", "7818929670.78666667", "3"},
	{[]string{"9.99e131071", "9.99e131071", "-9.99e131071"}, "len=131072", "len=131072", "3"},
	{[]string{"9.99e131071", "9.99e131071"}, errOverflow, errOverflow, "2"},
}

// localSum evaluates an aggregate case with Sum.
func localSum(vals []string) (sum, avg, cnt string) {
	var s Sum
	for _, v := range vals {
		if v == "NULL" {
			continue
		}
		d, err := Parse(v)
		if err != nil {
			return "bad value " + v, "", ""
		}
		s.Add(d)
	}
	text := func(d Decimal, ok bool, err error) string {
		switch {
		case err != nil:
			return errText(err)
		case !ok:
			return "NULL"
		}
		return d.String()
	}
	return text(s.Result()), text(s.Avg()), strconv.FormatInt(s.Count(), 10)
}

func TestSum(t *testing.T) {
	for _, c := range sumCases {
		sum, avg, cnt := localSum(c.vals)
		for _, p := range []*string{&sum, &avg} {
			if strings.HasPrefix(c.sum, "len=") && !strings.HasPrefix(*p, "ERR") {
				*p = "len=" + strconv.Itoa(len(*p))
			}
		}
		if sum != c.sum || avg != c.avg || cnt != c.cnt {
			t.Errorf("%q: sum %s, avg %s, count %s; want %s, %s, %s", c.vals, sum, avg, cnt, c.sum, c.avg, c.cnt)
		}
	}
	if _, err := Avg(FromInt64(1), 0); err == nil {
		t.Error("Avg with count 0 did not fail")
	}
}

func TestIntAvg(t *testing.T) {
	// avg(int4) of 1, 2, 2 and of two int4 or int8 maxima.
	for _, c := range []struct {
		sum   int64
		count int64
		want  string
	}{
		{5, 3, "1.6666666666666667"},
		{2 * math.MaxInt32, 2, "2147483647.00000000"},
	} {
		got, err := Avg(FromInt64(c.sum), c.count)
		if err != nil || got.String() != c.want {
			t.Errorf("Avg(%d, %d) = %v, %v; want %s", c.sum, c.count, got, err, c.want)
		}
	}
	var s Sum
	s.Add(FromInt64(math.MaxInt64))
	s.Add(FromInt64(math.MaxInt64))
	if sum, _, _ := s.Result(); sum.String() != "18446744073709551614" {
		t.Errorf("sum of two int8 maxima: %s", sum)
	}
	if avg, _, _ := s.Avg(); avg.String() != "9223372036854775807" {
		t.Errorf("avg of two int8 maxima: %s", avg)
	}
}

func TestAccessors(t *testing.T) {
	d := MustParse("-12.340")
	if d.Sign() != -1 || d.Scale() != 3 || d.Coefficient().Int64() != -12340 || !d.IsFinite() || d.IsNaN() || d.IsInf() {
		t.Errorf("accessors of %s: %d %d %v", d, d.Sign(), d.Scale(), d.Coefficient())
	}
	d.Coefficient().SetInt64(5)
	if d.String() != "-12.340" {
		t.Errorf("Coefficient shares its digits: %s", d)
	}
	var z Decimal
	if z.String() != "0" || z.Sign() != 0 || !z.IsFinite() {
		t.Errorf("zero Decimal: %s", z)
	}
	if NaN().Sign() != 0 || Inf(-1).Sign() != -1 || Inf(1).String() != "Infinity" || !Inf(0).IsInf() || !NaN().IsNaN() || NaN().IsFinite() {
		t.Error("special values")
	}
	if FromInt64(math.MinInt64).String() != "-9223372036854775808" || FromInt64(0).String() != "0" {
		t.Error("FromInt64")
	}
	if got := string(MustParse("0.05").AppendText([]byte("x="))); got != "x=0.05" {
		t.Errorf("AppendText: %s", got)
	}
	// Operations leave their operands alone.
	a, b := MustParse("1.5"), MustParse("-2.25")
	for _, f := range []func() (Decimal, error){
		func() (Decimal, error) { return a.Add(b) },
		func() (Decimal, error) { return a.Sub(b) },
		func() (Decimal, error) { return a.Mul(b) },
		func() (Decimal, error) { return a.Div(b) },
		func() (Decimal, error) { return a.Round(-1) },
		func() (Decimal, error) { return a.Neg(), nil },
	} {
		if _, err := f(); err != nil || a.String() != "1.5" || b.String() != "-2.25" {
			t.Fatalf("operands changed: %s %s %v", a, b, err)
		}
	}
}

func BenchmarkAvg(b *testing.B) {
	x := MustParse("38250.75")
	for b.Loop() {
		var s Sum
		for range 100 {
			s.Add(x)
		}
		if _, _, err := s.Avg(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiv(b *testing.B) {
	x, y := MustParse("123456.78"), MustParse("0.0700")
	for b.Loop() {
		if _, err := x.Div(y); err != nil {
			b.Fatal(err)
		}
	}
}

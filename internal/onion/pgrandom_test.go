package onion

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

var (
	randomSeed   = flag.Uint64("onion.seed", 1, "seed of the randomized differential tests")
	randomInputs = flag.Int("onion.inputs", 1500, "inputs per type in the randomized differential tests")
)

// tryInputsSQL creates a function that stores each input (as a literal, so
// through the type's input function and the column's typmod coercion, as a
// parameter would go) into table tbl and returns its output (format('%s')
// calls the output function), its send function's bytes, or the error.
const tryInputsSQL = `
CREATE FUNCTION try_inputs(tbl text, sendfn text, inputs text[])
RETURNS TABLE(o_text text, o_bin bytea, o_code text, o_msg text, o_detail text, o_hint text)
LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
  FOREACH s IN ARRAY inputs LOOP
    BEGIN
      EXECUTE format('INSERT INTO %I (v) VALUES (%L) RETURNING format(''%%s'', v), %s(v)', tbl, s, sendfn) INTO o_text, o_bin;
      o_code := NULL; o_msg := NULL; o_detail := NULL; o_hint := NULL;
    EXCEPTION WHEN others THEN
      GET STACKED DIAGNOSTICS o_code = RETURNED_SQLSTATE, o_msg = MESSAGE_TEXT, o_detail = PG_EXCEPTION_DETAIL, o_hint = PG_EXCEPTION_HINT;
      o_text := NULL; o_bin := NULL;
    END;
    RETURN NEXT;
  END LOOP;
END $$`

func sendFunc(b Base) string {
	return map[Base]string{
		SmallInt: "int2send", Integer: "int4send", BigInt: "int8send", Numeric: "numeric_send",
		Text: "textsend", Varchar: "varcharsend", Char: "bpcharsend", Date: "date_send",
		Timestamp: "timestamp_send", Timestamptz: "timestamptz_send", Boolean: "boolsend", Bytea: "byteasend", UUID: "uuid_send", Float8: "float8send", Float4: "float4send", Time: "time_send", TimeTZ: "timetz_send", Inet: "inet_send", Cidr: "cidr_send", Interval: "interval_send", JSONB: "jsonb_send", JSON: "json_send", Array: "array_send",
	}[b]
}

// textArray encodes strings as a PostgreSQL text[] literal.
func textArray(ss []string) []byte {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, c := range []byte(s) {
			if c == '"' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// tryBatch runs inputs through the server in one round trip.
func tryBatch(t *testing.T, conn *pgconn.PgConn, tbl string, b Base, inputs []string) []serverResult {
	t.Helper()
	rr := conn.ExecParams(context.Background(), "SELECT * FROM try_inputs($1, $2, $3::text[])",
		[][]byte{[]byte(tbl), []byte(sendFunc(b)), textArray(inputs)}, nil, nil, []int16{0, 1, 0, 0, 0, 0})
	var out []serverResult
	for rr.NextRow() {
		v := rr.Values()
		var r serverResult
		if v[2] != nil {
			r.err = &pgconn.PgError{Code: string(v[2]), Message: string(v[3]), Detail: string(v[4]), Hint: string(v[5])}
		} else {
			r.text = append([]byte{}, v[0]...)
			r.bin = append([]byte{}, v[1]...)
		}
		out = append(out, r)
	}
	if _, err := rr.Close(); err != nil {
		t.Fatal(err)
	}
	if len(out) != len(inputs) {
		t.Fatalf("got %d results for %d inputs", len(out), len(inputs))
	}
	return out
}

// TestDifferentialRandom compares ParseText and the output functions with
// PostgreSQL on random inputs from per-type generators built to hit the
// parsers' corners.
func TestDifferentialRandom(t *testing.T) {
	conn := connect(t)
	exec(t, conn, tryInputsSQL)
	rng := rand.New(rand.NewPCG(*randomSeed, 0x6f6e696f6e))
	n := *randomInputs
	if testing.Short() {
		n /= 5
	}
	for i, d := range diffTypes() {
		gen := generatorFor(d.t)
		tbl := fmt.Sprintf("r%d", i)
		exec(t, conn, fmt.Sprintf("CREATE TABLE %s (v %s)", tbl, d.sql))
		for _, zone := range d.zonesOrUTC() {
			t.Run(d.sql+"/"+zone, func(t *testing.T) {
				env := setZone(t, conn, zone)
				inputs := make([]string, n)
				for j := range inputs {
					inputs[j] = gen(rng)
				}
				results := tryBatch(t, conn, tbl, d.t.Base, inputs)
				refused, accepted, failures := 0, 0, 0
				for j, in := range inputs {
					v, err := d.t.ParseText([]byte(in), env)
					var text, bin []byte
					if err == nil {
						accepted++
						text = d.t.AppendText(nil, v, env)
						bin = d.t.AppendBinary(nil, v)
					} else if IsRefusal(err) {
						refused++
					}
					if diff := compareOutcome(results[j], text, bin, err); diff != "" {
						failures++
						if failures <= 30 {
							t.Errorf("%s %q: %s", d.sql, trunc(in), diff)
						}
					}
				}
				t.Logf("%d inputs: %d accepted, %d refused, %d failures", n, accepted, refused, failures)
			})
		}
	}
}

type generator func(*rand.Rand) string

func generatorFor(t Type) generator {
	switch t.Base {
	case Array:
		return genArray(generatorFor(t.Element()))
	case SmallInt, Integer, BigInt:
		return genInt
	case Numeric:
		return genNumeric
	case Text, Varchar, Char:
		return genText
	case Boolean:
		return genBool
	case Bytea:
		return genBytea
	case UUID:
		return genUUID
	case Float8:
		return genFloat8
	case Float4:
		return genFloat4
	case Time:
		return genTime
	case TimeTZ:
		return func(r *rand.Rand) string {
			return genTime(r) + pick(r, "", "+05:30", "-08", " +01", "-03:30:15", "z", "+16", " UTC")
		}
	case Inet, Cidr:
		return genInet
	case Interval:
		return genInterval
	case JSONB, JSON:
		return func(r *rand.Rand) string { return genJSON(r, 0) }
	}
	return genDateTime
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func digits(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + r.IntN(10))
	}
	return string(b)
}

func spaces(r *rand.Rand) string {
	if r.IntN(3) != 0 {
		return ""
	}
	return pick(r, " ", "  ", "\t", "\n", "\r", "\v", "\f", " \t ")
}

func genInt(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString(spaces(r))
	if r.IntN(3) == 0 {
		b.WriteString(pick(r, "-", "+", "--", "+-", "- "))
	}
	switch r.IntN(4) {
	case 0:
		b.WriteString(pick(r, "32767", "32768", "-32768", "2147483647", "2147483648", "9223372036854775807", "9223372036854775808"))
		if r.IntN(2) == 0 {
			b.WriteString(digits(r, 1))
		}
	default:
		b.WriteString(strings.Repeat("0", r.IntN(3)*r.IntN(2)))
		b.WriteString(digits(r, 1+r.IntN(21)))
	}
	if r.IntN(8) == 0 {
		b.WriteString(pick(r, "x", ".0", "e1", " 1", "_0", "\u00a0"))
	}
	b.WriteString(spaces(r))
	return b.String()
}

func genNumeric(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString(spaces(r))
	if r.IntN(12) == 0 {
		b.WriteString(pick(r, "", "-", "+"))
		b.WriteString(pick(r, "NaN", "nan", "Infinity", "inf", "INF", "infinity", "Infinit", "infx"))
		b.WriteString(spaces(r))
		return b.String()
	}
	if r.IntN(3) == 0 {
		b.WriteString(pick(r, "-", "+"))
	}
	ip := r.IntN(25) * r.IntN(2)
	if r.IntN(3) == 0 {
		b.WriteString(strings.Repeat("0", r.IntN(5)))
	}
	b.WriteString(digits(r, ip))
	if r.IntN(2) == 0 {
		b.WriteByte('.')
		fp := r.IntN(12)
		b.WriteString(digits(r, fp))
		if r.IntN(3) == 0 {
			b.WriteString(pick(r, "5", "05", "49", "50", "95", "995", "9999", "0000"))
		}
	} else if ip == 0 {
		b.WriteString(digits(r, 1+r.IntN(3)))
	}
	if r.IntN(4) == 0 {
		b.WriteString(pick(r, "e", "E"))
		b.WriteString(pick(r, "", "", "-", "+", " ", " -"))
		b.WriteString(pick(r, digits(r, 1+r.IntN(2)), digits(r, 1+r.IntN(6)), "", "16383", "131071", "1073741823"))
	}
	if r.IntN(15) == 0 {
		b.WriteString(pick(r, ".", "x", " 1", "e", ","))
	}
	b.WriteString(spaces(r))
	return b.String()
}

func genText(r *rand.Rand) string {
	var b strings.Builder
	n := r.IntN(9)
	for i := 0; i < n; i++ {
		b.WriteString(pick(r, "a", "b", " ", " ", "日", "é", "🎉", "\t", "Z"))
	}
	if r.IntN(3) == 0 {
		b.WriteString(strings.Repeat(" ", r.IntN(4)))
	}
	return b.String()
}

func genBool(r *rand.Rand) string {
	w := pick(r, "true", "false", "yes", "no", "on", "off", "1", "0", "t", "f", "x", "")
	if len(w) > 1 && r.IntN(2) == 0 {
		w = w[:1+r.IntN(len(w))]
	}
	if r.IntN(3) == 0 {
		w = strings.ToUpper(w)
	}
	if r.IntN(6) == 0 {
		w += pick(r, "x", "e", "s", "1", "n", "f")
	}
	return spaces(r) + w + spaces(r)
}

func genJSON(r *rand.Rand, depth int) string {
	switch k := r.IntN(9); {
	case k < 2 && depth < 3:
		var parts []string
		for n := r.IntN(4); n > 0; n-- {
			parts = append(parts, pick(r, `"a"`, `"b"`, `"aa"`, `"ab"`, `""`, `"é"`, `"a\\b"`, `"\u0041"`)+pick(r, ":", " : ")+genJSON(r, depth+1))
		}
		return "{" + strings.Join(parts, pick(r, ",", ", ")) + "}"
	case k < 4 && depth < 3:
		var parts []string
		for n := r.IntN(4); n > 0; n-- {
			parts = append(parts, genJSON(r, depth+1))
		}
		return "[" + strings.Join(parts, pick(r, ",", " , ")) + "]"
	case k < 6:
		return pick(r, "0", "-0", "1.50", "1e2", "-2.5E-3", "123456789012345678901234567890", "0.000", "7", "1e-7", "3.14159")
	case k < 7:
		return pick(r, "true", "false", "null")
	}
	return pick(r, `"x"`, `""`, `"a\"b"`, `"\u00e9"`, `"tab\t"`, `"日本"`, `"\u001f"`, `"/\/"`)
}

func genInterval(r *rand.Rand) string {
	var parts []string
	units := []string{"years", "mons", "days", "hours", "minutes", "seconds", "weeks", "ms", "us", "decades", "day", "mon", "year"}
	for n := r.IntN(4); n >= 0; n-- {
		num := strconv.Itoa(r.IntN(1000) - 500)
		if r.IntN(3) == 0 {
			num += "." + strconv.Itoa(r.IntN(1000))
		}
		parts = append(parts, num+" "+units[r.IntN(len(units))])
	}
	if r.IntN(3) == 0 {
		parts = append(parts, fmt.Sprintf("%s%02d:%02d:%02d", pick(r, "", "-", "+"), r.IntN(30), r.IntN(60), r.IntN(60)))
	}
	if r.IntN(5) == 0 {
		parts = append(parts, "ago")
	}
	return strings.Join(parts, " ")
}

func genInet(r *rand.Rand) string {
	var s string
	if r.IntN(2) == 0 {
		s = fmt.Sprintf("%d.%d.%d.%d", r.IntN(260), r.IntN(256), r.IntN(256), r.IntN(256))
	} else {
		groups := make([]string, 8)
		for i := range groups {
			switch r.IntN(3) {
			case 0:
				groups[i] = "0"
			case 1:
				groups[i] = strconv.FormatUint(uint64(r.IntN(0x10000)), 16)
			default:
				groups[i] = strconv.FormatUint(uint64(r.IntN(16)), 16)
			}
		}
		if r.IntN(4) == 0 {
			groups[5], groups[6], groups[7] = "ffff", fmt.Sprintf("%d.%d", r.IntN(256), r.IntN(256)), fmt.Sprintf("%d.%d", r.IntN(256), r.IntN(256))
			groups = append(groups[:6], groups[6]+"."+groups[7])
			for i := range 5 {
				groups[i] = "0"
			}
		}
		s = strings.Join(groups, ":")
		if r.IntN(2) == 0 {
			if a, err := netip.ParseAddr(s); err == nil {
				s = a.String()
			}
		}
	}
	if r.IntN(3) == 0 {
		s += "/" + strconv.Itoa(r.IntN(140))
	}
	return s
}

func genTime(r *rand.Rand) string {
	s := fmt.Sprintf("%d:%02d", r.IntN(26), r.IntN(62))
	if r.IntN(3) > 0 {
		s += fmt.Sprintf(":%02d", r.IntN(62))
	}
	if r.IntN(3) == 0 {
		s += "." + strconv.Itoa(r.IntN(10000000))
	}
	if r.IntN(4) == 0 {
		s += pick(r, " AM", " PM", " am", " UTC", "z", " x", "-08")
	}
	return spaces(r) + s + spaces(r)
}

func genFloat8(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		// Any bits: every magnitude, denormals, NaN payloads.
		return strconv.FormatFloat(math.Float64frombits(r.Uint64()), 'g', -1, 64)
	case 1:
		return strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)), 'g', 1+r.IntN(17), 64)
	case 2:
		return fmt.Sprintf("%d.%d", r.IntN(100000)-50000, r.IntN(1000))
	}
	return pick(r, "0", "-0", "1e15", "1e-5", "nan", "-inf", "1e308", "1e-320", "0.1", " 2 ", "1e", "x")
}

func genFloat4(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		// Any bits: every magnitude, denormals, NaN payloads.
		return strconv.FormatFloat(float64(math.Float32frombits(r.Uint32())), 'g', -1, 32)
	case 1:
		return strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(90)-45)), 'g', 1+r.IntN(12), 64)
	}
	return genFloat8(r)
}

// genArray generates array literals of elements from elem: quoted or
// not, NULLs, white space, empty arrays.
func genArray(elem generator) generator {
	return func(r *rand.Rand) string {
		var b strings.Builder
		b.WriteString(spaces(r) + "{")
		n := r.IntN(5)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(spaces(r))
			switch e := elem(r); {
			case r.IntN(8) == 0:
				b.WriteString(pick(r, "NULL", "null"))
			case r.IntN(2) == 0 && e != "" && !strings.ContainsAny(e, "{},\"\\ \t\n\r\v\f"):
				b.WriteString(e)
			default:
				b.WriteString(`"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(e) + `"`)
			}
			b.WriteString(spaces(r))
		}
		b.WriteString("}" + spaces(r))
		return b.String()
	}
}

func genUUID(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(4) == 0 {
		b.WriteString("{")
	}
	n := 32 + r.IntN(3) - 1
	for i := 0; i < n; i++ {
		b.WriteString(pick(r, "0", "7", "a", "F", "c", "9"))
		if i%2 == 1 && r.IntN(5) == 0 {
			b.WriteString("-")
		}
	}
	if r.IntN(4) == 0 {
		b.WriteString(pick(r, "}", " ", "g"))
	}
	return b.String()
}

func genBytea(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(2) == 0 {
		b.WriteString(pick(r, "\\x", "\\x", "\\X", "\\"))
		n := r.IntN(12)
		for i := 0; i < n; i++ {
			b.WriteString(pick(r, "0", "a", "F", "9", " ", "\n", "g", "日"))
		}
		return b.String()
	}
	n := r.IntN(8)
	for i := 0; i < n; i++ {
		b.WriteString(pick(r, "a", "\\\\", "\\", "\\0", "\\01", "\\012", "\\377", "\\400", "\\8", "x", "日"))
	}
	return b.String()
}

var (
	dtMonths = []string{"jan", "Feb", "MARCH", "apr", "may", "june", "Jul", "aug", "sep", "sept", "oct", "nov", "December", "janu", "febr"}
	dtWords  = []string{"bc", "BC", "ad", "am", "pm", "PM", "t", "T", "on", "at", "mon", "Thu", "friday", "sunday", "tues", "z", "Z", "UTC", "gmt", "zulu", "ut", "epoch", "infinity", "-infinity", "foo", "dst", "j", "allballs"}
)

// genDateTime builds date/time strings from PostgreSQL's field kinds.
func genDateTime(r *rand.Rand) string {
	var parts []string
	year := func() string {
		return pick(r, "2024", "2023", "1999", "0001", "0000", "1", "24", "69", "70", "99", "00", "100", "999",
			"10000", "4714", "4713", "294276", "294277", "5874897", "5874898", "1900", "2000", "1893", "2100", digits(r, 1+r.IntN(8)))
	}
	month := func() string {
		return pick(r, "01", "1", "02", "2", "12", "13", "00", "3", "10", "11", digits(r, 2))
	}
	day := func() string {
		return pick(r, "01", "1", "28", "29", "30", "31", "32", "00", "15", "24", digits(r, 1+r.IntN(2)))
	}
	switch r.IntN(10) {
	case 0, 1, 2, 3:
		sep := pick(r, "-", "-", "-", "/", ".")
		parts = append(parts, year()+sep+month()+sep+day())
	case 4:
		parts = append(parts, month()+pick(r, "/", "-")+day()+pick(r, "/", "-")+year())
	case 5:
		parts = append(parts, digits(r, 4)+pick(r, "02", "12", "13")+pick(r, "29", "31", "01"))
	case 6:
		ps := []string{pick(r, dtMonths...), day(), year()}
		r.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
		if r.IntN(2) == 0 {
			parts = append(parts, strings.Join(ps, pick(r, " ", "-", ", ", "/")))
		} else {
			parts = append(parts, ps...)
		}
	case 7:
		parts = append(parts, year()+"-"+pick(r, "001", "060", "366", "367", "000"))
	case 8:
		parts = append(parts, pick(r, dtWords...))
	case 9:
		parts = append(parts, digits(r, r.IntN(10)))
	}
	if r.IntN(4) != 0 {
		h := pick(r, "00", "0", "12", "23", "24", "25", "9", digits(r, 2))
		m := pick(r, "00", "30", "59", "60", "5", digits(r, 2))
		s := pick(r, "00", "59", "60", "61", "7", digits(r, 2))
		var tm string
		switch r.IntN(6) {
		case 0:
			tm = h + ":" + m
		case 1:
			tm = h + ":" + m + ":" + s
		case 2, 3:
			tm = h + ":" + m + ":" + s + "." + digits(r, r.IntN(12)) + pick(r, "", "5", "95", "9999995", "0000005", "0000015")
		case 4:
			tm = h + m + s
		case 5:
			tm = m + ":" + s + "." + digits(r, 1+r.IntN(6))
		}
		parts = append(parts, pick(r, " ", "T", "t", "  ", ", ", " T ")+tm)
	}
	if r.IntN(3) == 0 {
		tz := pick(r, "+", "-") + pick(r, "0", "00", "02", "05", "14", "15", "16", "99") + pick(r, "", "", ":30", ":45", "30", ":60", ":30:15", ":", "-")
		if r.IntN(4) == 0 {
			tz = pick(r, "Z", "z", "UTC", "GMT", "+infinity", "CET", "EST", "Europe/Berlin", "utc+3")
		}
		parts = append(parts, pick(r, "", " ")+tz)
	}
	for r.IntN(5) == 0 {
		w := pick(r, dtWords...)
		if r.IntN(2) == 0 {
			w = pick(r, dtMonths...)
		}
		at := r.IntN(len(parts) + 1)
		parts = append(parts[:at], append([]string{" " + w + " "}, parts[at:]...)...)
	}
	s := strings.Join(parts, pick(r, "", " "))
	if r.IntN(10) == 0 {
		s = " " + s + pick(r, " ", ",", "\t")
	}
	return s
}

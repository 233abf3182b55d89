package pgnumeric

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// The differential tests evaluate the same operations on PostgreSQL and
// with this package, and compare the text results, errors included.

var (
	diffSeed  = flag.Uint64("diff.seed", 1, "seed of the random differential tests")
	diffCount = flag.Int("diff.count", 3000, "operand pairs of TestDifferentialRandom")
	diffTrans = flag.Int("diff.trans", 3000, "operand sets of TestDifferentialTranscendental (5 cases each)")
)

// tryNum evaluates one case of the numCase notation on the server.
var tryNum = func() string {
	var b strings.Builder
	b.WriteString(`
CREATE FUNCTION try_num(op text, a text, b text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	x numeric;
	y numeric;
BEGIN
	CASE op
`)
	for _, typ := range []string{"int2", "int4", "int8"} {
		for _, o := range []string{"+", "-", "*", "/", "%"} {
			fmt.Fprintf(&b, "\tWHEN '%s%s' THEN RETURN (a::%[1]s %[2]s b::%[1]s)::text;\n", typ, o)
		}
		fmt.Fprintf(&b, "\tWHEN '%sneg' THEN RETURN (- a::%[1]s)::text;\n", typ)
	}
	b.WriteString(`	ELSE
	END CASE;
	x := a::numeric;
	CASE op
	WHEN 'in' THEN RETURN x::text;
	WHEN 'neg' THEN RETURN (- x)::text;
	WHEN 'round' THEN RETURN round(x, b::int)::text;
	WHEN 'trunc' THEN RETURN trunc(x, b::int)::text;
	WHEN 'ceil' THEN RETURN ceil(x)::text;
	WHEN 'floor' THEN RETURN floor(x)::text;
	WHEN 'abs' THEN RETURN abs(x)::text;
	WHEN 'ln' THEN RETURN ln(x)::text;
	WHEN 'log10' THEN RETURN log(x)::text;
	WHEN 'exp' THEN RETURN exp(x)::text;
	ELSE
	END CASE;
	y := b::numeric;
	CASE op
	WHEN '+' THEN RETURN (x + y)::text;
	WHEN '-' THEN RETURN (x - y)::text;
	WHEN '*' THEN RETURN (x * y)::text;
	WHEN '/' THEN RETURN (x / y)::text;
	WHEN 'mod' THEN RETURN mod(x, y)::text;
	WHEN 'log' THEN RETURN log(x, y)::text;
	WHEN 'power' THEN RETURN power(x, y)::text;
	WHEN '^' THEN RETURN (x ^ y)::text;
	WHEN 'cmp' THEN RETURN CASE WHEN x < y THEN '-1' WHEN x = y THEN '0' ELSE '1' END;
	END CASE;
EXCEPTION WHEN others THEN
	RETURN 'ERR ' || SQLSTATE || '|' || SQLERRM;
END $$`)
	return b.String()
}()

type diffConn struct {
	t    *testing.T
	conn *pgx.Conn
}

func newDiffConn(t *testing.T) *diffConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version/10000 != 15 {
		t.Logf("server version %d: this package follows PostgreSQL 15", version)
	}
	if _, err := conn.Exec(ctx, tryNum); err != nil {
		t.Fatal(err)
	}
	return &diffConn{t: t, conn: conn}
}

// server evaluates cases on the server, in batches.
func (d *diffConn) server(cases []numCase) []string {
	d.t.Helper()
	var out []string
	const batch = 5000
	for len(cases) > 0 {
		n := min(batch, len(cases))
		b := cases[:n]
		cases = cases[n:]
		ops, as, bs := make([]string, n), make([]string, n), make([]string, n)
		for i, c := range b {
			ops[i], as[i], bs[i] = c.op, c.a, c.b
		}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		rows, err := d.conn.Query(ctx, `SELECT try_num(op, a, b)
			FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(op, a, b, n)
			ORDER BY n`, ops, as, bs)
		if err != nil {
			cancel()
			d.t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		cancel()
		if err != nil {
			d.t.Fatal(err)
		}
		if len(got) != n {
			d.t.Fatalf("server returned %d results for %d cases", len(got), n)
		}
		out = append(out, got...)
	}
	return out
}

// compare evaluates cases on the server and with this package, reports
// the differences and returns this package's results.
func (d *diffConn) compare(cases []numCase) []string {
	d.t.Helper()
	want := d.server(cases)
	bad := 0
	out := make([]string, len(cases))
	for i, c := range cases {
		got := local(c.op, c.a, c.b)
		out[i] = got
		if got != want[i] {
			d.t.Errorf("%s %q %q: got %.100s, server %.100s", c.op, c.a, c.b, got, want[i])
			if bad++; bad > 30 {
				d.t.Fatal("too many differences")
			}
		}
	}
	return out
}

// TestDifferentialTable checks the unit test tables against the server.
func TestDifferentialTable(t *testing.T) {
	d := newDiffConn(t)
	d.compare(numCases)
	d.compareSums(sumCases)
}

// TestDifferentialRandom checks random operand pairs: every operation on
// each pair, and the input of random strings.
func TestDifferentialRandom(t *testing.T) {
	d := newDiffConn(t)
	r := rand.New(rand.NewPCG(*diffSeed, 0x6e756d))
	var cases []numCase
	for range *diffCount {
		a, b := randomPair(r)
		cases = append(cases,
			numCase{op: "in", a: a},
			numCase{op: "neg", a: a},
			numCase{op: "round", a: a, b: strconv.Itoa(r.IntN(46) - 25)},
			numCase{op: "trunc", a: a, b: strconv.Itoa(r.IntN(46) - 25)},
			numCase{op: "ceil", a: a},
			numCase{op: "floor", a: a},
			numCase{op: "abs", a: a},
			numCase{op: "mod", a: a, b: b},
			numCase{op: "+", a: a, b: b},
			numCase{op: "-", a: a, b: b},
			numCase{op: "*", a: a, b: b},
			numCase{op: "/", a: a, b: b},
			numCase{op: "cmp", a: a, b: b},
		)
	}
	for range *diffCount {
		cases = append(cases, numCase{op: "in", a: randomText(r)})
	}
	for range *diffCount / 3 {
		cases = append(cases, randomIntCase(r))
	}
	d.compare(cases)

	var groups []sumCase
	for range *diffCount / 5 {
		groups = append(groups, randomGroup(r))
	}
	d.compareSums(groups)

	outcomes := map[string]int{}
	for _, c := range cases {
		o := "ok"
		if got := local(c.op, c.a, c.b); strings.HasPrefix(got, "ERR") {
			o = got[:9]
		}
		outcomes[c.op+" "+o]++
	}
	t.Logf("%d cases and %d aggregate groups: %v", len(cases), len(groups), outcomes)
}

// TestDifferentialTranscendental checks ln, log, exp and power on random
// operands.
func TestDifferentialTranscendental(t *testing.T) {
	d := newDiffConn(t)
	r := rand.New(rand.NewPCG(*diffSeed, 0x7472616e73))
	var cases []numCase
	for range *diffTrans {
		cases = append(cases, randomTranscendental(r)...)
	}
	start := time.Now()
	got := d.compare(cases)
	outcomes := map[string]int{}
	for i, c := range cases {
		o := "ok"
		if strings.HasPrefix(got[i], "ERR") {
			o = got[i][:9]
		}
		outcomes[c.op+" "+o]++
	}
	t.Logf("%d cases in %v: %v", len(cases), time.Since(start), outcomes)
}

// compareSums evaluates count, sum and avg of each group on the server
// and with Sum.
func (d *diffConn) compareSums(groups []sumCase) {
	d.t.Helper()
	var gs []int32
	var vs []*string
	for i, g := range groups {
		for _, v := range g.vals {
			gs = append(gs, int32(i))
			if v == "NULL" {
				vs = append(vs, nil)
			} else {
				vs = append(vs, &v)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// One query per group, so that an overflowing sum fails alone.
	if _, err := d.conn.Exec(ctx, `
CREATE FUNCTION try_sum(vals text[]) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
	s text;
	a text;
	c text;
BEGIN
	SELECT count(v::numeric)::text INTO c FROM unnest(vals) AS u(v);
	BEGIN
		SELECT coalesce(sum(v::numeric)::text, 'NULL') INTO s FROM unnest(vals) AS u(v);
	EXCEPTION WHEN others THEN
		s := 'ERR ' || SQLSTATE || '|' || SQLERRM;
	END;
	BEGIN
		SELECT coalesce(avg(v::numeric)::text, 'NULL') INTO a FROM unnest(vals) AS u(v);
	EXCEPTION WHEN others THEN
		a := 'ERR ' || SQLSTATE || '|' || SQLERRM;
	END;
	RETURN ARRAY[s, a, c];
END $$`); err != nil {
		d.t.Fatal(err)
	}
	rows, err := d.conn.Query(ctx, `SELECT g, try_sum(array_agg(v ORDER BY n))
		FROM unnest($1::int[], $2::text[]) WITH ORDINALITY AS u(g, v, n)
		GROUP BY g ORDER BY g`, gs, vs)
	if err != nil {
		d.t.Fatal(err)
	}
	type res struct {
		G   int32
		Out []string
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[res])
	if err != nil {
		d.t.Fatal(err)
	}
	if len(got) != len(groups) {
		d.t.Fatalf("server returned %d groups for %d", len(got), len(groups))
	}
	bad := 0
	for i, g := range groups {
		sum, avg, cnt := localSum(g.vals)
		if w := got[i].Out; w[0] != sum || w[1] != avg || w[2] != cnt {
			d.t.Errorf("%q: sum %.100s, avg %.100s, count %s; server %.100s, %.100s, %s", g.vals, sum, avg, cnt, w[0], w[1], w[2])
			if bad++; bad > 30 {
				d.t.Fatal("too many differences")
			}
		}
	}
}

// randomDigits returns n digits in one of a few styles: random, mostly
// zeros, mostly nines, or mostly fives (rounding ties).
func randomDigits(r *rand.Rand, n int, style int) string {
	var b strings.Builder
	for range n {
		c := byte('0' + r.IntN(10))
		if r.IntN(4) != 0 {
			switch style {
			case 1:
				c = '0'
			case 2:
				c = '9'
			case 3:
				c = '5'
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// randomValue returns the text of a random numeric: up to 30 integer
// digits and 20 fraction digits, in several shapes.
func randomValue(r *rand.Rand) string {
	sign := ""
	if r.IntN(3) == 0 {
		sign = "-"
	}
	switch r.IntN(30) {
	case 0:
		return []string{"NaN", "Infinity", "-Infinity", "nan", " -inf ", "+INFINITY"}[r.IntN(6)]
	case 1, 2:
		return sign + []string{"0", "0.00", "0.000000000000000000", "0e5", "0.0e-3", ".0"}[r.IntN(6)]
	case 3, 4:
		return sign + []string{"1", "2", "3", "7", "10", "9999", "10000", "10001", "99999999", "100000000", "0.0001", "0.00010", "0.5"}[r.IntN(13)]
	case 5, 6, 7:
		// A numeric(15,2) value.
		return sign + strings.TrimLeft(randomDigits(r, r.IntN(14), r.IntN(4)), "0") + "0." + randomDigits(r, 2, r.IntN(4))
	case 8:
		// Exponent notation.
		return sign + randomDigits(r, 1+r.IntN(6), 0) + "." + randomDigits(r, r.IntN(6), r.IntN(4)) +
			[]string{"e", "E"}[r.IntN(2)] + strconv.Itoa(r.IntN(41)-20)
	case 9:
		// A small value: many leading zeros after the point.
		return sign + "0." + strings.Repeat("0", r.IntN(20)) + randomDigits(r, 1+r.IntN(8), r.IntN(4))
	case 10:
		// A scale around the largest scale of a quotient (1000).
		return sign + randomDigits(r, r.IntN(3), 0) + "." + strings.Repeat("0", 980+r.IntN(30)) + randomDigits(r, 1+r.IntN(8), r.IntN(4))
	}
	return sign + plainDecimal(r, 31)
}

// randomPair returns two operands, often related so that their leading
// base-10000 digits are equal or close, they are equal, or b is zero.
func randomPair(r *rand.Rand) (string, string) {
	a := randomValue(r)
	finite := !strings.ContainsAny(a, "eEnNiI")
	switch k := r.IntN(10); {
	case k == 0 && finite:
		// Equal leading digits, another magnitude.
		return a, a + "e" + strconv.Itoa(r.IntN(25)-12)
	case k == 1 && finite:
		// Equal, another scale.
		if !strings.Contains(a, ".") {
			a += "."
		}
		return a + strings.Repeat("0", r.IntN(4)), a
	case k == 2 && finite:
		// Same leading digits, then others.
		return a, strings.TrimRight(a, "0123456789") + randomDigits(r, r.IntN(4), 0)
	case k == 3:
		return a, []string{"0", "0.00", "-0", "NaN", "Infinity", "-Infinity"}[r.IntN(6)]
	}
	return a, randomValue(r)
}

// randomText returns a short string made mostly of the characters of
// numeric input, most of them invalid.
func randomText(r *rand.Rand) string {
	parts := []string{"0", "1", "5", "9", ".", "e", "E", "+", "-", " ", "\t", "\n", "n", "a", "N", "inf", "Infinity", "nan", "x", "_", "e5", "e-3", "e 2", "e\t-2", "00"}
	var b strings.Builder
	for range r.IntN(7) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func randomIntCase(r *rand.Rand) numCase {
	typ := []struct {
		name string
		bits int
	}{{"int2", 16}, {"int4", 32}, {"int8", 64}}[r.IntN(3)]
	op := []string{"+", "-", "*", "/", "%", "neg"}[r.IntN(6)]
	val := func() string {
		switch r.IntN(4) {
		case 0:
			// Near the limits.
			lim := int64(1)<<(typ.bits-1) - 1
			v := lim - r.Int64N(3)
			if r.IntN(2) == 0 {
				v = -v - 1 + r.Int64N(2)
			}
			return strconv.FormatInt(v, 10)
		case 1:
			return strconv.Itoa(r.IntN(5) - 2)
		}
		// Up to half the width, so that products sometimes overflow.
		v := r.Int64N(int64(1) << (typ.bits/2 + r.IntN(typ.bits/2-1)))
		if r.IntN(2) == 0 {
			v = -v
		}
		return strconv.FormatInt(v, 10)
	}
	return numCase{op: typ.name + op, a: val(), b: val()}
}

func randomGroup(r *rand.Rand) sumCase {
	var g sumCase
	n := 1 + r.IntN(12)
	money := r.IntN(2) == 0
	for range n {
		switch {
		case r.IntN(15) == 0:
			g.vals = append(g.vals, "NULL")
		case money:
			// A numeric(15,2) column.
			v := r.Int64N(1e15) - r.Int64N(1e14)
			sign := ""
			if v < 0 {
				sign, v = "-", -v
			}
			g.vals = append(g.vals, fmt.Sprintf("%s%d.%02d", sign, v/100, v%100))
		default:
			g.vals = append(g.vals, randomValue(r))
		}
	}
	return g
}

// randomTransValue returns an operand for the transcendental functions:
// mostly moderate values (up to 12 integer and 20 fraction digits), values
// near 1, small and large magnitudes, zeros, negatives and the special
// values, and rarely a value with a display scale near 1000 (which makes
// the server work at 1000 digits).
func randomTransValue(r *rand.Rand) string {
	sign := ""
	if r.IntN(5) == 0 {
		sign = "-"
	}
	switch r.IntN(40) {
	case 0:
		return []string{"NaN", "Infinity", "-Infinity"}[r.IntN(3)]
	case 1:
		return []string{"0", "0.000", "1", "1.00000", "-1", "10", "0.1", "2", "0.5"}[r.IntN(9)]
	case 2:
		switch r.IntN(4) {
		case 0:
			return sign + "0." + strings.Repeat("0", 990+r.IntN(20)) + randomDigits(r, 1+r.IntN(4), 0)
		case 1:
			// Near 1 with a scale around the largest result scale.
			return sign + "1." + strings.Repeat("0", 990+r.IntN(20)) + randomDigits(r, 1+r.IntN(4), 0)
		}
		return sign + randomDigits(r, 1+r.IntN(3), 0) + "." + randomDigits(r, 40+r.IntN(60), r.IntN(4))
	case 3, 4, 5, 6, 7, 8:
		return sign + randomNearOne(r)
	case 9, 10, 11:
		// Small or large magnitudes.
		return sign + randomDigits(r, 1+r.IntN(6), 0) + "e" + strconv.Itoa(r.IntN(601)-300)
	case 12, 13, 14:
		return sign + strconv.Itoa(1+r.IntN(100))
	}
	return sign + plainDecimal(r, 13)
}

// randomNearOne returns a value close to 1, above or below, with a few
// significant digits after the run of 0s or 9s: the hard case of the
// logarithms, and of powers that lie close to halfway between two
// results.
func randomNearOne(r *rand.Rand) string {
	z := strings.Repeat("0", r.IntN(25))
	d := randomDigits(r, 1+r.IntN(10), r.IntN(4))
	if r.IntN(2) == 0 {
		return "1." + z + d
	}
	return "0." + strings.Repeat("9", 1+r.IntN(25)) + d
}

// randomExponent returns an exponent for power: small integers, integers
// written with a fraction, halves, short fractions, large and huge
// integers (beyond int32 they take the general path), and random values.
func randomExponent(r *rand.Rand) string {
	sign := ""
	if r.IntN(3) == 0 {
		sign = "-"
	}
	switch r.IntN(10) {
	case 0, 1:
		return sign + strconv.Itoa(r.IntN(41))
	case 2:
		return sign + strconv.Itoa(r.IntN(20)) + ".000"
	case 3:
		// Short fractions: with bases near 1, results near halfway.
		return sign + strconv.Itoa(r.IntN(20)) + []string{".5", ".25", ".75", ".125", ".05"}[r.IntN(5)]
	case 4:
		return sign + strconv.Itoa(r.IntN(5)) + "." + randomDigits(r, 1+r.IntN(6), 0)
	case 5:
		return sign + strconv.Itoa(1+r.IntN(1<<20))
	case 6:
		return sign + randomDigits(r, 1, 0) + "e" + strconv.Itoa(8+r.IntN(4))
	}
	return randomTransValue(r)
}

// randomExpArg returns an argument for exp: mostly results below
// 10^300, sometimes near the overflow bound 6000 or beyond it.
func randomExpArg(r *rand.Rand) string {
	sign := ""
	if r.IntN(2) == 0 {
		sign = "-"
	}
	switch r.IntN(40) {
	case 0:
		// Near the bound (costly on the server when positive).
		return sign + strconv.Itoa(5995+r.IntN(10)) + "." + randomDigits(r, r.IntN(3), 0)
	case 1, 2:
		return "-" + strconv.Itoa(r.IntN(6000))
	case 3, 4, 5, 6:
		return randomTransValue(r)
	case 7, 8, 9:
		return sign + "0." + strings.Repeat("0", r.IntN(20)) + randomDigits(r, 1+r.IntN(8), 0)
	}
	return sign + strconv.Itoa(r.IntN(700)) + "." + randomDigits(r, r.IntN(25), r.IntN(4))
}

// randomTranscendental returns one case of each transcendental function:
// ln, log (as log10), log with a base, exp, and power (or ^).
func randomTranscendental(r *rand.Rand) []numCase {
	var base, exponent string
	for {
		base = randomTransValue(r)
		if r.IntN(6) == 0 {
			base = strconv.Itoa(r.IntN(21) - 10)
		}
		exponent = randomExponent(r)
		// Results of 10^1200 to 10^400000 take the server seconds (up to
		// 10^131072 it computes them, beyond it fails only after it has
		// computed most of them): leave them to the table.
		x, _ := strconv.ParseFloat(base, 64)
		y, _ := strconv.ParseFloat(exponent, 64)
		if w := y * math.Log10(math.Abs(x)); !(w > 1200 && w < 400000) {
			break
		}
	}
	op := "power"
	if r.IntN(4) == 0 {
		op = "^"
	}
	return []numCase{
		{op: "ln", a: randomTransValue(r)},
		{op: "log10", a: randomTransValue(r)},
		{op: "log", a: randomTransValue(r), b: randomTransValue(r)},
		{op: "exp", a: randomExpArg(r)},
		{op: op, a: base, b: exponent},
	}
}

// plainDecimal is a random unsigned decimal of fewer than maxInt integer
// digits and up to 20 fractional ones.
func plainDecimal(r *rand.Rand, maxInt int) string {
	style := r.IntN(4)
	intPart := strings.TrimLeft(randomDigits(r, r.IntN(maxInt), style), "0")
	if intPart == "" {
		intPart = "0"
	}
	if scale := r.IntN(21); scale > 0 {
		return intPart + "." + randomDigits(r, scale, style)
	}
	return intPart
}

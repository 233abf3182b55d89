package onion

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

var fuzzTypes = []Type{
	{Base: SmallInt}, {Base: Integer}, {Base: BigInt},
	{Base: Numeric}, {Base: Numeric, Precision: 10, Scale: 2}, {Base: Numeric, Precision: 5, Scale: -2},
	{Base: Numeric, Precision: 3, Scale: 5}, {Base: Numeric, Precision: 1000, Scale: 500},
	{Base: Text}, {Base: Varchar}, {Base: Varchar, Length: 5}, {Base: Char, Length: 3}, {Base: Char},
	{Base: Date}, {Base: Timestamp}, {Base: Timestamptz}, {Base: Boolean}, {Base: Bytea}, {Base: UUID}, {Base: Float8}, {Base: Float4}, {Base: Time}, {Base: TimeTZ}, {Base: Inet}, {Base: Cidr}, {Base: Array, Elem: Integer}, {Base: Array, Elem: Text}, {Base: Array, Elem: Numeric, Precision: 10, Scale: 2}, {Base: Array, Elem: Float8}, {Base: Interval}, {Base: JSONB}, {Base: JSONB}, {Base: JSON},
}

func fuzzEnvs() []Env {
	var envs []Env
	for _, z := range []string{"UTC", "Europe/Berlin", "Asia/Kolkata", "America/New_York"} {
		loc, err := time.LoadLocation(z)
		if err != nil {
			panic(err)
		}
		envs = append(envs, Env{TimeZone: loc})
	}
	envs = append(envs, Env{DateStyle: "ISO, DMY"}, Env{DateStyle: "ISO, YMD"})
	return envs
}

func fuzzSeedCorpus() [][]string {
	return [][]string{intCorpus, numericCorpus, textCorpus, boolCorpus, byteaCorpus, dateCorpus, timestampCorpus}
}

// checkValue checks the invariants of a Value returned by a parser: valid,
// and unchanged through text, binary and (for lossless types) EqualityKey.
func checkValue(t *testing.T, typ Type, v Value, env Env) {
	t.Helper()
	if !typ.Valid(v) {
		t.Fatalf("%s: invalid value %#v", typ, v)
	}
	text := typ.AppendText(nil, v, env)
	// A NaN's payload has no text form (as in PostgreSQL).
	nan := (typ.Base == Float8 || typ.Base == Float4) && float8Ordinal(v.i) == float8Ordinal(canonicalNaN)
	if w, err := typ.ParseText(text, env); err != nil || w != v && !(nan && typ.Compare(w, v) == 0) {
		t.Fatalf("%s: text %q reads back as %#v, %v; want %#v", typ, text, w, err, v)
	}
	bin := typ.AppendBinary(nil, v)
	if w, err := typ.ParseBinary(bin); err != nil || w != v {
		t.Fatalf("%s: binary %x reads back as %#v, %v; want %#v", typ, bin, w, err, v)
	}
	if typ.equalityLossless() {
		if w, err := typ.fromEqualityKey(typ.EqualityKey(v)); err != nil || w != v {
			t.Fatalf("%s: EqualityKey reads back as %#v, %v; want %#v", typ, w, err, v)
		}
	}
	if typ.Compare(v, v) != 0 {
		t.Fatalf("%s: %#v is not equal to itself", typ, v)
	}
}

func checkErr(t *testing.T, err error) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Code) != 5 {
		t.Fatalf("error is not a PgError with a SQLSTATE: %v", err)
	}
}

// FuzzParseText: ParseText never panics, returns PgErrors, and what it
// accepts survives text, binary and EqualityKey round trips.
func FuzzParseText(f *testing.F) {
	for i := range fuzzTypes {
		for _, corpus := range fuzzSeedCorpus() {
			for j, s := range corpus {
				if j%3 == i%3 {
					f.Add(uint8(i), uint8(j), []byte(s))
				}
			}
		}
	}
	envs := fuzzEnvs()
	f.Fuzz(func(t *testing.T, ti, ei uint8, data []byte) {
		typ := fuzzTypes[int(ti)%len(fuzzTypes)]
		env := envs[int(ei)%len(envs)]
		v, err := typ.ParseText(data, env)
		if err != nil {
			checkErr(t, err)
			return
		}
		checkValue(t, typ, v, env)
	})
}

// FuzzParseBinary: ParseBinary never panics, returns PgErrors, and
// ParseBinary(AppendBinary(v)) == v for what it accepts.
func FuzzParseBinary(f *testing.F) {
	envs := fuzzEnvs()
	for i, typ := range fuzzTypes {
		for _, corpus := range fuzzSeedCorpus() {
			for j, s := range corpus {
				if v, err := typ.ParseText([]byte(s), Env{}); err == nil && j%2 == 0 {
					f.Add(uint8(i), uint8(j), typ.AppendBinary(nil, v))
				}
			}
		}
		for _, b := range malformedBinary(typ.Base) {
			f.Add(uint8(i), uint8(0), b)
		}
	}
	f.Fuzz(func(t *testing.T, ti, ei uint8, data []byte) {
		typ := fuzzTypes[int(ti)%len(fuzzTypes)]
		env := envs[int(ei)%len(envs)]
		v, err := typ.ParseBinary(data)
		if err != nil {
			checkErr(t, err)
			return
		}
		checkValue(t, typ, v, env)
	})
}

package onion

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgonion/pgonion/internal/keys"
	"github.com/pgonion/pgonion/internal/pglike"
	"github.com/pgonion/pgonion/internal/schemes/hom"
	"github.com/pgonion/pgonion/internal/schemes/rnd"
	"github.com/pgonion/pgonion/internal/schemes/search"
)

var (
	homOnce sync.Once
	homSK   *hom.PrivateKey
	homEnc  *hom.Encrypter
	homErr  error
)

// testHom returns the repository's frozen 2048-bit Paillier TEST key
// (public, never for real data), or a fresh key if the file is missing.
func testHom(t testing.TB) (*hom.PrivateKey, *hom.Encrypter) {
	t.Helper()
	homOnce.Do(func() {
		raw, err := os.ReadFile("../schemes/hom/testdata/paillier2048.key")
		if err == nil {
			lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
			var b []byte
			if b, err = hex.DecodeString(lines[len(lines)-1]); err == nil {
				homSK, err = hom.UnmarshalPrivateKey(b)
			}
		}
		if err != nil {
			homSK, err = hom.GenerateKey(nil, 2048)
		}
		if err != nil {
			homErr = err
			return
		}
		homEnc, homErr = hom.NewEncrypter(homSK, hom.EncrypterOptions{PoolSize: 8})
	})
	if homErr != nil {
		t.Fatal(homErr)
	}
	return homSK, homEnc
}

func testDeriver(t testing.TB) *keys.Deriver {
	t.Helper()
	d, err := keys.NewDeriver(bytes.Repeat([]byte{0x42}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// allKinds returns the onion kinds of every capability of t.
func allKinds(t Type) []Kind {
	var ks []Kind
	for _, c := range t.Capabilities() {
		ks = append(ks, Kind(c))
	}
	return ks
}

func newColumn(t testing.TB, typ Type, id string, kinds ...Kind) *Column {
	t.Helper()
	sk, enc := testHom(t)
	if kinds == nil {
		kinds = allKinds(typ)
	}
	c, err := NewColumn(typ, []byte(id), kinds, testDeriver(t), sk, enc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustParse(t testing.TB, typ Type, s string) Value {
	t.Helper()
	v, err := typ.ParseText([]byte(s), Env{})
	if err != nil {
		t.Fatalf("%s %q: %v", typ, s, err)
	}
	return v
}

// roundTripValues are values of each test type for the onion tests.
var roundTripValues = []struct {
	t    Type
	vals []string
}{
	{Type{Base: SmallInt}, []string{"0", "-32768", "32767", "-1", "42"}},
	{Type{Base: Integer}, []string{"0", "-2147483648", "2147483647", "7"}},
	{Type{Base: BigInt}, []string{"0", "-9223372036854775808", "9223372036854775807", "-1"}},
	{Type{Base: Numeric, Precision: 10, Scale: 2}, []string{"0", "1.5", "-1.5", "99999999.99", "-99999999.99", "0.01", "NaN"}},
	{Type{Base: Numeric, Precision: 5, Scale: -2}, []string{"0", "1234567", "-9999900", "NaN"}},
	{Type{Base: Numeric, Precision: 18, Scale: 4}, []string{"99999999999999.9999", "-99999999999999.9999", "0.0001"}},
	{Type{Base: Numeric, Precision: 30, Scale: 10}, []string{"12345678901234567890.0123456789", "-1", "NaN"}},
	{Type{Base: Numeric}, []string{"1.50", "1.5", "-0.000", "1e100", "123456789012345678901234567890.5", "NaN", "Infinity", "-Infinity"}},
	{Type{Base: Text}, []string{"", "hello", "héllo wörld ✓ 日本語 🎉", strings.Repeat("x", 5000)}},
	{Type{Base: Varchar, Length: 5}, []string{"", "abcde", "日本語日本"}},
	{Type{Base: Char, Length: 3}, []string{"", "a", "ab ", "abc", "日本"}},
	{Type{Base: Char}, []string{"ab  ", "", "  "}},
	{Type{Base: Date}, []string{"2024-02-29", "4714-11-24 BC", "5874897-12-31", "infinity", "-infinity", "2000-01-01"}},
	{Type{Base: Timestamp}, []string{"2024-02-29 12:34:56.789", "4714-11-24 00:00:00 BC", "294276-12-31 23:59:59.999999", "infinity", "-infinity"}},
	{Type{Base: Timestamptz}, []string{"2024-02-29 12:34:56.789+02", "4714-11-24 00:00:00+00 BC", "infinity", "-infinity"}},
	{Type{Base: Boolean}, []string{"t", "f"}},
	{Type{Base: Bytea}, []string{"\\x", "\\x00ff", "\\xdeadbeef"}},
}

func salt(b byte) []byte { return bytes.Repeat([]byte{b}, SaltSize) }

// TestRoundTrip encrypts and decrypts values of every type with every
// onion, and NULL.
func TestRoundTrip(t *testing.T) {
	for _, tc := range roundTripValues {
		t.Run(tc.t.String(), func(t *testing.T) {
			c := newColumn(t, tc.t, "col-"+tc.t.String())
			cells, err := c.Encrypt(Null(), salt(1))
			if err != nil || cells.Eq != nil || cells.Ord != nil || cells.Add != nil || cells.Search != nil || cells.Val != nil {
				t.Fatalf("NULL: %+v, %v", cells, err)
			}
			if v, err := c.Decrypt(cells, salt(1)); err != nil || !v.IsNull() {
				t.Fatalf("decrypt NULL: %#v, %v", v, err)
			}
			for i, s := range tc.vals {
				v := mustParse(t, tc.t, s)
				rs := rnd.NewSalt()
				cells, err := c.Encrypt(v, rs)
				if err != nil {
					t.Fatalf("%q: %v", s, err)
				}
				if cells.Eq == nil || (c.has(KindOrd) != (cells.Ord != nil)) || (c.has(KindAdd) != (cells.Add != nil)) ||
					(c.has(KindSearch) != (cells.Search != nil)) || (c.HasVal() != (cells.Val != nil)) {
					t.Fatalf("%q: cells %+v for kinds %v", s, cells, c.Kinds())
				}
				got, err := c.Decrypt(cells, rs)
				if err != nil || got != v {
					t.Fatalf("%q: decrypt %#v, %v; want %#v", s, got, err, v)
				}
				// Only the onion Decrypt reads.
				only := Cells{Eq: cells.Eq, Val: cells.Val}
				if c.HasVal() {
					only.Eq = nil
				}
				if got, err := c.Decrypt(only, rs); err != nil || got != v {
					t.Fatalf("%q: decrypt from one cell %#v, %v", s, got, err)
				}
				// After peeling the Eq onion to DET.
				if !c.HasVal() {
					det, err := c.PeelRND(KindEq, cells.Eq, rs)
					if err != nil {
						t.Fatal(err)
					}
					if got, err := c.DecryptAt(Cells{Eq: det}, nil, LayerDET); err != nil || got != v {
						t.Fatalf("%q: decrypt at DET %#v, %v", s, got, err)
					}
				}
				// Encrypting at the peeled layers gives what peeling leaves.
				peeled, err := c.EncryptAt(v, rs, LayerDET, LayerOPE)
				if err != nil {
					t.Fatalf("%q: EncryptAt: %v", s, err)
				}
				if wantEq, err := c.PeelRND(KindEq, cells.Eq, rs); err != nil || !bytes.Equal(peeled.Eq, wantEq) {
					t.Fatalf("%q: EncryptAt's Eq cell %x, peeled %x (%v)", s, peeled.Eq, wantEq, err)
				}
				if cells.Ord != nil {
					if wantOrd, err := c.PeelRND(KindOrd, cells.Ord, rs); err != nil || !bytes.Equal(peeled.Ord, wantOrd) {
						t.Fatalf("%q: EncryptAt's Ord cell %x, peeled %x (%v)", s, peeled.Ord, wantOrd, err)
					}
				} else if peeled.Ord != nil {
					t.Fatalf("%q: EncryptAt made an Ord cell for a column without the Ord onion", s)
				}
				if !bytes.Equal(peeled.Val, nil) != (cells.Val != nil) {
					t.Fatalf("%q: EncryptAt's Val cell %x, Encrypt's %x", s, peeled.Val, cells.Val)
				}
				if cells.Ord != nil && c.OrdIsPrefix() {
					if _, err := c.DecryptOrd(cells.Ord, rs, LayerRND); !errors.Is(err, ErrOrdPrefix) {
						t.Fatalf("%q: decrypt Ord of a text: %v, want ErrOrdPrefix", s, err)
					}
					want := c.t.EqualityKey(v) // the text, without padding for character types
					want = want[:min(len(want), OrdPrefixLen)]
					if got, err := c.DecryptOrdPrefix(cells.Ord, rs, LayerRND); err != nil || !bytes.Equal(got, want) {
						t.Fatalf("%q: decrypt Ord prefix %q, %v; want %q", s, got, err, want)
					}
				} else if cells.Ord != nil {
					if got, err := c.DecryptOrd(cells.Ord, rs, LayerRND); err != nil || got != v {
						t.Fatalf("%q: decrypt Ord %#v, %v", s, got, err)
					}
				}
				if cells.Add != nil && i < 3 {
					if got, err := c.DecryptAdd(cells.Add); err != nil || got != v {
						t.Fatalf("%q: decrypt Add %#v, %v", s, got, err)
					}
				}
				// A fresh salt gives unrelated RND ciphertexts.
				cells2, _ := c.Encrypt(v, rnd.NewSalt())
				if bytes.Equal(cells.Eq, cells2.Eq) || (cells.Ord != nil && bytes.Equal(cells.Ord, cells2.Ord)) {
					t.Fatalf("%q: RND layer is not randomized", s)
				}
			}
		})
	}
}

// TestEqDeterminism checks the DET layer under the RND layer: values equal
// in SQL give equal DET ciphertexts, others different ones, and EqDET gives
// the same bytes for comparison constants.
func TestEqDeterminism(t *testing.T) {
	kolkata, _ := time.LoadLocation("Asia/Kolkata")
	cases := []struct {
		t        Type
		a, b     string
		envB     Env
		equal    bool
		constant string // parsed with ComparisonType; must equal a
	}{
		{t: Type{Base: Numeric}, a: "1.5", b: "1.50", equal: true, constant: "1.500"},
		{t: Type{Base: Numeric}, a: "0", b: "-0.000", equal: true, constant: "0e5"},
		{t: Type{Base: Numeric}, a: "1.5", b: "1.05"},
		{t: Type{Base: Numeric}, a: "NaN", b: "nan", equal: true},
		{t: Type{Base: Numeric}, a: "Infinity", b: "-Infinity"},
		{t: Type{Base: Numeric, Precision: 10, Scale: 2}, a: "1.5", b: "1.499", equal: true, constant: "1.5"},
		{t: Type{Base: Numeric, Precision: 10, Scale: 2}, a: "1.5", b: "1.51"},
		{t: Type{Base: Char, Length: 3}, a: "ab", b: "ab ", equal: true, constant: "ab     "},
		{t: Type{Base: Char}, a: "ab", b: "ab   ", equal: true, constant: "ab "},
		{t: Type{Base: Char, Length: 3}, a: "ab", b: " ab"},
		{t: Type{Base: Varchar, Length: 5}, a: "ab", b: "ab ", constant: "ab"},
		{t: Type{Base: Text}, a: "é", b: "e\u0301"},
		{t: Type{Base: Timestamptz}, a: "2024-01-01 00:00+00", b: "2024-01-01 05:30", envB: Env{TimeZone: kolkata}, equal: true},
		{t: Type{Base: Timestamp}, a: "2024-01-01 00:00+00", b: "2024-01-01 00:00+05:30", equal: true},
		{t: Type{Base: Date}, a: "2024-02-29", b: "Feb 29, 2024", equal: true, constant: "20240229"},
		{t: Type{Base: Integer}, a: "42", b: "+042", equal: true},
		{t: Type{Base: Integer}, a: "42", b: "-42"},
		{t: Type{Base: Boolean}, a: "t", b: "yes", equal: true},
		{t: Type{Base: Bytea}, a: "\\x41", b: "A", equal: true},
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%s/%s=%s", tc.t, tc.a, tc.b)
		t.Run(name, func(t *testing.T) {
			c := newColumn(t, tc.t, "det-"+tc.t.String(), KindEq)
			va := mustParse(t, tc.t, tc.a)
			vb, err := tc.t.ParseText([]byte(tc.b), tc.envB)
			if err != nil {
				t.Fatal(err)
			}
			sa, sb := rnd.NewSalt(), rnd.NewSalt()
			ca, _ := c.Encrypt(va, sa)
			cb, _ := c.Encrypt(vb, sb)
			if bytes.Equal(ca.Eq, cb.Eq) {
				t.Fatal("RND layer gives equal ciphertexts")
			}
			da, err1 := c.PeelRND(KindEq, ca.Eq, sa)
			db, err2 := c.PeelRND(KindEq, cb.Eq, sb)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if bytes.Equal(da, db) != tc.equal {
				t.Fatalf("DET equal = %v, want %v", bytes.Equal(da, db), tc.equal)
			}
			if (tc.t.Compare(va, vb) == 0) != tc.equal {
				t.Fatalf("Compare = %d, want equal %v", tc.t.Compare(va, vb), tc.equal)
			}
			if tc.constant != "" {
				k, err := tc.t.ComparisonType().ParseText([]byte(tc.constant), Env{})
				if err != nil {
					t.Fatal(err)
				}
				d, err := c.EqDET(k)
				if err != nil || !bytes.Equal(d, da) {
					t.Fatalf("EqDET(%q) does not match: %v", tc.constant, err)
				}
			}
		})
	}
}

// TestOrd checks that the OPE layer under RND orders as the values do, for
// every type with an Ord onion, with the extremes of each domain.
func TestOrd(t *testing.T) {
	cases := []struct {
		t    Type
		vals []string
	}{
		{Type{Base: SmallInt}, []string{"-32768", "-1", "0", "1", "2", "32767"}},
		{Type{Base: Integer}, []string{"-2147483648", "-5", "0", "5", "2147483647"}},
		{Type{Base: BigInt}, []string{"-9223372036854775808", "-1", "0", "1", "9223372036854775807"}},
		{Type{Base: Numeric, Precision: 10, Scale: 2}, []string{"-99999999.99", "-1.01", "-1", "0", "0.01", "1.5", "99999999.99", "NaN"}},
		{Type{Base: Numeric, Precision: 18, Scale: 0}, []string{"-999999999999999999", "0", "999999999999999999", "NaN"}},
		{Type{Base: Numeric, Precision: 4, Scale: -3}, []string{"-9999000", "-1000", "0", "1000", "9999000"}},
		{Type{Base: Date}, []string{"-infinity", "4714-11-24 BC", "0001-12-31 BC", "2000-01-01", "2024-02-29", "5874897-12-31", "infinity"}},
		{Type{Base: Timestamp}, []string{"-infinity", "4714-11-24 00:00 BC", "1999-12-31 23:59:59.999999", "2000-01-01", "294276-12-31 23:59:59.999999", "infinity"}},
		{Type{Base: Timestamptz}, []string{"-infinity", "2024-01-01 00:00+01", "2024-01-01 00:00+00", "2024-01-01 00:00:00.000001+00", "infinity"}},
		{Type{Base: Boolean}, []string{"f", "t"}},
	}
	for _, tc := range cases {
		t.Run(tc.t.String(), func(t *testing.T) {
			c := newColumn(t, tc.t, "ord-"+tc.t.String(), KindOrd)
			var prev []byte
			var prevV Value
			for i, s := range tc.vals {
				v := mustParse(t, tc.t, s)
				rs := rnd.NewSalt()
				cells, err := c.Encrypt(v, rs)
				if err != nil {
					t.Fatal(err)
				}
				o, err := c.PeelRND(KindOrd, cells.Ord, rs)
				if err != nil {
					t.Fatal(err)
				}
				if k, err := c.OrdOPE(v, Exact); err != nil || !bytes.Equal(k, o) {
					t.Fatalf("%q: OrdOPE differs: %v", s, err)
				}
				if got, err := c.DecryptOrd(o, nil, LayerOPE); err != nil || got != v {
					t.Fatalf("%q: DecryptOrd %#v, %v", s, got, err)
				}
				if i > 0 {
					if tc.t.Compare(prevV, v) >= 0 {
						t.Fatalf("test values out of order: %q", s)
					}
					if bytes.Compare(prev, o) >= 0 {
						t.Fatalf("OPE order broken between %q and %q", tc.vals[i-1], s)
					}
				}
				prev, prevV = o, v
			}
		})
	}

	// Range constants with more fraction digits than the column.
	c := newColumn(t, Type{Base: Numeric, Precision: 10, Scale: 2}, "ord-bounds", KindOrd)
	k := mustParse(t, Type{Base: Numeric}, "1.555")
	fl, err1 := c.OrdOPE(k, Floor)
	ce, err2 := c.OrdOPE(k, Ceil)
	want155, _ := c.OrdOPE(mustParse(t, Type{Base: Numeric}, "1.55"), Exact)
	want156, _ := c.OrdOPE(mustParse(t, Type{Base: Numeric}, "1.56"), Exact)
	if err1 != nil || err2 != nil || !bytes.Equal(fl, want155) || !bytes.Equal(ce, want156) {
		t.Fatalf("Floor/Ceil of 1.555: %v %v", err1, err2)
	}
	nk := mustParse(t, Type{Base: Numeric}, "-1.555")
	fl, _ = c.OrdOPE(nk, Floor)
	ce, _ = c.OrdOPE(nk, Ceil)
	wantm156, _ := c.OrdOPE(mustParse(t, Type{Base: Numeric}, "-1.56"), Exact)
	wantm155, _ := c.OrdOPE(mustParse(t, Type{Base: Numeric}, "-1.55"), Exact)
	if !bytes.Equal(fl, wantm156) || !bytes.Equal(ce, wantm155) {
		t.Fatal("Floor/Ceil of -1.555")
	}
	if _, err := c.OrdOPE(k, Exact); err == nil {
		t.Fatal("Exact accepted 1.555 for numeric(10,2)")
	}
	if _, err := c.OrdOPE(mustParse(t, Type{Base: Numeric}, "1e8"), Exact); !errors.Is(err, ErrOrdRange) {
		t.Fatalf("1e8 for numeric(10,2): %v", err)
	}
	s := newColumn(t, Type{Base: SmallInt}, "ord-small", KindOrd)
	if _, err := s.OrdOPE(IntValue(1<<40), Exact); !errors.Is(err, ErrOrdRange) {
		t.Fatalf("2^40 for smallint: %v", err)
	}
	if _, err := s.OrdOPE(IntValue(100000), Exact); err != nil {
		t.Fatalf("100000 for smallint (int4 comparison): %v", err)
	}
}

// TestAddSum adds Add cells with Paillier (in the proxy's accumulator and on
// the server with the numeric product) and compares the decrypted sum with
// PostgreSQL's SUM over the plaintexts.
func TestAddSum(t *testing.T) {
	conn := connect(t)
	cases := []struct {
		sql  string
		t    Type
		vals []string
	}{
		{"smallint", Type{Base: SmallInt}, []string{"32767", "32767", "-32768", "5"}},
		{"integer", Type{Base: Integer}, []string{"2147483647", "2147483647", "2147483647", "-7"}},
		{"bigint", Type{Base: BigInt}, []string{"9223372036854775807", "9223372036854775807", "-1"}},
		{"numeric(10,2)", Type{Base: Numeric, Precision: 10, Scale: 2}, []string{"1.5", "-0.25", "99999999.99", "0.01"}},
		{"numeric(10,2)", Type{Base: Numeric, Precision: 10, Scale: 2}, []string{"1.5", "NaN", "2"}},
		{"numeric(5,-2)", Type{Base: Numeric, Precision: 5, Scale: -2}, []string{"1234567", "-250", "50"}},
		{"numeric(40,10)", Type{Base: Numeric, Precision: 40, Scale: 10}, []string{"123456789012345678901234567890.0123456789", "1e29", "-0.0000000001"}},
	}
	sk, _ := testHom(t)
	for _, tc := range cases {
		t.Run(tc.sql, func(t *testing.T) {
			c := newColumn(t, tc.t, "add-"+tc.sql, KindAdd)
			acc := sk.NewAccumulator()
			var literals []string
			for _, s := range tc.vals {
				v := mustParse(t, tc.t, s)
				cells, err := c.Encrypt(v, rnd.NewSalt())
				if err != nil {
					t.Fatal(err)
				}
				if len(cells.Add) != c.AddCiphertextSize() {
					t.Fatalf("Add cell of %d bytes", len(cells.Add))
				}
				if err := acc.AddBytes(cells.Add); err != nil {
					t.Fatal(err)
				}
				literals = append(literals, string(tc.t.AppendText(nil, v, Env{})))
			}
			sum, err := c.DecryptSum(sk.AppendCiphertext(nil, acc.Sum()))
			if err != nil {
				t.Fatal(err)
			}
			got := string(c.SumType().AppendText(nil, sum, Env{}))
			rr := conn.ExecParams(context.Background(), fmt.Sprintf("SELECT sum(x)::text FROM unnest($1::%s[]) x", tc.sql),
				[][]byte{textArray(literals)}, nil, nil, nil)
			res := rr.Read()
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if want := string(res.Rows[0][0]); got != want {
				t.Fatalf("sum %s, PostgreSQL %s", got, want)
			}
		})
	}
	c := newColumn(t, Type{Base: Integer}, "add-null", KindAdd)
	if v, err := c.DecryptSum(nil); err != nil || !v.IsNull() {
		t.Fatal("empty sum is not NULL")
	}
}

// TestTamper checks that modified, truncated, moved or misplaced
// ciphertexts fail to decrypt with ErrDecrypt.
func TestTamper(t *testing.T) {
	for _, tc := range []struct {
		t Type
		v string
	}{
		{Type{Base: Integer}, "42"},
		{Type{Base: Text}, "secret text"},
		{Type{Base: Numeric}, "1.50"},
		{Type{Base: Char}, "ab  "},
		{Type{Base: Numeric, Precision: 10, Scale: 2}, "7.25"},
	} {
		t.Run(tc.t.String(), func(t *testing.T) {
			c := newColumn(t, tc.t, "tamper-a", KindEq)
			other := newColumn(t, tc.t, "tamper-b", KindEq)
			v := mustParse(t, tc.t, tc.v)
			rs := rnd.NewSalt()
			cells, err := c.Encrypt(v, rs)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, cl Cells, s []byte, col *Column) {
				t.Helper()
				got, err := col.Decrypt(cl, s)
				if !errors.Is(err, ErrDecrypt) {
					t.Fatalf("%s: got %#v, %v; want ErrDecrypt", what, got, err)
				}
			}
			target := &cells.Eq
			if c.HasVal() {
				target = &cells.Val
			}
			orig := slices.Clone(*target)
			for i := range orig {
				for _, bit := range []byte{1, 0x80} {
					*target = slices.Clone(orig)
					(*target)[i] ^= bit
					check(fmt.Sprintf("bit %x of byte %d", bit, i), cells, rs, c)
				}
			}
			*target = orig[:len(orig)-1]
			check("truncated", cells, rs, c)
			*target = append(slices.Clone(orig), 0)
			check("extended", cells, rs, c)
			*target = []byte{}
			check("empty", cells, rs, c)
			*target = orig
			check("other row's salt", cells, rnd.NewSalt(), c)
			check("other column", cells, rs, other)
			if c.HasVal() {
				// The Eq cell must agree with the value copy.
				w, _ := c.Encrypt(mustParse(t, tc.t, "0"), rs)
				check("Eq of another value", Cells{Eq: w.Eq, Val: cells.Val}, rs, c)
			}
			if _, err := c.DecryptAt(Cells{Eq: []byte("not a DET ciphertext at all")}, nil, LayerDET); !errors.Is(err, ErrDecrypt) && !c.HasVal() {
				t.Fatalf("garbage at DET: %v", err)
			}
		})
	}
	// Ord cells.
	c := newColumn(t, Type{Base: BigInt}, "tamper-ord", KindOrd)
	rs := rnd.NewSalt()
	cells, _ := c.Encrypt(IntValue(5), rs)
	o, _ := c.PeelRND(KindOrd, cells.Ord, rs)
	o[15] ^= 1
	if _, err := c.DecryptOrd(o, nil, LayerOPE); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("tampered OPE: %v", err)
	}
}

// TestSearchTokens checks that the tokens stored for a text contain the
// prefilter tokens of the LIKE patterns it matches, including the blank
// padding of character(n), which LIKE sees.
func TestSearchTokens(t *testing.T) {
	cases := []struct {
		t       Type
		v       string
		pattern string
	}{
		{Type{Base: Text}, "the quick brown fox", "%quick%"},
		{Type{Base: Text}, "the quick brown fox", "the%fox"},
		{Type{Base: Varchar, Length: 20}, "日本語のテキスト", "%本語の%"},
		{Type{Base: Char, Length: 6}, "abc", "abc   "},
		{Type{Base: Char, Length: 6}, "abc", "%bc %"},
	}
	for _, tc := range cases {
		c := newColumn(t, tc.t, "search-"+tc.t.String(), KindSearch)
		v := mustParse(t, tc.t, tc.v)
		cells, err := c.Encrypt(v, rnd.NewSalt())
		if err != nil {
			t.Fatal(err)
		}
		p := pglike.MustCompile(tc.pattern, pglike.DefaultEscape, false)
		if !p.Match(v.Str()) {
			t.Fatalf("%q does not match %q", v.Str(), tc.pattern)
		}
		want, err := c.SearchTokens(p)
		if err != nil || len(want) == 0 {
			t.Fatalf("%q: no prefilter tokens", tc.pattern)
		}
		if !search.Contains(cells.Search, want) {
			t.Fatalf("%s %q: tokens do not contain those of %q", tc.t, tc.v, tc.pattern)
		}
	}
}

func TestNewColumnErrors(t *testing.T) {
	sk, enc := testHom(t)
	d := testDeriver(t)
	for _, tc := range []struct {
		t     Type
		kinds []Kind
		want  string
	}{
		{Type{Base: Text}, []Kind{KindAdd}, "does not support add"},
		{Type{Base: Numeric}, []Kind{KindOrd}, "does not support ord"},
		{Type{Base: Numeric, Precision: 19, Scale: 2}, []Kind{KindOrd}, "does not support ord"},
		{Type{Base: Numeric, Precision: 301}, []Kind{KindAdd}, "does not support add"},
		{Type{Base: Bytea}, []Kind{KindSearch}, "does not support search"},
		{Type{Base: Integer}, []Kind{"join"}, "unknown onion kind"},
		{Type{Base: Integer, Length: 3}, nil, "takes no modifier"},
	} {
		if _, err := NewColumn(tc.t, []byte("x"), tc.kinds, d, sk, enc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want %q", tc.t, tc.kinds, err, tc.want)
		}
	}
	if _, err := NewColumn(Type{Base: Integer}, []byte("x"), []Kind{KindAdd}, d, nil, nil); err == nil {
		t.Error("Add without a Paillier key accepted")
	}
	if _, err := NewColumn(Type{Base: Integer}, nil, nil, d, nil, nil); err == nil {
		t.Error("empty column id accepted")
	}
	c, err := NewColumn(Type{Base: Integer}, []byte("x"), []Kind{KindAdd}, d, sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := c.Encrypt(IntValue(3), salt(2))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c.DecryptAdd(cells.Add); err != nil || v != IntValue(3) {
		t.Fatalf("Add without an Encrypter: %#v %v", v, err)
	}
	if _, err := c.Encrypt(IntValue(3), salt(2)[:5]); err == nil {
		t.Error("short salt accepted")
	}
	if _, err := c.Encrypt(IntValue(1<<40), salt(2)); err == nil {
		t.Error("bigint value accepted for an integer column")
	}
	if _, err := c.Encrypt(TextValue("x"), salt(2)); err == nil {
		t.Error("text value accepted for an integer column")
	}
}

func TestPhysicalColumns(t *testing.T) {
	str := func(pcs []PhysicalColumn) string {
		var s []string
		for _, p := range pcs {
			s = append(s, p.Name+":"+p.SQLType)
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		t     Type
		kinds []Kind
		want  string
	}{
		{Type{Base: Integer}, nil, "c_eq:uuid c_ord:uuid c_add:bytea"},
		{Type{Base: Integer}, []Kind{KindOrd}, "c_eq:uuid c_ord:uuid"},
		{Type{Base: Date}, []Kind{KindOrd}, "c_eq:uuid c_ord:uuid"},
		{Type{Base: Numeric, Precision: 15, Scale: 2}, []Kind{KindOrd}, "c_eq:uuid c_ord:uuid"},
		{Type{Base: Text}, nil, "c_eq:bytea c_ord:uuid c_srch:bigint[]"},
		{Type{Base: Text}, []Kind{KindSearch}, "c_eq:bytea c_srch:bigint[]"},
		{Type{Base: Numeric}, nil, "c_eq:bytea c_val:bytea"},
		{Type{Base: Char}, []Kind{KindEq}, "c_eq:bytea c_val:bytea"},
		{Type{Base: Char, Length: 2}, []Kind{KindEq}, "c_eq:bytea"},
		{Type{Base: Bytea}, []Kind{}, "c_eq:bytea"},
	} {
		c := newColumn(t, tc.t, "pc", tc.kinds...)
		if got := str(c.PhysicalColumns("c")); got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.t, tc.kinds, got, tc.want)
		}
		// Before FormatUUID every Eq and Ord cell is a bytea.
		old := strings.ReplaceAll(tc.want, ":uuid", ":bytea")
		if got := str(Layout(tc.t, c.Kinds(), false, FormatCompact, "c")); got != old {
			t.Errorf("%s %v, FormatCompact: %s, want %s", tc.t, tc.kinds, got, old)
		}
	}
	// Numerics of a join group keep AES-SIV in the Eq onion.
	if got := str(Layout(Type{Base: Numeric, Precision: 15, Scale: 2}, []Kind{KindOrd}, true, FormatUUID, "c")); got != "c_eq:bytea c_ord:uuid" {
		t.Errorf("joined numeric: %s", got)
	}
}

// TestDifferentialCompare checks Type.Compare and EqualityKey against
// PostgreSQL's = and < on every pair of a set of values of each type.
func TestDifferentialCompare(t *testing.T) {
	conn := connect(t)
	exec(t, conn, "SET TimeZone = 'Europe/Berlin'")
	berlin, _ := time.LoadLocation("Europe/Berlin")
	env := Env{TimeZone: berlin}
	for _, d := range diffTypes() {
		t.Run(d.sql, func(t *testing.T) {
			if d.t.Base == JSON {
				t.Skip("json has no = and no order in PostgreSQL")
			}
			var vals []Value
			var lits []string
			seen := map[Value]bool{}
			for _, in := range d.corpus {
				v, err := d.t.ParseText([]byte(in), env)
				if err != nil || seen[v] || len(vals) >= 40 {
					continue
				}
				seen[v] = true
				vals = append(vals, v)
				lits = append(lits, string(d.t.AppendText(nil, v, env)))
			}
			coll := ""
			if d.t.isText() || d.t.Base == Array && d.t.Element().isText() {
				coll = ` COLLATE "C"`
			}
			q := fmt.Sprintf(`SELECT i, j, a = b, a < b%s FROM unnest($1::%s[]) WITH ORDINALITY AS x(a, i),
				unnest($1::%[2]s[]) WITH ORDINALITY AS y(b, j)`, coll, d.sql)
			if d.t.Base == Array {
				// An array of arrays would be one array: cast each text.
				q = fmt.Sprintf(`SELECT i, j, a::%[2]s = b::%[2]s, a::%[2]s < b::%[2]s%[1]s FROM unnest($1::text[]) WITH ORDINALITY AS x(a, i),
					unnest($1::text[]) WITH ORDINALITY AS y(b, j)`, coll, d.sql)
			}
			res := conn.ExecParams(context.Background(), q, [][]byte{textArray(lits)}, nil, nil, nil).Read()
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if len(res.Rows) != len(vals)*len(vals) {
				t.Fatalf("%d rows for %d values", len(res.Rows), len(vals))
			}
			for _, row := range res.Rows {
				var i, j int
				fmt.Sscan(string(row[0]), &i)
				fmt.Sscan(string(row[1]), &j)
				a, b := vals[i-1], vals[j-1]
				eq, lt := string(row[2]) == "t", string(row[3]) == "t"
				cmp := d.t.Compare(a, b)
				keq := bytes.Equal(d.t.EqualityKey(a), d.t.EqualityKey(b))
				// The proxy never orders jsonb: equality only.
				if (cmp == 0) != eq || (cmp < 0) != lt && d.t.Base != JSONB && d.t.Elem != JSONB || keq != eq {
					t.Errorf("%q vs %q: server = %v < %v; Compare %d, keys equal %v", lits[i-1], lits[j-1], eq, lt, cmp, keq)
				}
			}
		})
	}
}

// TestEqualityKeyRoundTrip checks that lossless types are rebuilt exactly
// from their EqualityKey, for every corpus value.
func TestEqualityKeyRoundTrip(t *testing.T) {
	for _, d := range diffTypes() {
		if !d.t.equalityLossless() {
			continue
		}
		for _, in := range d.corpus {
			v, err := d.t.ParseText([]byte(in), Env{})
			if err != nil {
				continue
			}
			got, err := d.t.fromEqualityKey(d.t.EqualityKey(v))
			if err != nil || got != v {
				t.Errorf("%s %q: %#v, %v", d.sql, trunc(in), got, err)
			}
		}
	}
}

func TestScaledInt(t *testing.T) {
	for _, tc := range []struct {
		v     string
		scale int
		want  string
	}{
		{"1.50", 2, "150"}, {"-0.01", 2, "-1"}, {"0", 2, "0"}, {"1200", -2, "12"}, {"-99999999.99", 2, "-9999999999"},
	} {
		v := mustParse(t, Type{Base: Numeric}, tc.v)
		x := scaledInt(v, tc.scale)
		if x.String() != tc.want {
			t.Errorf("scaledInt(%s, %d) = %s, want %s", tc.v, tc.scale, x, tc.want)
		}
		back := fromScaledInt(x, tc.scale)
		if compareNumeric(back, v) != 0 {
			t.Errorf("fromScaledInt(%s, %d) = %#v", x, tc.scale, back)
		}
	}
	if fromScaledInt(big.NewInt(-5), 3) != mustParse(t, Type{Base: Numeric}, "-0.005") {
		t.Error("fromScaledInt(-5, 3)")
	}
}

// TestConcurrent uses one Column from several goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	c := newColumn(t, Type{Base: Numeric, Precision: 12, Scale: 3}, "concurrent")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				v, err := c.Type().ParseText([]byte(fmt.Sprintf("%d.%03d", g*1000+i, i)), Env{})
				if err != nil {
					errs <- err
					return
				}
				s := rnd.NewSalt()
				cells, err := c.Encrypt(v, s)
				if err != nil {
					errs <- err
					return
				}
				if got, err := c.Decrypt(cells, s); err != nil || got != v {
					errs <- fmt.Errorf("%#v: %#v, %v", v, got, err)
					return
				}
				if got, err := c.DecryptOrd(cells.Ord, s, LayerRND); err != nil || got != v {
					errs <- fmt.Errorf("ord %#v: %#v, %v", v, got, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

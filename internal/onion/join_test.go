package onion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/pgonion/pgonion/internal/schemes/rnd"
)

func newJoined(t testing.TB, typ Type, id, join string, kinds ...Kind) *Column {
	t.Helper()
	sk, enc := testHom(t)
	if kinds == nil {
		kinds = allKinds(typ)
	}
	var j []byte
	if join != "" {
		j = []byte(join)
	}
	c, err := NewColumnJoined(typ, []byte(id), j, kinds, testDeriver(t), sk, enc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// peeled encrypts v in c and returns the DET and OPE ciphertexts (the
// cells peeled in the proxy), checking them against EqDET and OrdOPE.
func peeled(t testing.TB, c *Column, v Value) (det, ord []byte, cells Cells, salt []byte) {
	t.Helper()
	salt = rnd.NewSalt()
	cells, err := c.Encrypt(v, salt)
	if err != nil {
		t.Fatal(err)
	}
	if det, err = c.PeelRND(KindEq, cells.Eq, salt); err != nil {
		t.Fatal(err)
	}
	if k, err := c.EqDET(v); err != nil || !bytes.Equal(k, det) {
		t.Fatalf("%#v: EqDET differs from the stored DET: %v", v, err)
	}
	if cells.Ord != nil {
		if ord, err = c.PeelRND(KindOrd, cells.Ord, salt); err != nil {
			t.Fatal(err)
		}
		if k, err := c.OrdOPE(v, Exact); err != nil || !bytes.Equal(k, ord) {
			t.Fatalf("%#v: OrdOPE differs from the stored OPE: %v", v, err)
		}
	}
	return det, ord, cells, salt
}

// TestJoinGroupIntegers checks that integer columns of one join group, of
// any widths, share DET and OPE ciphertexts and decrypt each other's, and
// that other groups and ungrouped columns do not.
func TestJoinGroupIntegers(t *testing.T) {
	a := newJoined(t, Type{Base: Integer}, "col-a", "g1", KindEq, KindOrd)
	b := newJoined(t, Type{Base: BigInt}, "col-b", "g1", KindEq, KindOrd)
	s := newJoined(t, Type{Base: SmallInt}, "col-s", "g1", KindEq, KindOrd, KindAdd)
	other := newJoined(t, Type{Base: BigInt}, "col-c", "g2", KindEq, KindOrd)
	alone := newJoined(t, Type{Base: BigInt}, "col-b", "", KindEq, KindOrd) // same column id as b, no group
	plain := newColumn(t, Type{Base: BigInt}, "col-b", KindEq, KindOrd)
	idAsGroup := newJoined(t, Type{Base: BigInt}, "col-y", "col-b", KindEq, KindOrd) // join id = a column id
	members := []*Column{a, b, s}
	outsiders := []*Column{other, alone, idAsGroup}

	vals := []int64{-32768, -5, 0, 1, 2, 32767}
	var prevOrd []byte
	for _, x := range vals {
		v := IntValue(x)
		var dets, ords [][]byte
		for _, c := range members {
			d, o, _, _ := peeled(t, c, v)
			if len(o) != 16 {
				t.Fatalf("%s in a group: %d-byte OPE, want the 64-bit domain", c.Type(), len(o))
			}
			dets, ords = append(dets, d), append(ords, o)
		}
		for i := range members {
			if !bytes.Equal(dets[i], dets[0]) || !bytes.Equal(ords[i], ords[0]) {
				t.Fatalf("%d: %s and %s of one group differ", x, members[i].Type(), members[0].Type())
			}
			// Each member decrypts every member's DET and OPE ciphertexts.
			for _, c := range members {
				if got, err := c.DecryptAt(Cells{Eq: dets[i]}, nil, LayerDET); err != nil || got != v {
					t.Fatalf("%d: %s decrypts the DET of %s: %#v, %v", x, c.Type(), members[i].Type(), got, err)
				}
				if got, err := c.DecryptOrd(ords[i], nil, LayerOPE); err != nil || got != v {
					t.Fatalf("%d: %s decrypts the OPE of %s: %#v, %v", x, c.Type(), members[i].Type(), got, err)
				}
			}
		}
		if prevOrd != nil && bytes.Compare(prevOrd, ords[0]) >= 0 {
			t.Fatal("group OPE out of order")
		}
		prevOrd = ords[0]
		for _, c := range outsiders {
			d, o, _, _ := peeled(t, c, v)
			if bytes.Equal(d, dets[0]) || bytes.Equal(o, ords[0]) {
				t.Fatalf("%d: a column outside the group has the group's ciphertexts", x)
			}
			if _, err := c.DecryptAt(Cells{Eq: dets[0]}, nil, LayerDET); !errors.Is(err, ErrDecrypt) {
				t.Fatalf("%d: a column outside the group decrypts its DET: %v", x, err)
			}
			if _, err := a.DecryptAt(Cells{Eq: d}, nil, LayerDET); !errors.Is(err, ErrDecrypt) {
				t.Fatalf("%d: a group member decrypts an outsider's DET: %v", x, err)
			}
		}
		// NewColumn is NewColumnJoined without a group.
		d1, o1, _, _ := peeled(t, alone, v)
		d2, o2, _, _ := peeled(t, plain, v)
		if !bytes.Equal(d1, d2) || !bytes.Equal(o1, o2) {
			t.Fatal("NewColumn and NewColumnJoined(nil) differ")
		}
	}
	// A bigint of the group out of the integer's range does not decrypt
	// as an integer.
	big := IntValue(1 << 40)
	d, o, _, _ := peeled(t, b, big)
	if _, err := a.DecryptAt(Cells{Eq: d}, nil, LayerDET); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("2^40 as an integer: %v", err)
	}
	if _, err := a.DecryptOrd(o, nil, LayerOPE); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("2^40 as an integer (OPE): %v", err)
	}
	// Integers of a group compare in the 64-bit domain: no ErrOrdRange.
	if k, err := s.OrdOPE(big, Exact); err != nil || !bytes.Equal(k, o) {
		t.Fatalf("2^40 for a smallint of a group: %v", err)
	}

	// The RND layers stay per column: a member's RND cell does not peel
	// in another member, and the peel keys differ.
	_, _, cells, salt := peeled(t, a, IntValue(7))
	if _, err := b.PeelRND(KindEq, cells.Eq, salt); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("Eq RND of a peeled by b: %v", err)
	}
	if _, err := b.PeelRND(KindOrd, cells.Ord, salt); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("Ord RND of a peeled by b: %v", err)
	}
	if _, err := b.Decrypt(Cells{Eq: cells.Eq}, salt); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("Eq cell of a decrypted by b: %v", err)
	}
	for _, k := range []Kind{KindEq, KindOrd} {
		ka, _ := a.PeelKey(k)
		kb, _ := b.PeelKey(k)
		if bytes.Equal(ka, kb) {
			t.Fatalf("members share the %s RND key", k)
		}
	}
	// The Add onion keeps working in a group.
	_, _, cells, _ = peeled(t, s, IntValue(-9))
	if got, err := s.DecryptAdd(cells.Add); err != nil || got != IntValue(-9) {
		t.Fatalf("Add in a group: %#v, %v", got, err)
	}
	// Dates and booleans keep the 32-bit domain in a group.
	dt := newJoined(t, Type{Base: Date}, "col-d", "g-dates", KindOrd)
	if _, o, _, _ := peeled(t, dt, DateValue(5)); len(o) != 16 || [8]byte(o[8:]) != ordPad {
		t.Fatalf("date in a group: %d-byte OPE %x, want 8 bytes and the padding", len(o), o)
	}
	if _, err := NewColumnJoined(Type{Base: Integer}, nil, []byte("g"), nil, testDeriver(t), nil, nil); err == nil {
		t.Fatal("empty column id accepted")
	}
}

// TestJoinGroupTexts checks text, varchar and character columns of one
// group: equal DET and prefix OPE ciphertexts for SQL-equal values, the
// other's DET decrypts, and the per-column Val copy and Search tokens.
func TestJoinGroupTexts(t *testing.T) {
	tx := newJoined(t, Type{Base: Text}, "t-text", "names", KindEq, KindOrd, KindSearch)
	vc := newJoined(t, Type{Base: Varchar, Length: 20}, "t-varchar", "names", KindEq, KindOrd, KindSearch)
	ch := newJoined(t, Type{Base: Char, Length: 5}, "t-char", "names", KindEq, KindOrd, KindSearch)
	bp := newJoined(t, Type{Base: Char}, "t-bpchar", "names", KindEq, KindOrd)
	bp2 := newJoined(t, Type{Base: Char}, "t-bpchar2", "names", KindEq, KindOrd)
	members := []*Column{tx, vc, ch, bp, bp2}
	for _, s := range []string{"", "ab", "héllo", "日本"} {
		var dets, ords [][]byte
		for _, c := range members {
			d, o, _, _ := peeled(t, c, mustParse(t, c.Type(), s))
			dets, ords = append(dets, d), append(ords, o)
		}
		for i, c := range members {
			if !bytes.Equal(dets[i], dets[0]) || !bytes.Equal(ords[i], ords[0]) {
				t.Fatalf("%q: %s and text of one group differ", s, c.Type())
			}
			if c.HasVal() {
				continue // Decrypt reads Val
			}
			for j := range members {
				if got, err := c.DecryptAt(Cells{Eq: dets[j]}, nil, LayerDET); err != nil || got != mustParse(t, c.Type(), s) {
					t.Fatalf("%q: %s decrypts the DET of %s: %#v, %v", s, c.Type(), members[j].Type(), got, err)
				}
			}
		}
	}
	// 'ab ' as text is not 'ab', which the character column stores.
	d1, _ := tx.EqDET(TextValue("ab "))
	d2, _ := ch.EqDET(TextValue("ab"))
	if bytes.Equal(d1, d2) {
		t.Fatal("text 'ab ' and character 'ab' have one DET")
	}
	// A text too long for character(5) does not decrypt there.
	d, _, _, _ := peeled(t, tx, TextValue("abcdefgh"))
	if _, err := ch.DecryptAt(Cells{Eq: d}, nil, LayerDET); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("8 characters as character(5): %v", err)
	}
	// Val and Search stay per column.
	_, _, c1, s1 := peeled(t, bp, TextValue("ab  "))
	if _, err := bp2.Decrypt(c1, s1); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("Val of another member: %v", err)
	}
	_, _, t1, _ := peeled(t, tx, TextValue("hello world"))
	_, _, t2, _ := peeled(t, vc, TextValue("hello world"))
	if slices.Equal(t1.Search, t2.Search) {
		t.Fatal("members share search tokens")
	}
}

func TestJoinable(t *testing.T) {
	i2, i4, i8 := Type{Base: SmallInt}, Type{Base: Integer}, Type{Base: BigInt}
	n102, n0, n180, n82, n200 := Type{Base: Numeric, Precision: 10, Scale: 2}, Type{Base: Numeric}, Type{Base: Numeric, Precision: 18}, Type{Base: Numeric, Precision: 8, Scale: 2}, Type{Base: Numeric, Precision: 20}
	tx, vc, ch, bp := Type{Base: Text}, Type{Base: Varchar, Length: 5}, Type{Base: Char, Length: 3}, Type{Base: Char}
	dt, ts, tz, bo, by := Type{Base: Date}, Type{Base: Timestamp}, Type{Base: Timestamptz}, Type{Base: Boolean}, Type{Base: Bytea}
	for _, tc := range []struct {
		a, b    Type
		eq, ord bool
	}{
		{i2, i8, true, true}, {i4, i4, true, true}, {i4, i8, true, true},
		{i4, n180, false, true}, {i4, n102, false, false}, {n102, n82, true, true}, {n102, n0, true, false},
		{n0, n0, true, false}, {n200, n200, true, false}, {n200, n102, true, false},
		{tx, vc, true, true}, {tx, ch, true, true}, {ch, bp, true, true}, {vc, bp, false, false}, {vc, ch, false, false},
		{tx, bp, true, true}, {vc, vc, true, true},
		{dt, dt, true, true}, {dt, ts, false, false}, {ts, tz, false, false}, {tz, tz, true, true},
		{bo, bo, true, true}, {bo, i4, false, false}, {by, by, true, false}, {by, tx, false, false},
		{Type{Base: Integer, Length: 1}, i4, false, false},
	} {
		for _, p := range [][2]Type{{tc.a, tc.b}, {tc.b, tc.a}} {
			if got := EqJoinable(p[0], p[1]); got != tc.eq {
				t.Errorf("EqJoinable(%s, %s) = %v", p[0], p[1], got)
			}
			if got := OrdJoinable(p[0], p[1]); got != tc.ord {
				t.Errorf("OrdJoinable(%s, %s) = %v", p[0], p[1], got)
			}
		}
	}
}

// TestDifferentialJoin checks EqJoinable and OrdJoinable against
// PostgreSQL's cross-type = and < : for columns of joinable types in one
// group, DET ciphertexts are equal exactly when the server finds the
// values equal, and OPE ciphertexts order as the server does (prefix order
// for texts: a < b gives OPE(a) <= OPE(b)).
func TestDifferentialJoin(t *testing.T) {
	conn := connect(t)
	exec(t, conn, "SET TimeZone = 'UTC'")
	rng := rand.New(rand.NewPCG(*randomSeed, 0x6a6f696e))
	var texts []string
	texts = append(texts, textCorpus...)
	for range 60 {
		texts = append(texts, genOrderText(rng))
	}
	nums := append(append([]string{}, intCorpus...), numericCorpus...)
	// Why varchar and character are not joinable while text and character
	// are: the operator PostgreSQL resolves.
	res := conn.ExecParams(context.Background(), `SELECT 'ab '::varchar = 'ab'::bpchar, 'ab '::text = 'ab'::bpchar`, nil, nil, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) != "t" || string(res.Rows[0][1]) != "f" {
		t.Fatalf("varchar = bpchar and text = bpchar: %v %q", res.Err, res.Rows)
	}
	if EqJoinable(Type{Base: Varchar}, Type{Base: Char}) || !EqJoinable(Type{Base: Text}, Type{Base: Char}) {
		t.Fatal("EqJoinable disagrees")
	}
	for _, tc := range []struct {
		a, b   string // SQL types
		ta, tb Type
		corpus []string
	}{
		{"smallint", "bigint", Type{Base: SmallInt}, Type{Base: BigInt}, intCorpus},
		{"integer", "bigint", Type{Base: Integer}, Type{Base: BigInt}, intCorpus},
		{"integer", "numeric(18,0)", Type{Base: Integer}, Type{Base: Numeric, Precision: 18}, nums},
		{"numeric(10,2)", "numeric", Type{Base: Numeric, Precision: 10, Scale: 2}, Type{Base: Numeric}, nums},
		{"numeric(10,2)", "numeric(18,2)", Type{Base: Numeric, Precision: 10, Scale: 2}, Type{Base: Numeric, Precision: 18, Scale: 2}, nums},
		{"text", "varchar(5)", Type{Base: Text}, Type{Base: Varchar, Length: 5}, texts},
		{"text", "char(3)", Type{Base: Text}, Type{Base: Char, Length: 3}, texts},
		{"text", "bpchar", Type{Base: Text}, Type{Base: Char}, texts},
		{"varchar", "varchar(5)", Type{Base: Varchar}, Type{Base: Varchar, Length: 5}, texts},
		{"char(3)", "bpchar", Type{Base: Char, Length: 3}, Type{Base: Char}, texts},
		{"date", "date", Type{Base: Date}, Type{Base: Date}, dateCorpus},
	} {
		t.Run(tc.a+"/"+tc.b, func(t *testing.T) {
			eq, ord := EqJoinable(tc.ta, tc.tb), OrdJoinable(tc.ta, tc.tb)
			if !eq && !ord {
				t.Fatal("not joinable")
			}
			ca := newJoined(t, tc.ta, "dj-a", "dj")
			cb := newJoined(t, tc.tb, "dj-b", "dj")
			side := func(typ Type) (vals []Value, lits []string) {
				seen := map[Value]bool{}
				for _, in := range tc.corpus {
					v, err := typ.ParseText([]byte(in), Env{})
					if err != nil || seen[v] || len(vals) >= 80 {
						continue
					}
					seen[v] = true
					vals = append(vals, v)
					lits = append(lits, string(typ.AppendText(nil, v, Env{})))
				}
				return vals, lits
			}
			va, la := side(tc.ta)
			vb, lb := side(tc.tb)
			coll := ""
			if tc.ta.isText() {
				coll = ` COLLATE "C"`
			}
			q := fmt.Sprintf(`SELECT i, j, a = b, a < b%s FROM unnest($1::%s[]) WITH ORDINALITY AS x(a, i),
				unnest($2::%s[]) WITH ORDINALITY AS y(b, j)`, coll, tc.a, tc.b)
			res := conn.ExecParams(context.Background(), q, [][]byte{textArray(la), textArray(lb)}, nil, nil, nil).Read()
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			enc := func(c *Column, vs []Value) (dets, ords [][]byte) {
				for _, v := range vs {
					d, o, _, _ := peeled(t, c, v)
					dets, ords = append(dets, d), append(ords, o)
				}
				return dets, ords
			}
			da, oa := enc(ca, va)
			db, ob := enc(cb, vb)
			equalPairs, failures := 0, 0
			for _, row := range res.Rows {
				i, _ := strconv.Atoi(string(row[0]))
				j, _ := strconv.Atoi(string(row[1]))
				i, j = i-1, j-1
				sEq, sLt := string(row[2]) == "t", string(row[3]) == "t"
				if sEq {
					equalPairs++
				}
				var bad string
				if eq && bytes.Equal(da[i], db[j]) != sEq {
					bad = fmt.Sprintf("server = %v, DET equal %v", sEq, !sEq)
				}
				if ord {
					oc := bytes.Compare(oa[i], ob[j])
					switch {
					case tc.ta.isText() && ((sEq && oc != 0) || (sLt && oc > 0) || (!sEq && !sLt && oc < 0)):
						bad = fmt.Sprintf("server = %v < %v, OPE compare %d", sEq, sLt, oc)
					case !tc.ta.isText() && oc != map[bool]int{true: 0, false: map[bool]int{true: -1, false: 1}[sLt]}[sEq]:
						bad = fmt.Sprintf("server = %v < %v, OPE compare %d", sEq, sLt, oc)
					}
				}
				if bad != "" && failures < 10 {
					failures++
					t.Errorf("%q vs %q: %s", la[i], lb[j], bad)
				}
			}
			if equalPairs == 0 {
				t.Fatal("no equal pairs: the test checks nothing")
			}
			t.Logf("%d x %d values, %d equal pairs", len(va), len(vb), equalPairs)
		})
	}
}

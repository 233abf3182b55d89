package onion

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/pgonion/pgonion/internal/schemes/rnd"
)

func newColumnFormat(t testing.TB, typ Type, id, joinID string, f Format) *Column {
	t.Helper()
	var join []byte
	if joinID != "" {
		join = []byte(joinID)
	}
	c, err := NewColumnFormat(typ, []byte(id), join, []Kind{KindEq}, f, testDeriver(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFormatCellSizes checks the Eq cell lengths of each format at both
// layers, and that each format reads its own cells.
func TestFormatCellSizes(t *testing.T) {
	for _, tc := range []struct {
		t       Type
		joined  bool
		v       string
		siv     [2]int // RND, DET under FormatSIV
		compact [2]int // under FormatCompact
	}{
		{Type{Base: Integer}, false, "42", [2]int{32, 24}, [2]int{16, 16}},
		{Type{Base: Integer}, true, "42", [2]int{32, 24}, [2]int{16, 16}},
		{Type{Base: SmallInt}, false, "-7", [2]int{32, 24}, [2]int{16, 16}},
		{Type{Base: BigInt}, false, "-9223372036854775808", [2]int{32, 24}, [2]int{16, 16}},
		{Type{Base: Date}, false, "1995-03-15", [2]int{32, 24}, [2]int{16, 16}},
		{Type{Base: Timestamptz}, false, "2024-02-29 12:34:56+02", [2]int{32, 24}, [2]int{16, 16}},
		{Type{Base: Boolean}, false, "t", [2]int{32, 17}, [2]int{16, 16}},
		{Type{Base: Numeric, Precision: 15, Scale: 2}, false, "12345.67", [2]int{32, 24}, [2]int{16, 16}},
		{Type{Base: Numeric, Precision: 15, Scale: 2}, false, "NaN", [2]int{32, 19}, [2]int{16, 16}},
		// Not compact: numerics of a join group, wide numerics, texts.
		{Type{Base: Numeric, Precision: 15, Scale: 2}, true, "12345.67", [2]int{32, 24}, [2]int{32, 24}},
		{Type{Base: Numeric, Precision: 19, Scale: 2}, false, "1.5", [2]int{32, 19}, [2]int{32, 19}},
		{Type{Base: Text}, false, "abc", [2]int{32, 19}, [2]int{32, 19}},
	} {
		join := ""
		if tc.joined {
			join = "group"
		}
		v := mustParse(t, tc.t, tc.v)
		for _, f := range []Format{FormatSIV, FormatCompact} {
			want := tc.siv
			if f == FormatCompact {
				want = tc.compact
			}
			c := newColumnFormat(t, tc.t, "col-"+tc.t.String(), join, f)
			for i, layer := range []Layer{LayerRND, LayerDET} {
				s := rnd.NewSalt()
				cells, err := c.EncryptAt(v, s, layer, LayerRND)
				if err != nil {
					t.Fatal(err)
				}
				if len(cells.Eq) != want[i] {
					t.Errorf("%s %s (joined %v) format %d at %s: %d-byte Eq cell, want %d", tc.t, tc.v, tc.joined, f, layer, len(cells.Eq), want[i])
				}
				got, err := c.DecryptAt(cells, s, layer)
				if err != nil || got != v {
					t.Errorf("%s %s format %d at %s: decrypted %v, %v", tc.t, tc.v, f, layer, got, err)
				}
			}
		}
	}
}

// TestFormatsDoNotMix: a column reads only cells of its own format.
func TestFormatsDoNotMix(t *testing.T) {
	typ := Type{Base: Integer}
	v := IntValue(42)
	siv := newColumnFormat(t, typ, "mix", "", FormatSIV)
	compact := newColumnFormat(t, typ, "mix", "", FormatCompact)
	for _, layer := range []Layer{LayerRND, LayerDET} {
		s := rnd.NewSalt()
		a, err := siv.EncryptAt(v, s, layer, LayerRND)
		if err != nil {
			t.Fatal(err)
		}
		b, err := compact.EncryptAt(v, s, layer, LayerRND)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := compact.DecryptAt(a, s, layer); !errors.Is(err, ErrDecrypt) {
			t.Errorf("at %s: compact column read a FormatSIV cell (%v)", layer, err)
		}
		if _, err := siv.DecryptAt(b, s, layer); !errors.Is(err, ErrDecrypt) {
			t.Errorf("at %s: FormatSIV column read a compact cell (%v)", layer, err)
		}
	}
	// A compact RND cell is 16 bytes like a DET one; read at the wrong
	// layer it fails (the block is authenticated) instead of giving a
	// wrong value.
	s := rnd.NewSalt()
	cells, _ := compact.EncryptAt(v, s, LayerRND, LayerRND)
	if _, err := compact.DecryptAt(cells, s, LayerDET); !errors.Is(err, ErrDecrypt) {
		t.Errorf("RND cell read as DET: %v", err)
	}
	cells, _ = compact.EncryptAt(v, s, LayerDET, LayerRND)
	if _, err := compact.DecryptAt(cells, s, LayerRND); !errors.Is(err, ErrDecrypt) {
		t.Errorf("DET cell read as RND: %v", err)
	}
	if _, err := NewColumnFormat(typ, []byte("x"), nil, []Kind{KindEq}, Format(4), testDeriver(t), nil, nil); err == nil {
		t.Error("unknown format accepted")
	}
}

// TestCompactEqDET: constants of the comparison type give the DET cell
// of the equal stored value, and a constant equal to no value of the
// column gives a cell no value has.
func TestCompactEqDET(t *testing.T) {
	num := Type{Base: Numeric, Precision: 15, Scale: 2}
	c := newColumnFormat(t, num, "eqdet", "", FormatCompact)
	stored := func(s string) []byte {
		cells, err := c.EncryptAt(mustParse(t, num, s), rnd.NewSalt(), LayerDET, LayerRND)
		if err != nil {
			t.Fatal(err)
		}
		return cells.Eq
	}
	unconstrained := Type{Base: Numeric}
	eqdet := func(s string) []byte {
		ct, err := c.EqDET(mustParse(t, unconstrained, s))
		if err != nil {
			t.Fatal(err)
		}
		return ct
	}
	for _, tc := range []struct{ constant, value string }{
		{"1.500", "1.50"}, {"1.5", "1.50"}, {"-0.0", "0"}, {"NaN", "NaN"}, {"9999999999999.99", "9999999999999.99"},
	} {
		if !bytes.Equal(eqdet(tc.constant), stored(tc.value)) {
			t.Errorf("EqDET(%s) differs from the cell of %s", tc.constant, tc.value)
		}
	}
	reserved := eqdet("0.065")
	for _, other := range []string{"0.07", "0.06", "0", "NaN"} {
		if bytes.Equal(reserved, stored(other)) {
			t.Errorf("EqDET(0.065) equals the cell of %s", other)
		}
	}
	for _, s := range []string{"10000000000000", "Infinity", "-Infinity", "1e30"} {
		if !bytes.Equal(eqdet(s), reserved) {
			t.Errorf("EqDET(%s), out of the column's range, is not the reserved cell", s)
		}
	}
	if _, err := c.DecryptAt(Cells{Eq: reserved}, nil, LayerDET); !errors.Is(err, ErrDecrypt) {
		t.Errorf("the reserved cell decrypted: %v", err)
	}

	// Integers of every width in one join group share ciphertexts.
	a := newColumnFormat(t, Type{Base: Integer}, "a", "keys", FormatCompact)
	b := newColumnFormat(t, Type{Base: BigInt}, "b", "keys", FormatCompact)
	ca, _ := a.EncryptAt(IntValue(7), rnd.NewSalt(), LayerDET, LayerRND)
	cb, _ := b.EncryptAt(IntValue(7), rnd.NewSalt(), LayerDET, LayerRND)
	if !bytes.Equal(ca.Eq, cb.Eq) {
		t.Error("integer and bigint of one join group: different DET cells for 7")
	}
	big, err := a.EqDET(IntValue(1 << 40))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.DecryptAt(Cells{Eq: big}, nil, LayerDET); !errors.Is(err, ErrDecrypt) {
		t.Errorf("an integer column decrypted a bigint constant out of its range: %v", err)
	}
}

func TestFromScaledInt64(t *testing.T) {
	for _, x := range []int64{0, 1, -1, 7, -150, 1234567, math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		for _, scale := range []int{-3, 0, 2, 18} {
			if got, want := fromScaledInt64(x, scale), fromScaledInt(big.NewInt(x), scale); got != want {
				t.Errorf("fromScaledInt64(%d, %d) = %#v, want %#v", x, scale, got, want)
			}
		}
	}
}

// TestFormatUUIDOrdCells checks the Ord cells of FormatUUID: 16 bytes at
// both layers for the 32-bit domain (padded), the 64-bit domain and text
// prefixes, byte order equal to value order, the padding checked, and
// FormatCompact's cells unchanged (8 or 16 bytes at OPE, one more block at
// RND).
func TestFormatUUIDOrdCells(t *testing.T) {
	for _, tc := range []struct {
		t              Type
		vals           []string // ascending
		opeOld, rndOld int      // FormatCompact's sizes
		padded         bool
	}{
		{Type{Base: Date}, []string{"1992-01-01", "1992-01-02", "1998-12-01"}, 8, 16, true},
		{Type{Base: Integer}, []string{"-2147483648", "-1", "0", "7", "2147483647"}, 8, 16, true},
		{Type{Base: Numeric, Precision: 15, Scale: 2}, []string{"-5.5", "0.04", "0.05", "901.00"}, 16, 32, false},
		{Type{Base: Text}, []string{"", "a", "abc", "b"}, 16, 32, false},
	} {
		mk := func(f Format) *Column {
			c, err := NewColumnFormat(tc.t, []byte("ord-"+tc.t.String()), nil, []Kind{KindOrd}, f, testDeriver(t), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		c, old := mk(FormatUUID), mk(FormatCompact)
		if c.CellSQLType(KindOrd) != "uuid" || old.CellSQLType(KindOrd) != "bytea" {
			t.Fatalf("%s: cell types %s, %s", tc.t, c.CellSQLType(KindOrd), old.CellSQLType(KindOrd))
		}
		var prev []byte
		for _, s := range tc.vals {
			v := mustParse(t, tc.t, s)
			salt := rnd.NewSalt()
			cells, err := c.Encrypt(v, salt)
			if err != nil {
				t.Fatal(err)
			}
			if len(cells.Ord) != 16 {
				t.Fatalf("%s %q: RND Ord cell of %d bytes", tc.t, s, len(cells.Ord))
			}
			ope, err := c.PeelRND(KindOrd, cells.Ord, salt)
			if err != nil || len(ope) != 16 {
				t.Fatalf("%s %q: peeled %x, %v", tc.t, s, ope, err)
			}
			if err := c.CheckPeeled(KindOrd, ope); err != nil {
				t.Fatalf("%s %q: CheckPeeled: %v", tc.t, s, err)
			}
			if prev != nil && bytes.Compare(prev, ope) >= 0 {
				t.Fatalf("%s %q: cell does not sort above the previous value's", tc.t, s)
			}
			if bytes.Equal(ope, make([]byte, 16)) || bytes.Equal(ope, bytes.Repeat([]byte{0xff}, 16)) {
				t.Fatalf("%s %q: cell is a sentinel", tc.t, s)
			}
			prev = ope
			if tc.padded {
				if [8]byte(ope[8:]) != ordPad {
					t.Fatalf("%s %q: padding %x", tc.t, s, ope[8:])
				}
				bad := bytes.Clone(ope)
				bad[15] ^= 1
				if _, err := c.DecryptOrd(bad, nil, LayerOPE); !errors.Is(err, ErrDecrypt) {
					t.Fatalf("%s %q: bad padding: %v", tc.t, s, err)
				}
				if err := c.CheckPeeled(KindOrd, bad); !errors.Is(err, ErrDecrypt) {
					t.Fatalf("%s %q: CheckPeeled of bad padding: %v", tc.t, s, err)
				}
			}
			if !tc.t.isText() {
				if got, err := c.DecryptOrd(ope, nil, LayerOPE); err != nil || tc.t.Compare(got, v) != 0 {
					t.Fatalf("%s %q: DecryptOrd %v, %v", tc.t, s, got, err)
				}
			}
			oc, err := old.Encrypt(v, salt)
			if err != nil {
				t.Fatal(err)
			}
			oldOPE, err := old.PeelRND(KindOrd, oc.Ord, salt)
			if err != nil || len(oldOPE) != tc.opeOld || len(oc.Ord) != tc.rndOld {
				t.Fatalf("%s %q: FormatCompact cells of %d and %d bytes, %v", tc.t, s, len(oc.Ord), len(oldOPE), err)
			}
			if !bytes.Equal(oldOPE, ope[:tc.opeOld]) {
				t.Fatalf("%s %q: the OPE ciphertext differs between formats", tc.t, s)
			}
		}
	}
}

func TestUUIDText(t *testing.T) {
	b := []byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}
	const want = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
	if got := string(AppendUUIDText(nil, b)); got != want {
		t.Fatalf("AppendUUIDText: %s", got)
	}
	out := make([]byte, 16)
	if !DecodeUUIDText(out, []byte(want)) || !bytes.Equal(out, b) {
		t.Fatalf("DecodeUUIDText: %x", out)
	}
	for _, bad := range []string{"", want[:35], want + "0", "a0eebc999c0b-4ef8-bb6d-6bb9bd380a11-", "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", `\xeebc99-9c0b-4ef8-bb6d-6bb9bd380a11`} {
		if DecodeUUIDText(out, []byte(bad)) {
			t.Errorf("DecodeUUIDText(%q) accepted", bad)
		}
	}
}

func FuzzDecodeUUIDText(f *testing.F) {
	f.Add("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
	f.Fuzz(func(t *testing.T, s string) {
		out := make([]byte, 16)
		if DecodeUUIDText(out, []byte(s)) {
			if got := string(AppendUUIDText(nil, out)); !strings.EqualFold(got, s) {
				t.Fatalf("%q decoded to %x, which prints as %s", s, out, got)
			}
		}
	})
}

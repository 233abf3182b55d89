package onion

import (
	"bytes"
	"errors"
	"math"
	"math/big"
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
	if _, err := NewColumnFormat(typ, []byte("x"), nil, []Kind{KindEq}, Format(3), testDeriver(t), nil, nil); err == nil {
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

package hom

import (
	"math/big"
	mrand "math/rand/v2"
	"testing"
)

func TestAccumulator(t *testing.T) {
	sk := testKey(t, 2048)
	pk := sk.Public()
	e := newEnc(t, sk)
	acc := pk.NewAccumulator()
	if acc.Sum() != nil {
		t.Fatal("empty accumulator has a sum")
	}
	accB := pk.NewAccumulator()
	want := new(big.Int)
	r := mrand.New(mrand.NewPCG(3, 3))
	for i := 0; i < 40; i++ {
		v := r.Int64() >> r.UintN(63)
		if i%2 == 1 {
			v = -v
		}
		want.Add(want, big.NewInt(v))
		c := e.EncryptInt64(v)
		if i%3 == 0 {
			acc.Add(c)
		} else if err := accB.AddBytes(pk.AppendCiphertext(nil, c)); err != nil {
			t.Fatal(err)
		}
	}
	acc.Merge(accB)
	if acc.Count() != 40 {
		t.Errorf("count %d", acc.Count())
	}
	if got, err := sk.Decrypt(acc.Sum()); err != nil || got.Cmp(want) != 0 {
		t.Fatalf("sum %v, %v; want %v", got, err, want)
	}
	for _, b := range [][]byte{nil, make([]byte, pk.CiphertextSize()), pk.NSquared().FillBytes(make([]byte, pk.CiphertextSize()))} {
		if err := accB.AddBytes(b); err != ErrDecrypt {
			t.Errorf("AddBytes accepted an invalid ciphertext: %v", err)
		}
	}
	// A ciphertext sharing a factor with n poisons the sum: decryption fails.
	bad := pk.NewAccumulator()
	bad.Add(e.EncryptInt64(1))
	bad.AddBytes(sk.crt[0].s.FillBytes(make([]byte, pk.CiphertextSize())))
	if _, err := sk.Decrypt(bad.Sum()); err != ErrDecrypt {
		t.Errorf("poisoned sum: %v", err)
	}
}

func TestPacking(t *testing.T) {
	sk := testKey(t, 2048)
	pk := sk.Public()
	e := newEnc(t, sk)
	p, err := NewPacking(pk, 96)
	if err != nil {
		t.Fatal(err)
	}
	if p.Slots() != 21 {
		t.Errorf("%d slots of 96 bits in 2048 bits", p.Slots())
	}
	r := mrand.New(mrand.NewPCG(4, 4))
	sums := make([]*big.Int, p.Slots())
	for i := range sums {
		sums[i] = new(big.Int)
	}
	acc := pk.NewAccumulator()
	for row := 0; row < 30; row++ {
		vals := make([]int64, p.Slots())
		for i := range vals {
			switch (row + i) % 4 {
			case 0:
				vals[i] = -1 << 63
			case 1:
				vals[i] = 1<<63 - 1
			default:
				vals[i] = r.Int64() - r.Int64()/2
			}
			sums[i].Add(sums[i], big.NewInt(vals[i]))
		}
		m, err := p.Pack(vals)
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.Encrypt(m)
		if err != nil {
			t.Fatal(err)
		}
		acc.Add(c)
	}
	m, err := sk.Decrypt(acc.Sum())
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Unpack(m)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i].Cmp(sums[i]) != 0 {
			t.Errorf("slot %d: %v, want %v", i, got[i], sums[i])
		}
	}
	// Fewer values than slots leave zeros; too many are refused.
	m, _ = p.Pack([]int64{-3})
	if u, _ := p.Unpack(m); u[0].Int64() != -3 || u[1].Sign() != 0 {
		t.Errorf("short pack: %v", u[:2])
	}
	if _, err := p.Pack(make([]int64, p.Slots()+1)); err != ErrPlaintextRange {
		t.Error("too many values packed")
	}
	small, _ := NewPacking(pk, 16)
	if _, err := small.Pack([]int64{1 << 15}); err != ErrPlaintextRange {
		t.Error("value over the slot bound packed")
	}
	// A slot overflow is detected at unpacking (carry beyond the last slot).
	over := new(big.Int).Lsh(big.NewInt(1), uint(16*small.Slots()+3))
	if _, err := small.Unpack(over); err != ErrPlaintextRange {
		t.Error("overflow not detected")
	}
	if _, err := NewPacking(pk, 4); err == nil {
		t.Error("4-bit slots accepted")
	}
}

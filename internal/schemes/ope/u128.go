package ope

import (
	"math/bits"
)

// u128 is an unsigned 128-bit integer. The OPE tree works on it for both
// domains: 32-bit plaintexts with 64-bit ciphertexts, and 64-bit plaintexts
// with 128-bit ciphertexts.
type u128 struct{ hi, lo uint64 }

func u64(v uint64) u128 { return u128{lo: v} }

// pow2 returns 2^k for k < 128.
func pow2(k uint) u128 {
	if k >= 64 {
		return u128{hi: 1 << (k - 64)}
	}
	return u128{lo: 1 << k}
}

func (a u128) add(b u128) u128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, c)
	return u128{hi, lo}
}

func (a u128) sub(b u128) u128 {
	lo, c := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, c)
	return u128{hi, lo}
}

func (a u128) add64(b uint64) u128 { return a.add(u128{lo: b}) }
func (a u128) sub64(b uint64) u128 { return a.sub(u128{lo: b}) }

func (a u128) cmp(b u128) int {
	switch {
	case a.hi < b.hi:
		return -1
	case a.hi > b.hi:
		return 1
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

func (a u128) less(b u128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }
func (a u128) isZero() bool     { return a.hi == 0 && a.lo == 0 }
func (a u128) isOne() bool      { return a.hi == 0 && a.lo == 1 }

// shl shifts left by k bits; k >= 128 gives 0.
func (a u128) shl(k uint) u128 {
	switch {
	case k == 0:
		return a
	case k >= 128:
		return u128{}
	case k >= 64:
		return u128{hi: a.lo << (k - 64)}
	}
	return u128{hi: a.hi<<k | a.lo>>(64-k), lo: a.lo << k}
}

// shr shifts right by k bits; k >= 128 gives 0.
func (a u128) shr(k uint) u128 {
	switch {
	case k == 0:
		return a
	case k >= 128:
		return u128{}
	case k >= 64:
		return u128{lo: a.hi >> (k - 64)}
	}
	return u128{hi: a.hi >> k, lo: a.lo>>k | a.hi<<(64-k)}
}

// lowBits keeps the k low bits (k <= 128).
func (a u128) lowBits(k uint) u128 {
	switch {
	case k >= 128:
		return a
	case k >= 64:
		return u128{hi: a.hi & (1<<(k-64) - 1), lo: a.lo}
	}
	return u128{lo: a.lo & (1<<k - 1)}
}

// float returns a deterministic rounding of a to float64 (the high word is
// converted and scaled exactly; the sum is rounded once more).
func (a u128) float() float64 {
	if a.hi == 0 {
		return float64(a.lo)
	}
	return float64(a.hi)*0x1p64 + float64(a.lo)
}

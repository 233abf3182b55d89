//go:build !purego

package hom

import "math/bits"

type addMulVariant struct {
	name string
	fn   func(z, x []uint, y uint) uint
}

func addMulVariants() []addMulVariant {
	v := []addMulVariant{{"mulq", addMulVVWmulq}, {"dispatch", addMulVVW}}
	if useADX {
		v = append(v, addMulVariant{"adx", addMulVVWadx})
	}
	return v
}

func addMulGeneric(z, x []uint, y uint) (carry uint) {
	for i := range z {
		hi, lo := bits.Mul(x[i], y)
		lo, c := bits.Add(lo, z[i], 0)
		hi += c
		lo, c = bits.Add(lo, carry, 0)
		hi += c
		z[i] = lo
		carry = hi
	}
	return carry
}

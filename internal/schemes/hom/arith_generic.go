//go:build !amd64 || purego

package hom

import "math/bits"

// addMulVVW sets z += x*y (len(z) == len(x)) and returns the carry word.
func addMulVVW(z, x []uint, y uint) (carry uint) {
	x = x[:len(z)]
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

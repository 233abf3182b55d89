//go:build !purego

package hom

import "golang.org/x/sys/cpu"

var useADX = cpu.X86.HasADX && cpu.X86.HasBMI2

// addMulVVW sets z += x*y (len(z) == len(x)) and returns the carry word.
func addMulVVW(z, x []uint, y uint) (carry uint) {
	if useADX {
		return addMulVVWadx(z, x, y)
	}
	return addMulVVWmulq(z, x, y)
}

//go:noescape
func addMulVVWmulq(z, x []uint, y uint) (carry uint)

//go:noescape
func addMulVVWadx(z, x []uint, y uint) (carry uint)

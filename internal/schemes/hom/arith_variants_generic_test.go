//go:build !amd64 || purego

package hom

type addMulVariant struct {
	name string
	fn   func(z, x []uint, y uint) uint
}

func addMulVariants() []addMulVariant { return []addMulVariant{{"generic", addMulVVW}} }

func addMulGeneric(z, x []uint, y uint) uint { return addMulVVW(z, x, y) }

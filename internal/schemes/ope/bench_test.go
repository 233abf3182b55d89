package ope

import (
	"math/rand/v2"
	"testing"
)

// Per-core figures: run with -cpu 1. Values are random, so the cached top
// levels are warm after the first few thousand operations (as in a
// long-running proxy).

func benchValues32(n int) []int32 {
	r := rand.New(rand.NewPCG(11, 11))
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(r.Uint32())
	}
	return v
}

func benchValues64(n int) []int64 {
	r := rand.New(rand.NewPCG(12, 12))
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(r.Uint64())
	}
	return v
}

func BenchmarkOPEEncrypt32(b *testing.B) {
	c, _ := New32(testKey("bench"))
	v := benchValues32(1 << 16)
	for _, x := range v[:4096] {
		c.EncryptOrderPreserving(x)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.EncryptOrderPreserving(v[i&(len(v)-1)])
	}
}

func BenchmarkOPEEncrypt32NoCache(b *testing.B) {
	c, _ := New32(testKey("bench"), WithCacheLevels(0))
	v := benchValues32(1 << 16)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.EncryptOrderPreserving(v[i&(len(v)-1)])
	}
}

func BenchmarkOPEDecrypt32(b *testing.B) {
	c, _ := New32(testKey("bench"))
	v := benchValues32(1 << 12)
	cts := make([]uint64, len(v))
	for i, x := range v {
		cts[i] = c.EncryptOrderPreserving(x)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.DecryptOrderPreserving(cts[i&(len(cts)-1)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOPEEncrypt64(b *testing.B) {
	c, _ := New64(testKey("bench"))
	v := benchValues64(1 << 16)
	for _, x := range v[:4096] {
		c.EncryptOrderPreserving(x)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.EncryptOrderPreserving(v[i&(len(v)-1)])
	}
}

func BenchmarkOPEDecrypt64(b *testing.B) {
	c, _ := New64(testKey("bench"))
	v := benchValues64(1 << 12)
	cts := make([]Uint128, len(v))
	for i, x := range v {
		cts[i] = c.EncryptOrderPreserving(x)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.DecryptOrderPreserving(cts[i&(len(cts)-1)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOPEEncrypt64Ascending encrypts ascending keys, as a load of
// a serial-like column does: each value's path shares all but its last
// few nodes with the previous one's.
func BenchmarkOPEEncrypt64Ascending(b *testing.B) {
	c, _ := New64(testKey("bench"))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.EncryptOrderPreserving(int64(i))
	}
}

// BenchmarkOPEEncrypt64Clustered encrypts random values of a range of a
// million (amounts, dates as days, a table's keys in any order).
func BenchmarkOPEEncrypt64Clustered(b *testing.B) {
	c, _ := New64(testKey("bench"))
	r := rand.New(rand.NewPCG(13, 13))
	v := make([]int64, 1<<16)
	for i := range v {
		v[i] = int64(r.Uint64N(1_000_000))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.EncryptOrderPreserving(v[i&(len(v)-1)])
	}
}

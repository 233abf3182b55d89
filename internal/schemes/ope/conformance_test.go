package ope

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/pgonion/pgonion/internal/schemes/schemestest"
)

// The shared conformance suite, over the storage encodings: 4- or 8-byte
// big-endian plaintexts to 8- or 16-byte big-endian ciphertexts.

func int32Plaintexts() [][]byte {
	var out [][]byte
	for _, v := range []int32{math.MinInt32, math.MinInt32 + 1, -65536, -1, 0, 1, 2, 1000, 65535, math.MaxInt32 - 1, math.MaxInt32} {
		out = append(out, binary.BigEndian.AppendUint32(nil, uint32(v)))
	}
	return out
}

func TestConformance32(t *testing.T) {
	c, err := New32(make([]byte, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := New32(append(make([]byte, KeySize-1), 1))
	enc := func(c *Cipher32) func([]byte) ([]byte, error) {
		return func(p []byte) ([]byte, error) {
			return AppendCiphertext32(nil, c.EncryptOrderPreserving(int32(binary.BigEndian.Uint32(p)))), nil
		}
	}
	dec := func(c *Cipher32) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) {
			ct, err := ParseCiphertext32(b)
			if err != nil {
				return nil, err
			}
			v, err := c.DecryptOrderPreserving(ct)
			if err != nil {
				return nil, err
			}
			return binary.BigEndian.AppendUint32(nil, uint32(v)), nil
		}
	}
	schemestest.TestDeterministic(t, schemestest.Scheme{
		Encrypt: enc(c), Decrypt: dec(c), OtherDecrypt: dec(other),
		ManyToOne: true, ErrDecrypt: ErrDecrypt, Plaintexts: int32Plaintexts(),
	})
}

func TestConformance64(t *testing.T) {
	c, err := New64(make([]byte, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := New64(append(make([]byte, KeySize-1), 1))
	var pts [][]byte
	for _, v := range []int64{math.MinInt64, math.MinInt64 + 1, -1 << 40, -1, 0, 1, 1 << 40, math.MaxInt64 - 1, math.MaxInt64} {
		pts = append(pts, binary.BigEndian.AppendUint64(nil, uint64(v)))
	}
	enc := func(p []byte) ([]byte, error) {
		return c.EncryptOrderPreserving(int64(binary.BigEndian.Uint64(p))).Bytes(), nil
	}
	dec := func(c *Cipher64) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) {
			ct, err := Uint128FromBytes(b)
			if err != nil {
				return nil, err
			}
			v, err := c.DecryptOrderPreserving(ct)
			if err != nil {
				return nil, err
			}
			return binary.BigEndian.AppendUint64(nil, uint64(v)), nil
		}
	}
	schemestest.TestDeterministic(t, schemestest.Scheme{
		Encrypt: enc, Decrypt: dec(c), OtherDecrypt: dec(other),
		ManyToOne: true, ErrDecrypt: ErrDecrypt, Plaintexts: pts,
	})
}

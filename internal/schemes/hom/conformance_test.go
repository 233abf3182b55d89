package hom

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/pgonion/pgonion/internal/schemes/schemestest"
)

// TestConformance runs the shared conformance suite over int64 plaintexts
// (8 bytes, big-endian) and fixed-width ciphertext bytes. Paillier is
// probabilistic and unauthenticated (malleable by design: that is what makes
// it additive), so the suite checks randomness, round trips, that malformed
// ciphertexts never panic, and that another key does not decrypt.
func TestConformance(t *testing.T) {
	sk := testKey(t, 2048)
	other := testKey(t, 3072)
	e, err := NewEncrypter(sk, EncrypterOptions{PoolSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var pts [][]byte
	for _, v := range []int64{math.MinInt64 + 1, -1 << 40, -1, 0, 1, 42, 1 << 40, math.MaxInt64} {
		pts = append(pts, binary.BigEndian.AppendUint64(nil, uint64(v)))
	}
	dec := func(sk *PrivateKey) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) {
			c, err := sk.Public().ParseCiphertext(b)
			if err != nil {
				return nil, err
			}
			v, err := sk.DecryptInt64(c)
			if err != nil {
				return nil, err
			}
			return binary.BigEndian.AppendUint64(nil, uint64(v)), nil
		}
	}
	schemestest.TestProbabilistic(t, schemestest.Scheme{
		Encrypt: func(p []byte) ([]byte, error) {
			c := e.EncryptInt64(int64(binary.BigEndian.Uint64(p)))
			return sk.Public().AppendCiphertext(nil, c), nil
		},
		Decrypt:      dec(sk),
		OtherDecrypt: dec(other),
		ManyToOne:    true, // a flipped bit is another valid ciphertext
		Plaintexts:   pts,
		MaxBitFlips:  64,
	})
}

package hom

import (
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

var genKeys = flag.Bool("genkeys", false, "regenerate the test keys in testdata/")

var (
	keyMu    sync.Mutex
	keyCache = map[int]*PrivateKey{}
)

// testKey returns the frozen test key of the given size from testdata/
// (TEST KEYS: public in the repository, never for real data).
func testKey(t testing.TB, bits int) *PrivateKey {
	t.Helper()
	keyMu.Lock()
	defer keyMu.Unlock()
	if k := keyCache[bits]; k != nil {
		return k
	}
	path := fmt.Sprintf("testdata/paillier%d.key", bits)
	if *genKeys {
		k, err := GenerateKey(nil, bits)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := k.MarshalBinary()
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte("# TEST KEY, public: never use it for real data\n"+hex.EncodeToString(b)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	b, err := hex.DecodeString(lines[len(lines)-1])
	if err != nil {
		t.Fatal(err)
	}
	k, err := UnmarshalPrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	keyCache[bits] = k
	return k
}

func TestGenerateTestKeys(t *testing.T) {
	for _, bits := range []int{2048, 3072} {
		if k := testKey(t, bits); k.Bits() != bits {
			t.Fatalf("test key has %d bits, want %d", k.Bits(), bits)
		}
	}
}

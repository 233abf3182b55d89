package keys

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

const (
	// RootKeySize is the size, in bytes, of the root key a Deriver takes.
	RootKeySize = 32

	// MinKeySize and MaxKeySize bound the size of a derived key. The
	// upper bound is HKDF-SHA256's limit of 255 hash outputs.
	MinKeySize = 16
	MaxKeySize = 255 * sha256.Size

	// MaxColumnIDLen is the longest column id Derive accepts, and
	// MaxNameLen the longest onion or layer name.
	MaxColumnIDLen = 1<<16 - 1
	MaxNameLen     = 255

	extractSalt = "pgonion/keys/v1"
	infoLabel   = "pgonion column key v1\x00"
)

// Deriver derives keys from one root key. It is safe for concurrent use.
// It prints as "[redacted]".
type Deriver struct {
	prk []byte
}

// NewDeriver returns a Deriver for root, which must be RootKeySize bytes.
// The root key is not retained: only the HKDF pseudorandom key computed
// from it is.
func NewDeriver(root []byte) (*Deriver, error) {
	if len(root) != RootKeySize {
		return nil, fmt.Errorf("keys: invalid root key size %d, want %d bytes", len(root), RootKeySize)
	}
	prk, err := hkdf.Extract(sha256.New, root, []byte(extractSalt))
	if err != nil {
		return nil, fmt.Errorf("keys: %v", err)
	}
	return &Deriver{prk: prk}, nil
}

// Derive returns the size-byte key of layer of onion of the column with id
// columnID. columnID must be 1 to MaxColumnIDLen bytes, onion and layer 1
// to MaxNameLen bytes, and size MinKeySize to MaxKeySize. The same
// arguments always give the same key.
func (d *Deriver) Derive(columnID []byte, onion, layer string, size int) ([]byte, error) {
	info, err := Info(columnID, onion, layer, size)
	if err != nil {
		return nil, err
	}
	key, err := hkdf.Expand(sha256.New, d.prk, string(info), size)
	if err != nil {
		return nil, fmt.Errorf("keys: %v", err)
	}
	return key, nil
}

// Derive is NewDeriver(root) followed by Derive. Use a Deriver to derive
// many keys from one root key.
func Derive(root, columnID []byte, onion, layer string, size int) ([]byte, error) {
	d, err := NewDeriver(root)
	if err != nil {
		return nil, err
	}
	return d.Derive(columnID, onion, layer, size)
}

// Info returns the HKDF info string for a key, as the package documentation
// describes, or an error if an argument is out of bounds. It is exported so
// that the derivation can be reproduced and audited independently.
func Info(columnID []byte, onion, layer string, size int) ([]byte, error) {
	switch {
	case len(columnID) == 0 || len(columnID) > MaxColumnIDLen:
		return nil, fmt.Errorf("keys: column id of %d bytes, want 1 to %d", len(columnID), MaxColumnIDLen)
	case len(onion) == 0 || len(onion) > MaxNameLen:
		return nil, fmt.Errorf("keys: onion name of %d bytes, want 1 to %d", len(onion), MaxNameLen)
	case len(layer) == 0 || len(layer) > MaxNameLen:
		return nil, fmt.Errorf("keys: layer name of %d bytes, want 1 to %d", len(layer), MaxNameLen)
	case size < MinKeySize || size > MaxKeySize:
		return nil, fmt.Errorf("keys: key size %d, want %d to %d bytes", size, MinKeySize, MaxKeySize)
	}
	info := make([]byte, 0, len(infoLabel)+2+len(columnID)+1+len(onion)+1+len(layer)+2)
	info = append(info, infoLabel...)
	info = binary.BigEndian.AppendUint16(info, uint16(len(columnID)))
	info = append(info, columnID...)
	info = append(info, byte(len(onion)))
	info = append(info, onion...)
	info = append(info, byte(len(layer)))
	info = append(info, layer...)
	info = binary.BigEndian.AppendUint16(info, uint16(size))
	return info, nil
}

// String, GoString and Format keep the derivation key out of logs.
func (d *Deriver) String() string             { return "[redacted]" }
func (d *Deriver) GoString() string           { return "[redacted]" }
func (d *Deriver) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte("[redacted]")) }

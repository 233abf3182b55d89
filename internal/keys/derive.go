// Package keys derives the per-column keys of the onions from one master
// key.
//
// Every key of every layer of every onion of every column comes from the
// master key by HKDF-SHA256 (RFC 5869):
//
//	PRK = HKDF-Extract(salt = "pgonion/keys/v1", IKM = master key)
//	key = HKDF-Expand(PRK, info, size)
//
// where info encodes the purpose unambiguously (every variable-length field
// is length-prefixed, big-endian):
//
//	"pgonion column key v1" || 0x00
//	|| uint16(len(columnID)) || columnID
//	|| uint8(len(onion))     || onion
//	|| uint8(len(layer))     || layer
//	|| uint16(size)
//
// Domain separation: keys for different columns, onions, layers or sizes
// come from different info strings and so are independent; the length
// prefixes make distinct (columnID, onion, layer, size) tuples give distinct
// info strings (("ab", "c") and ("a", "bc") differ). Including the size
// means a 32-byte key is not a prefix of the 64-byte key for the same
// purpose. The "v1" tags let a later scheme change without reusing keys.
//
// The column id is the column's stable random identifier, not its name, so
// renaming a column keeps its keys. Onion and layer are short names chosen
// by the caller, such as "eq" and "rnd", or "ord" and "ope".
//
// Anyone with the master key can derive every key; the master key must
// come from a cryptographically secure random source and never be logged.
// Derived keys are as secret as the data they protect: a layer key given to
// the server (to peel an RND layer with pgcrypto) reveals that one layer of
// that one column's onion, and nothing about other keys.
package keys

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

const (
	// MasterKeySize is the size, in bytes, of a master key.
	MasterKeySize = 32

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

// Deriver derives keys from one master key. It is safe for concurrent use.
type Deriver struct {
	prk []byte
}

// NewDeriver returns a Deriver for master, which must be MasterKeySize
// bytes. The master key is not retained: only the HKDF pseudorandom key
// computed from it is.
func NewDeriver(master []byte) (*Deriver, error) {
	if len(master) != MasterKeySize {
		return nil, fmt.Errorf("keys: invalid master key size %d, want %d bytes", len(master), MasterKeySize)
	}
	prk, err := hkdf.Extract(sha256.New, master, []byte(extractSalt))
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

// Derive is NewDeriver(master) followed by Derive. Use a Deriver to derive
// many keys from one master key.
func Derive(master, columnID []byte, onion, layer string, size int) ([]byte, error) {
	d, err := NewDeriver(master)
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

package keys

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

const (
	// FormatVersion is the key store file format version this package
	// writes. It reads it and version 1 (a store with one root key).
	FormatVersion = 2

	// StoreIDSize is the size of a store id.
	StoreIDSize = 16

	// MaxSecretNameLen is the longest secret name, MaxSecretSize the
	// largest secret value, and MaxSecrets the most secrets a store holds.
	MaxSecretNameLen = 64
	MaxSecretSize    = 1 << 20
	MaxSecrets       = 1024

	storeMagic    = "pgonion-keystore" // 16 bytes
	kdfHKDFSHA256 = 1
	aeadAES256GCM = 1
	saltSize      = 32
	nonceSize     = 12
	tagSize       = 16

	// Header layout (see the package documentation).
	offVersion = 16
	offKDF     = 18
	offAEAD    = 19
	offID      = 20
	offCreated = 36
	offWrapped = 44
	offSalt    = 52
	offNonce   = 84
	offLength  = 96
	headerSize = 100

	maxCiphertext = 16 << 20
	minCiphertext = RootKeySize + 2 + tagSize

	// MaxRootGenerations bounds the root keys a store keeps: the current
	// one and those not retired yet.
	MaxRootGenerations = 1 << 10

	kekInfo = "pgonion keystore kek v1"
)

var (
	// ErrCorrupt is wrapped by the errors for a file that is not a key
	// store, is truncated, or has an unsupported format version.
	ErrCorrupt = errors.New("corrupt key store")

	// ErrUnsupportedVersion is wrapped (besides ErrCorrupt) by the error
	// for a key store whose format version this package cannot read.
	ErrUnsupportedVersion = errors.New("unsupported key store format version")

	// ErrWrongKeyOrTampered is wrapped by the error for a key store that
	// does not authenticate under the master key given: either the key is
	// wrong, or the file was modified. Authenticated encryption cannot tell
	// these apart.
	ErrWrongKeyOrTampered = errors.New("wrong master key, or key store damaged or tampered with")

	// ErrSecretExists is wrapped by the error for adding a secret under a
	// name that is already taken.
	ErrSecretExists = errors.New("secret already exists")
)

// kindError is an error with an operator-facing message that wraps
// sentinel errors without printing them.
type kindError struct {
	msg   string
	kinds []error
}

func (e *kindError) Error() string   { return e.msg }
func (e *kindError) Unwrap() []error { return e.kinds }

func errorf(kinds []error, format string, a ...any) error {
	return &kindError{msg: fmt.Sprintf(format, a...), kinds: kinds}
}

var corrupt = []error{ErrCorrupt}

// StoreID identifies a key store. It is random (a version 4 UUID), so the
// metadata in the database can record which key store its ciphertexts
// belong to, and a proxy started with another store's keys can tell.
type StoreID [StoreIDSize]byte

// String returns id in the canonical UUID form, 8-4-4-4-12 lower-case hex
// digits.
func (id StoreID) String() string {
	h := hex.EncodeToString(id[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// ParseStoreID parses the form String returns (upper-case hex allowed).
func ParseStoreID(s string) (StoreID, error) {
	var id StoreID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, fmt.Errorf("keys: bad store id %q: want 8-4-4-4-12 hex digits", s)
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(id[:], []byte(h)); err != nil {
		return StoreID{}, fmt.Errorf("keys: bad store id %q: want 8-4-4-4-12 hex digits", s)
	}
	return id, nil
}

func newStoreID() StoreID {
	var id StoreID
	rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 9562 variant
	return id
}

// Header is the unencrypted header of a key store file. ReadHeader returns
// it without authenticating it; Open authenticates it as part of the file.
type Header struct {
	Version int
	StoreID StoreID
	// Created is when the store, and so its root key, was created.
	Created time.Time
	// Wrapped is when the file was last written: when it was created, or
	// last re-wrapped by RotateMaster or AddSecret.
	Wrapped time.Time
}

// Store is the content of a key store: its id, its root key and its named
// secrets. Stores are created with New, written with Create, and read with
// Open. A Store read from a file is not changed by its methods; use
// AddSecret and RotateMaster to change the file. A Store is safe for
// concurrent use by readers.
//
// Like MasterKey, a Store never prints its keys: fmt and log/slog show
// only its id and the names of its secrets.
type Store struct {
	version          int
	id               StoreID
	created, wrapped time.Time
	gen              int // the current root key generation
	root             [RootKeySize]byte
	secrets          map[string][]byte
	deriver          *Deriver
	// older holds the root keys of earlier generations, kept until
	// RetireRoot: data not re-encrypted yet still needs them.
	older map[int]*oldRoot
}

type oldRoot struct {
	root    [RootKeySize]byte
	deriver *Deriver
}

// New returns a new, unsaved store with a random id and root key, created
// now, and no secrets.
func New() *Store {
	s := &Store{
		version: FormatVersion,
		id:      newStoreID(),
		created: time.Now().UTC().Truncate(time.Second),
		secrets: map[string][]byte{},
		older:   map[int]*oldRoot{},
	}
	rand.Read(s.root[:])
	s.initDeriver()
	return s
}

func (s *Store) initDeriver() {
	s.deriver = mustDeriver(s.root[:])
	for _, o := range s.older {
		o.deriver = mustDeriver(o.root[:])
	}
}

func mustDeriver(root []byte) *Deriver {
	d, err := NewDeriver(root)
	if err != nil {
		panic(err) // impossible: the root key has the right size
	}
	return d
}

// ID returns the store's id.
func (s *Store) ID() StoreID { return s.id }

// Version returns the format version of the file the store was read from
// (FormatVersion for a new store).
func (s *Store) Version() int { return s.version }

// Created returns when the store was created (to the second, UTC).
func (s *Store) Created() time.Time { return s.created }

// Wrapped returns when the store's file was last written (to the second,
// UTC), or the zero time for a store that was never written.
func (s *Store) Wrapped() time.Time { return s.wrapped }

// Deriver returns the Deriver of the store's data keys under its current
// root key (generation Generation): the root key is its input key
// material. The master key plays no part in it, so rotating the master
// key changes no data key.
func (s *Store) Deriver() *Deriver { return s.deriver }

// Generation returns the generation of the store's current root key: 0
// for the root key the store was created with, one more at each
// RotateRoot.
func (s *Store) Generation() int { return s.gen }

// DeriverAt returns the Deriver of root key generation gen, and whether
// the store holds that root key (the current one, or an earlier one not
// retired yet).
func (s *Store) DeriverAt(gen int) (*Deriver, bool) {
	if gen == s.gen {
		return s.deriver, true
	}
	if o := s.older[gen]; o != nil {
		return o.deriver, true
	}
	return nil, false
}

// Generations returns the generations of the root keys the store holds,
// in increasing order; the last is the current one.
func (s *Store) Generations() []int {
	gens := slices.Sorted(maps.Keys(s.older))
	return append(gens, s.gen)
}

// Secret returns a copy of the secret called name, and whether it exists.
func (s *Store) Secret(name string) ([]byte, bool) {
	v, ok := s.secrets[name]
	if !ok {
		return nil, false
	}
	return bytes.Clone(v), true
}

// SecretNames returns the names of the store's secrets, sorted.
func (s Store) SecretNames() []string {
	names := make([]string, 0, len(s.secrets))
	for n := range s.secrets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// SetSecret adds the secret name with a copy of value to an unsaved store
// (one from New, before Create). Names are 1 to MaxSecretNameLen bytes of
// a-z, 0-9, '.', '_' and '-', starting with a letter or digit; values are
// at most MaxSecretSize bytes. A name that is taken is refused (the error
// wraps ErrSecretExists): a key, once stored, is never replaced, because
// data may already be encrypted under it. To add a secret to a store file,
// use AddSecret.
func (s *Store) SetSecret(name string, value []byte) error {
	if !s.wrapped.IsZero() {
		return errors.New("keys: SetSecret on a store that was read from or written to a file; use AddSecret")
	}
	return s.addSecret(name, value)
}

func (s *Store) addSecret(name string, value []byte) error {
	if err := checkSecretName(name); err != nil {
		return err
	}
	if _, ok := s.secrets[name]; ok {
		return fmt.Errorf("keys: secret %q: %w", name, ErrSecretExists)
	}
	if len(value) > MaxSecretSize {
		return fmt.Errorf("keys: secret %q of %d bytes, larger than %d", name, len(value), MaxSecretSize)
	}
	if len(s.secrets) >= MaxSecrets {
		return fmt.Errorf("keys: a store holds at most %d secrets", MaxSecrets)
	}
	if s.payloadSize()+1+len(name)+4+len(value) > maxCiphertext-tagSize {
		return fmt.Errorf("keys: secret %q would make the key store larger than %d bytes", name, maxCiphertext)
	}
	s.secrets[name] = bytes.Clone(value)
	return nil
}

func checkSecretName(name string) error {
	ok := len(name) >= 1 && len(name) <= MaxSecretNameLen
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-')
	}
	if !ok {
		return fmt.Errorf("keys: bad secret name %q: want 1 to %d of a-z 0-9 . _ -, starting with a letter or digit", name, MaxSecretNameLen)
	}
	return nil
}

// String describes the store without any key material. (String, GoString
// and Format have value receivers so that a Store value, not only a
// pointer, is printed safely.)
func (s Store) String() string {
	return fmt.Sprintf("keys.Store{id: %s, secrets: %v}", s.id, s.SecretNames())
}

// GoString is String.
func (s Store) GoString() string { return s.String() }

// Format prints String for every verb, so no verb shows key material.
func (s Store) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }

// Create writes s to a new key store file at path, wrapped under master,
// with mode 0600. It refuses to overwrite an existing file (the error
// wraps fs.ErrExist); the file appears atomically and synced to disk.
func Create(path string, master MasterKey, s *Store) error {
	if master.isZero() {
		return errors.New("keys: Create with the zero master key")
	}
	if !s.wrapped.IsZero() {
		return errors.New("keys: Create with a store that was already written to a file")
	}
	name := absPath(path)
	s.wrapped = time.Now().UTC().Truncate(time.Second)
	data := s.seal(master)
	if err := writeNew(path, data); err != nil {
		s.wrapped = time.Time{}
		if errors.Is(err, fs.ErrExist) {
			return errorf([]error{fs.ErrExist}, "key store %s already exists; refusing to overwrite it (it may hold the keys of encrypted data)", name)
		}
		return fmt.Errorf("writing key store %s: %w", name, err)
	}
	return nil
}

// Open reads the key store file at path and decrypts it with master.
// Its errors say what is wrong and what to do, and wrap:
//   - fs.ErrNotExist if there is no file;
//   - ErrCorrupt if the file is not a key store or is truncated, and also
//     ErrUnsupportedVersion if its format version is not FormatVersion;
//   - ErrWrongKeyOrTampered if it does not authenticate under master.
func Open(path string, master MasterKey) (*Store, error) {
	if master.isZero() {
		return nil, errors.New("keys: Open with the zero master key")
	}
	name := absPath(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, openError(name, err)
	}
	defer f.Close()
	return readStore(f, name, master)
}

// ReadHeader reads the header of the key store file at path, without a
// master key. The header is not authenticated until the store is opened:
// it is for diagnostics only (which store is this file?), never for
// decisions. Its errors are those of Open, except ErrWrongKeyOrTampered.
func ReadHeader(path string) (Header, error) {
	name := absPath(path)
	f, err := os.Open(path)
	if err != nil {
		return Header{}, openError(name, err)
	}
	defer f.Close()
	data, err := readFile(f, name)
	if err != nil {
		return Header{}, err
	}
	h, _, err := parseHeader(data, name)
	return h, err
}

// RotateMaster re-wraps the key store at path: it decrypts it with
// oldMaster and replaces the file, atomically, with one wrapped under
// newMaster (with a fresh salt and nonce). The store id, creation time,
// root key and secrets stay the same, so no data key changes and no data
// needs re-encryption. The new file is read back and checked before
// RotateMaster returns. Concurrent RotateMaster and AddSecret calls on one
// file are serialised with a file lock (on Unix).
//
// Copies of the file made before the rotation (backups) still open with
// oldMaster, and hold the same root key: rotation protects against a
// leaked master key only once such copies are destroyed. If a copy of the
// store and the old master key may both have leaked, the data keys
// themselves are compromised and rotating the master key does not help.
func RotateMaster(path string, oldMaster, newMaster MasterKey) error {
	if oldMaster.isZero() || newMaster.isZero() {
		return errors.New("keys: RotateMaster with the zero master key")
	}
	_, err := updateStore(path, oldMaster, newMaster, func(*Store) error { return nil })
	return err
}

// AddSecret adds the secret name with value to the key store at path,
// which must open with master, and rewrites the file atomically. It
// refuses to replace an existing secret (the error wraps ErrSecretExists).
// It returns the updated store.
func AddSecret(path string, master MasterKey, name string, value []byte) (*Store, error) {
	if master.isZero() {
		return nil, errors.New("keys: AddSecret with the zero master key")
	}
	if err := checkSecretName(name); err != nil {
		return nil, err
	}
	return updateStore(path, master, master, func(s *Store) error { return s.addSecret(name, value) })
}

// RotateRoot gives the key store at path a new, random root key, of the
// next generation, and adds the secrets (for example the new
// generation's other key pairs) in the same atomic rewrite. The former
// root key is kept: data encrypted under it still decrypts, until it is
// re-encrypted and the root key retired (RetireRoot). Secret names must
// be free, as for AddSecret. It returns the updated store.
//
// A root rotation protects data re-encrypted after it from a root key
// that leaked (with a copy of the store and its master key): once every
// column is re-encrypted and the old root key retired, that key opens
// none of the current ciphertexts. Copies of the data taken before
// (backups, WAL archives) are still under the old key.
func RotateRoot(path string, master MasterKey, secrets map[string][]byte) (*Store, error) {
	if master.isZero() {
		return nil, errors.New("keys: RotateRoot with the zero master key")
	}
	return updateStore(path, master, master, func(s *Store) error {
		if len(s.older)+1 >= MaxRootGenerations {
			return fmt.Errorf("keys: the store already keeps %d root keys; retire earlier ones first", len(s.older)+1)
		}
		for _, name := range slices.Sorted(maps.Keys(secrets)) {
			if err := s.addSecret(name, secrets[name]); err != nil {
				return err
			}
		}
		s.older[s.gen] = &oldRoot{root: s.root, deriver: s.deriver}
		s.gen++
		rand.Read(s.root[:])
		s.deriver = mustDeriver(s.root[:])
		return nil
	})
}

// RetireRoot removes the root key of generation gen from the key store at
// path, with the secrets named (those of them it holds), in one atomic
// rewrite. The current root key cannot be retired; a generation the
// store no longer holds is not an error. Data still encrypted under the
// retired key can no longer be decrypted with this store: retire a
// generation only once nothing uses it. It returns the updated store.
func RetireRoot(path string, master MasterKey, gen int, secrets ...string) (*Store, error) {
	if master.isZero() {
		return nil, errors.New("keys: RetireRoot with the zero master key")
	}
	return updateStore(path, master, master, func(s *Store) error {
		if gen == s.gen {
			return fmt.Errorf("keys: root key generation %d is the current one; it cannot be retired", gen)
		}
		if o := s.older[gen]; o != nil {
			clear(o.root[:])
			delete(s.older, gen)
		}
		for _, name := range secrets {
			if v, ok := s.secrets[name]; ok {
				clear(v)
				delete(s.secrets, name)
			}
		}
		return nil
	})
}

// updateStore opens the store at path under oldMaster while holding its lock,
// applies change, and writes it back wrapped under newMaster.
func updateStore(path string, oldMaster, newMaster MasterKey, change func(*Store) error) (*Store, error) {
	name := absPath(path)
	f, err := openLocked(path)
	if err != nil {
		return nil, openError(name, err)
	}
	defer func() {
		unlockFile(f)
		f.Close()
	}()
	s, err := readStore(f, name, oldMaster)
	if err != nil {
		return nil, err
	}
	if err := change(s); err != nil {
		return nil, err
	}
	s.wrapped = time.Now().UTC().Truncate(time.Second)
	nf, err := writeReplaceLocked(path, s.seal(newMaster))
	if err != nil {
		return nil, fmt.Errorf("rewriting key store %s: %w", name, err)
	}
	defer func() {
		unlockFile(nf)
		nf.Close()
	}()
	back, err := Open(path, newMaster)
	if err != nil {
		return nil, fmt.Errorf("the rewritten key store does not read back: %w", err)
	}
	if !back.sameContent(s) {
		return nil, fmt.Errorf("the rewritten key store %s reads back with different content; restore it from a backup", name)
	}
	return back, nil
}

// openLocked opens path and locks it, making sure that the locked file is
// still the one at path (a concurrent update may have renamed a new file
// over it while we waited for the lock).
func openLocked(path string) (*os.File, error) {
	for range 100 {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		if err := lockFile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		fi, err1 := f.Stat()
		cur, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(fi, cur) {
			return f, nil
		}
		unlockFile(f)
		f.Close()
		if err2 != nil {
			return nil, err2
		}
	}
	return nil, fmt.Errorf("locking %s: the file keeps being replaced", path)
}

func openError(name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errorf([]error{fs.ErrNotExist}, "key store %s does not exist; create one with 'proxy keys init' (but if encrypted data already exists, restore its key store from a backup instead: a new key store cannot decrypt it)", name)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("cannot read key store %s: %w", name, err)
}

func readFile(f *os.File, name string) ([]byte, error) {
	data, tooBig, err := readAllLimit(f, headerSize+maxCiphertext)
	if err != nil {
		return nil, fmt.Errorf("cannot read key store %s: %w", name, err)
	}
	if tooBig {
		return nil, errorf(corrupt, "%s is not a pgonion key store (it is larger than %d bytes)", name, headerSize+maxCiphertext)
	}
	return data, nil
}

func readStore(f *os.File, name string, master MasterKey) (*Store, error) {
	data, err := readFile(f, name)
	if err != nil {
		return nil, err
	}
	return decode(data, master, name)
}

// parseHeader checks everything about data that can be checked without
// the master key, and returns the header and the ciphertext length.
func parseHeader(data []byte, name string) (Header, int, error) {
	const restore = "; restore it from a backup"
	switch {
	case len(data) == 0:
		return Header{}, 0, errorf(corrupt, "key store %s is empty%s", name, restore)
	case len(data) < len(storeMagic) && strings.HasPrefix(storeMagic, string(data)),
		len(data) >= len(storeMagic) && len(data) < headerSize && string(data[:len(storeMagic)]) == storeMagic:
		return Header{}, 0, errorf(corrupt, "key store %s is truncated (%d bytes, shorter than its %d-byte header)%s", name, len(data), headerSize, restore)
	case len(data) < len(storeMagic) || string(data[:len(storeMagic)]) != storeMagic:
		return Header{}, 0, errorf(corrupt, "%s is not a pgonion key store (it does not start with %q)", name, storeMagic)
	}
	h := Header{
		Version: int(binary.BigEndian.Uint16(data[offVersion:])),
		Created: time.Unix(int64(binary.BigEndian.Uint64(data[offCreated:])), 0).UTC(),
		Wrapped: time.Unix(int64(binary.BigEndian.Uint64(data[offWrapped:])), 0).UTC(),
	}
	copy(h.StoreID[:], data[offID:])
	if h.Version != FormatVersion && h.Version != 1 {
		advice := "if a newer pgonion wrote it, use that; otherwise the file is damaged: restore it from a backup"
		if h.Version < 1 {
			advice = "the file is damaged: restore it from a backup"
		}
		return Header{}, 0, errorf([]error{ErrCorrupt, ErrUnsupportedVersion},
			"key store %s has format version %d, which this pgonion cannot read (it reads versions 1 to %d); %s", name, h.Version, FormatVersion, advice)
	}
	if data[offKDF] != kdfHKDFSHA256 || data[offAEAD] != aeadAES256GCM {
		return Header{}, 0, errorf(corrupt, "key store %s is corrupt (unknown key derivation %d or cipher %d)%s", name, data[offKDF], data[offAEAD], restore)
	}
	n := int(binary.BigEndian.Uint32(data[offLength:]))
	switch {
	case n < minCiphertext || n > maxCiphertext:
		return Header{}, 0, errorf(corrupt, "key store %s is corrupt (invalid length %d in its header)%s", name, n, restore)
	case len(data) < headerSize+n:
		return Header{}, 0, errorf(corrupt, "key store %s is truncated (%d of %d bytes)%s", name, len(data), headerSize+n, restore)
	case len(data) > headerSize+n:
		return Header{}, 0, errorf(corrupt, "key store %s is corrupt (%d unexpected bytes after its end)%s", name, len(data)-headerSize-n, restore)
	}
	return h, n, nil
}

// decode parses and decrypts a key store file's content.
func decode(data []byte, master MasterKey, name string) (*Store, error) {
	h, _, err := parseHeader(data, name)
	if err != nil {
		return nil, err
	}
	aead := newAEAD(master, data[offSalt:offSalt+saltSize])
	payload, err := aead.Open(nil, data[offNonce:offNonce+nonceSize], data[headerSize:], data[:headerSize])
	if err != nil {
		return nil, errorf([]error{ErrWrongKeyOrTampered},
			"cannot open key store %s: wrong master key, or the file was damaged or tampered with (the two cannot be told apart); use the master key the store was created or last rotated with, and if that is the one in use, restore the key store from a backup", name)
	}
	defer clear(payload)
	s := &Store{version: h.Version, id: h.StoreID, created: h.Created, wrapped: h.Wrapped, older: map[int]*oldRoot{}}
	if err := s.parsePayload(payload, h.Version); err != nil {
		return nil, errorf(corrupt, "key store %s is corrupt (its authenticated content is malformed: %v); restore it from a backup", name, err)
	}
	s.initDeriver()
	return s, nil
}

// newAEAD returns AES-256-GCM under the key-encryption key derived from
// master and salt.
func newAEAD(master MasterKey, salt []byte) cipher.AEAD {
	kek, err := hkdf.Key(sha256.New, master.b[:], salt, kekInfo, 32)
	if err != nil {
		panic(err) // impossible: 32 bytes is far below HKDF-SHA256's limit
	}
	defer clear(kek)
	block, err := aes.NewCipher(kek)
	if err != nil {
		panic(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return aead
}

// seal returns the file content of s wrapped under master, with a fresh
// random salt and nonce.
func (s *Store) seal(master MasterKey) []byte {
	payload := s.payload()
	defer clear(payload)
	hdr := make([]byte, headerSize)
	copy(hdr, storeMagic)
	binary.BigEndian.PutUint16(hdr[offVersion:], FormatVersion)
	hdr[offKDF] = kdfHKDFSHA256
	hdr[offAEAD] = aeadAES256GCM
	copy(hdr[offID:], s.id[:])
	binary.BigEndian.PutUint64(hdr[offCreated:], uint64(s.created.Unix()))
	binary.BigEndian.PutUint64(hdr[offWrapped:], uint64(s.wrapped.Unix()))
	rand.Read(hdr[offSalt : offSalt+saltSize])
	rand.Read(hdr[offNonce : offNonce+nonceSize])
	binary.BigEndian.PutUint32(hdr[offLength:], uint32(len(payload)+tagSize))
	// The key-encryption key is new for every file (fresh salt), so the
	// random nonce is never reused under one key.
	aead := newAEAD(master, hdr[offSalt:offSalt+saltSize])
	out := make([]byte, headerSize, headerSize+len(payload)+tagSize)
	copy(out, hdr)
	return aead.Seal(out, hdr[offNonce:offNonce+nonceSize], payload, hdr)
}

func (s *Store) payloadSize() int {
	n := 4 + RootKeySize + 2 + len(s.older)*(4+RootKeySize) + 2
	for name, v := range s.secrets {
		n += 1 + len(name) + 4 + len(v)
	}
	return n
}

// payload encodes the secret content in format FormatVersion (see the
// package documentation).
func (s *Store) payload() []byte {
	p := make([]byte, 0, s.payloadSize())
	p = binary.BigEndian.AppendUint32(p, uint32(s.gen))
	p = append(p, s.root[:]...)
	p = binary.BigEndian.AppendUint16(p, uint16(len(s.older)))
	for _, g := range slices.Sorted(maps.Keys(s.older)) {
		p = binary.BigEndian.AppendUint32(p, uint32(g))
		p = append(p, s.older[g].root[:]...)
	}
	p = binary.BigEndian.AppendUint16(p, uint16(len(s.secrets)))
	for _, name := range s.SecretNames() {
		v := s.secrets[name]
		p = append(p, byte(len(name)))
		p = append(p, name...)
		p = binary.BigEndian.AppendUint32(p, uint32(len(v)))
		p = append(p, v...)
	}
	return p
}

// parsePayload decodes the payload of a file of format version: version
// 1 holds one root key, of generation 0.
func (s *Store) parsePayload(p []byte, version int) error {
	if version >= 2 {
		if len(p) < 4+RootKeySize+2 {
			return errors.New("too short")
		}
		gen := binary.BigEndian.Uint32(p)
		copy(s.root[:], p[4:])
		n := int(binary.BigEndian.Uint16(p[4+RootKeySize:]))
		p = p[4+RootKeySize+2:]
		if n >= MaxRootGenerations || gen >= 1<<31 {
			return fmt.Errorf("%d earlier root keys, generation %d", n, gen)
		}
		s.gen = int(gen)
		prev := -1
		for i := range n {
			if len(p) < 4+RootKeySize {
				return fmt.Errorf("earlier root key %d is truncated", i)
			}
			g := int(binary.BigEndian.Uint32(p))
			if g <= prev || g >= s.gen {
				return fmt.Errorf("earlier root key generation %d is out of order", g)
			}
			prev = g
			o := &oldRoot{}
			copy(o.root[:], p[4:])
			s.older[g] = o
			p = p[4+RootKeySize:]
		}
	} else {
		if len(p) < RootKeySize {
			return errors.New("too short")
		}
		copy(s.root[:], p)
		p = p[RootKeySize:]
	}
	if len(p) < 2 {
		return errors.New("too short")
	}
	count := int(binary.BigEndian.Uint16(p))
	p = p[2:]
	if count > MaxSecrets {
		return fmt.Errorf("%d secrets", count)
	}
	s.secrets = make(map[string][]byte, count)
	prev := ""
	for i := range count {
		if len(p) < 1 || len(p) < 1+int(p[0])+4 {
			return fmt.Errorf("secret %d is truncated", i)
		}
		name := string(p[1 : 1+int(p[0])])
		p = p[1+len(name):]
		if err := checkSecretName(name); err != nil {
			return fmt.Errorf("secret %d has a bad name", i)
		}
		if i > 0 && name <= prev {
			return fmt.Errorf("secret %q is out of order or repeated", name)
		}
		prev = name
		n := binary.BigEndian.Uint32(p)
		p = p[4:]
		if n > MaxSecretSize || int(n) > len(p) {
			return fmt.Errorf("secret %q is truncated or too large", name)
		}
		s.secrets[name] = bytes.Clone(p[:n])
		p = p[n:]
	}
	if len(p) != 0 {
		return fmt.Errorf("%d bytes after the last secret", len(p))
	}
	return nil
}

// sameContent reports whether s and o have the same id, creation time,
// root key and secrets.
func (s *Store) sameContent(o *Store) bool {
	if s.id != o.id || !s.created.Equal(o.created) || s.gen != o.gen || subtle.ConstantTimeCompare(s.root[:], o.root[:]) != 1 ||
		len(s.secrets) != len(o.secrets) || len(s.older) != len(o.older) {
		return false
	}
	for g, r := range s.older {
		q, ok := o.older[g]
		if !ok || subtle.ConstantTimeCompare(r.root[:], q.root[:]) != 1 {
			return false
		}
	}
	for name, v := range s.secrets {
		w, ok := o.secrets[name]
		if !ok || subtle.ConstantTimeCompare(v, w) != 1 {
			return false
		}
	}
	return true
}

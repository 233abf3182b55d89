package keys

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

const (
	// MasterKeyEnv is the environment variable that may hold the master
	// key, in the text form of MasterKey.Encode.
	MasterKeyEnv = "PGONION_MASTER_KEY"

	// MasterKeyPrefix starts the text form of a master key. It makes a
	// master key recognisable and keeps it from being mistaken for (or
	// mixed up with) any other secret or random string.
	MasterKeyPrefix = "pgonion-master-v1:"

	// maxMasterKeyFile bounds how much of a master key file is read: the
	// text form is 62 bytes, and anything much longer is not a master key.
	maxMasterKeyFile = 4096

	redacted = "[redacted]"
)

// ErrMasterKeyFilePermissions is wrapped by the error LoadMasterKey
// returns for a master key file that others than its owner may read, or
// that the current user does not own.
var ErrMasterKeyFilePermissions = errors.New("insecure master key file")

// MasterKeySize is the size, in bytes, of a master key.
const MasterKeySize = 32

// MasterKey is the key that wraps a key store (see Store). It is a value
// type; the zero MasterKey is not a valid key and is refused everywhere.
//
// A MasterKey never prints itself: fmt (every verb, including %#v and %x),
// String, GoString and log/slog all show "[redacted]", so it cannot leak
// through a log line or an error message by accident. Encode is the one
// deliberate way to get the key out, to write it to a master key file.
type MasterKey struct {
	b [MasterKeySize]byte
}

// GenerateMasterKey returns a new master key from crypto/rand.
func GenerateMasterKey() MasterKey {
	var k MasterKey
	rand.Read(k.b[:]) // never fails (crypto/rand aborts the program instead)
	return k
}

// ParseMasterKey parses the text form of a master key: MasterKeyPrefix
// followed by the unpadded base64url encoding (RFC 4648 section 5) of its
// MasterKeySize bytes. Surrounding white space is ignored. Error messages
// never contain the text.
func ParseMasterKey(text string) (MasterKey, error) {
	var k MasterKey
	text = strings.TrimSpace(text)
	body, ok := strings.CutPrefix(text, MasterKeyPrefix)
	want := base64.RawURLEncoding.EncodedLen(MasterKeySize)
	switch {
	case text == "":
		return k, errors.New("it is empty")
	case !ok:
		return k, fmt.Errorf("it does not start with %q; a master key is %q followed by %d base64url characters, as 'proxy keys init' writes it", MasterKeyPrefix, MasterKeyPrefix, want)
	case len(body) != want:
		return k, fmt.Errorf("it has %d characters after %q, want %d base64url characters", len(body), MasterKeyPrefix, want)
	}
	// The decoder skips '\r' and '\n'; a key has neither inside it.
	if strings.ContainsAny(body, "\r\n") {
		return k, errors.New("it has a line break inside the key")
	}
	n, err := base64.RawURLEncoding.Strict().Decode(k.b[:], []byte(body))
	if err != nil || n != MasterKeySize {
		return MasterKey{}, fmt.Errorf("it is not valid unpadded base64url after %q", MasterKeyPrefix)
	}
	if k.isZero() {
		return MasterKey{}, errors.New("it is all zero bytes, which is not a random key")
	}
	return k, nil
}

// LoadMasterKey returns the master key from file, or, if file is empty,
// from envValue, the value of the environment variable MasterKeyEnv.
// Exactly one of them must be non-empty.
//
// The file must be a regular file (a symbolic link to one is followed),
// owned by the current user and readable by its owner only (mode 0600 or
// stricter): a group- or world-readable master key file is refused with an
// error wrapping ErrMasterKeyFilePermissions that says how to fix it.
// A missing file gives an error wrapping fs.ErrNotExist.
//
// Errors name the source (the file or the variable) but never contain the
// key or any part of the file's content.
func LoadMasterKey(file, envValue string) (MasterKey, error) {
	switch {
	case file != "" && envValue != "":
		return MasterKey{}, fmt.Errorf("master key: both a master key file (%s) and %s are given; use one of them", file, MasterKeyEnv)
	case file == "" && envValue == "":
		return MasterKey{}, fmt.Errorf("no master key: give a master key file or set %s", MasterKeyEnv)
	case envValue != "":
		k, err := ParseMasterKey(envValue)
		if err != nil {
			return MasterKey{}, fmt.Errorf("master key in %s is malformed: %v", MasterKeyEnv, err)
		}
		return k, nil
	}
	name := absPath(file)
	notRegular := func(fi fs.FileInfo) error {
		return fmt.Errorf("master key file %s is not a regular file (%v)", name, fi.Mode().Type())
	}
	// Stat before opening: opening a named pipe would block.
	fi, err := os.Stat(file)
	if err == nil && !fi.Mode().IsRegular() {
		return MasterKey{}, notRegular(fi)
	}
	var f *os.File
	if err == nil {
		f, err = os.Open(file)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return MasterKey{}, fmt.Errorf("master key file %s: %w", name, fs.ErrNotExist)
		}
		return MasterKey{}, fmt.Errorf("master key file: %w", err)
	}
	defer f.Close()
	// Check what was opened, which may differ from what was stat'ed.
	if fi, err = f.Stat(); err != nil {
		return MasterKey{}, fmt.Errorf("master key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return MasterKey{}, notRegular(fi)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return MasterKey{}, fmt.Errorf("%w: %s has mode %04o, so others than its owner can read it; make it private with: chmod 600 %s",
			ErrMasterKeyFilePermissions, name, perm, shellQuote(name))
	}
	if err := checkOwner(fi, name); err != nil {
		return MasterKey{}, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxMasterKeyFile+1))
	if err != nil {
		return MasterKey{}, fmt.Errorf("master key file: %w", err)
	}
	if len(data) > maxMasterKeyFile {
		return MasterKey{}, fmt.Errorf("master key file %s is malformed: it is longer than %d bytes", name, maxMasterKeyFile)
	}
	k, err := ParseMasterKey(string(data))
	clear(data)
	if err != nil {
		return MasterKey{}, fmt.Errorf("master key file %s is malformed: %v", name, err)
	}
	return k, nil
}

// WriteMasterKeyFile writes k in its text form (and a newline) to a new
// file at path with mode 0600. It refuses to overwrite an existing file
// (the error wraps fs.ErrExist). The file appears atomically, complete and
// synced to disk, or not at all.
func WriteMasterKeyFile(path string, k MasterKey) error {
	if k.isZero() {
		return errors.New("refusing to write the zero master key")
	}
	text := []byte(k.Encode() + "\n")
	defer clear(text)
	if err := writeNew(path, text); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("master key file %s already exists; refusing to overwrite it: %w", absPath(path), fs.ErrExist)
		}
		return fmt.Errorf("writing master key file: %w", err)
	}
	return nil
}

// Encode returns the text form of k: MasterKeyPrefix followed by the
// unpadded base64url encoding of its bytes. It is the only method that
// reveals the key; use it only to store the key.
func (k MasterKey) Encode() string {
	return MasterKeyPrefix + base64.RawURLEncoding.EncodeToString(k.b[:])
}

// Equal reports, in constant time, whether k and o are the same key.
func (k MasterKey) Equal(o MasterKey) bool {
	return subtle.ConstantTimeCompare(k.b[:], o.b[:]) == 1
}

func (k MasterKey) isZero() bool { return k.Equal(MasterKey{}) }

// String returns "[redacted]".
func (MasterKey) String() string { return redacted }

// GoString returns "[redacted]".
func (MasterKey) GoString() string { return redacted }

// Format prints "[redacted]" for every verb.
func (MasterKey) Format(f fmt.State, _ rune) { io.WriteString(f, redacted) }

// LogValue makes log/slog print "[redacted]".
func (MasterKey) LogValue() slog.Value { return slog.StringValue(redacted) }

// absPath returns path made absolute, for messages that must say which
// file is meant whatever the working directory; path itself if that fails.
func absPath(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}

// shellQuote quotes s for a POSIX shell when it needs quoting, so that a
// command in a hint can be pasted as it is.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

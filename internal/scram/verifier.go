// Package scram implements the server side of SCRAM-SHA-256 (RFC 5802,
// RFC 7677) as PostgreSQL uses it, and the verifier format PostgreSQL stores
// in pg_authid.rolpassword:
//
//	SCRAM-SHA-256$<iterations>:<salt base64>$<StoredKey base64>:<ServerKey base64>
//
// A verifier lets the proxy check a client's password proof without knowing
// the password. Channel binding (SCRAM-SHA-256-PLUS) is not offered.
package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/text/secure/precis"
)

// DefaultIterations is PostgreSQL's default scram_iterations.
const DefaultIterations = 4096

// Verifier is what the server stores for one user.
type Verifier struct {
	Iterations int
	Salt       []byte
	StoredKey  []byte // H(ClientKey)
	ServerKey  []byte
}

// NewVerifier derives a verifier from a password with a random 16-byte salt.
func NewVerifier(password string, iterations int) (*Verifier, error) {
	if iterations < 1 {
		return nil, fmt.Errorf("scram: iterations must be positive, got %d", iterations)
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	return verifierFromSalt(password, salt, iterations)
}

func verifierFromSalt(password string, salt []byte, iterations int) (*Verifier, error) {
	salted, err := pbkdf2.Key(sha256.New, normalize(password), salt, iterations, sha256.Size)
	if err != nil {
		return nil, err
	}
	clientKey := mac(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	return &Verifier{
		Iterations: iterations,
		Salt:       salt,
		StoredKey:  stored[:],
		ServerKey:  mac(salted, "Server Key"),
	}, nil
}

// normalize applies SASLprep the way PostgreSQL and libpq do: a password
// that SASLprep rejects is used as is.
func normalize(password string) string {
	if p, err := precis.OpaqueString.String(password); err == nil {
		return p
	}
	return password
}

// String returns the verifier in PostgreSQL's rolpassword format.
func (v *Verifier) String() string {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", v.Iterations, b64(v.Salt), b64(v.StoredKey), b64(v.ServerKey))
}

// ParseVerifier parses PostgreSQL's rolpassword format.
func ParseVerifier(s string) (*Verifier, error) {
	bad := errors.New("scram: malformed verifier, want SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>")
	rest, ok := strings.CutPrefix(s, "SCRAM-SHA-256$")
	if !ok {
		return nil, bad
	}
	params, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return nil, bad
	}
	iterS, saltS, ok1 := strings.Cut(params, ":")
	storedS, serverS, ok2 := strings.Cut(keys, ":")
	if !ok1 || !ok2 {
		return nil, bad
	}
	iter, err := strconv.Atoi(iterS)
	if err != nil || iter < 1 {
		return nil, bad
	}
	dec := base64.StdEncoding.DecodeString
	salt, err1 := dec(saltS)
	stored, err2 := dec(storedS)
	server, err3 := dec(serverS)
	if err1 != nil || err2 != nil || err3 != nil || len(salt) == 0 ||
		len(stored) != sha256.Size || len(server) != sha256.Size {
		return nil, bad
	}
	return &Verifier{Iterations: iter, Salt: salt, StoredKey: stored, ServerKey: server}, nil
}

func mac(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

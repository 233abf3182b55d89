package scram

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strings"
)

// Mechanism is the SASL mechanism name the server offers.
const Mechanism = "SCRAM-SHA-256"

// ErrAuthFailed is returned for every failed authentication, whatever the
// cause (unknown user, wrong password, tampered nonce), so that a client
// learns nothing about which check failed.
var ErrAuthFailed = errors.New("scram: authentication failed")

// ErrProtocol is returned for messages that do not follow RFC 5802.
var ErrProtocol = errors.New("scram: protocol violation")

// Conversation is the server side of one SCRAM-SHA-256 exchange:
//
//	first, err := c.First(clientFirst)   // send as AuthenticationSASLContinue
//	final, err := c.Final(clientFinal)   // send as AuthenticationSASLFinal
//
// A nil verifier runs a mock exchange that always fails at Final, so that
// unknown users cannot be told apart from wrong passwords.
type Conversation struct {
	v               *Verifier
	clientFirstBare string
	serverFirst     string
	nonce           string
	gs2Header       string
	step            int
	serverNonce     func() (string, error) // tests replace it
}

// NewConversation starts an exchange against v (nil for an unknown user;
// mockSalt then provides a stable fake salt).
func NewConversation(v *Verifier, mockSalt []byte) *Conversation {
	if v == nil {
		v = &Verifier{Iterations: DefaultIterations, Salt: mockSalt}
	}
	return &Conversation{v: v}
}

// First handles client-first-message and returns server-first-message.
func (c *Conversation) First(clientFirst []byte) ([]byte, error) {
	if c.step != 0 {
		return nil, ErrProtocol
	}
	c.step = 1
	msg := string(clientFirst)
	// gs2-header: cbind-flag "," [authzid] ","
	var cbind string
	switch {
	case strings.HasPrefix(msg, "n,"), strings.HasPrefix(msg, "y,"):
		cbind = msg[:1]
	default: // "p=..." asks for channel binding, which we did not offer.
		return nil, ErrProtocol
	}
	rest := msg[2:]
	authzid, bare, ok := strings.Cut(rest, ",")
	if !ok || (authzid != "" && !strings.HasPrefix(authzid, "a=")) {
		return nil, ErrProtocol
	}
	c.gs2Header = cbind + "," + authzid + ","
	c.clientFirstBare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, ErrProtocol
	}
	clientNonce := attrs[1][2:]
	if clientNonce == "" || strings.ContainsAny(clientNonce, ",") {
		return nil, ErrProtocol
	}
	gen := c.serverNonce
	if gen == nil {
		gen = randomNonce
	}
	sn, err := gen()
	if err != nil {
		return nil, err
	}
	c.nonce = clientNonce + sn
	c.serverFirst = "r=" + c.nonce + ",s=" + base64.StdEncoding.EncodeToString(c.v.Salt) +
		",i=" + itoa(c.v.Iterations)
	return []byte(c.serverFirst), nil
}

// Final handles client-final-message and returns server-final-message. It
// returns ErrAuthFailed when the proof does not verify.
func (c *Conversation) Final(clientFinal []byte) ([]byte, error) {
	if c.step != 1 {
		return nil, ErrProtocol
	}
	c.step = 2
	msg := string(clientFinal)
	withoutProof, proofAttr, ok := cutLast(msg, ",p=")
	if !ok {
		return nil, ErrProtocol
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, ErrProtocol
	}
	cbind, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil || string(cbind) != c.gs2Header {
		return nil, ErrAuthFailed
	}
	if attrs[1][2:] != c.nonce {
		return nil, ErrAuthFailed
	}
	proof, err := base64.StdEncoding.DecodeString(proofAttr)
	if err != nil || len(proof) != sha256.Size {
		return nil, ErrAuthFailed
	}
	authMessage := c.clientFirstBare + "," + c.serverFirst + "," + withoutProof
	if c.v.StoredKey == nil { // mock exchange for an unknown user
		return nil, ErrAuthFailed
	}
	clientSig := mac(c.v.StoredKey, authMessage)
	clientKey := make([]byte, sha256.Size)
	for i := range clientKey {
		clientKey[i] = proof[i] ^ clientSig[i]
	}
	stored := sha256.Sum256(clientKey)
	if subtle.ConstantTimeCompare(stored[:], c.v.StoredKey) != 1 {
		return nil, ErrAuthFailed
	}
	serverSig := mac(c.v.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), nil
}

func randomNonce() (string, error) {
	var raw [18]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(raw[:]), nil
}

// MockSalt derives a stable fake salt for an unknown user from a server
// secret, as PostgreSQL does, so repeated attempts see the same salt.
func MockSalt(secret []byte, user string) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(user))
	return h.Sum(nil)[:16]
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

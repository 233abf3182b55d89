package scram

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// rfc7677 is the SCRAM-SHA-256 example exchange of RFC 7677, section 3.
var rfc7677 = struct {
	password, salt, clientFirst, serverNonce, serverFirst, clientFinal, serverFinal string
	iterations                                                                      int
}{
	password:    "pencil",
	salt:        "W22ZaJ0SNY7soEsUEjb6gQ==",
	iterations:  4096,
	clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
	serverNonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
	serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
	clientFinal: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
	serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}

func rfcConversation(t *testing.T) *Conversation {
	t.Helper()
	salt, _ := base64.StdEncoding.DecodeString(rfc7677.salt)
	v, err := verifierFromSalt(rfc7677.password, salt, rfc7677.iterations)
	if err != nil {
		t.Fatal(err)
	}
	c := NewConversation(v, nil)
	c.serverNonce = func() (string, error) { return rfc7677.serverNonce, nil }
	return c
}

func TestRFC7677Vector(t *testing.T) {
	c := rfcConversation(t)
	first, err := c.First([]byte(rfc7677.clientFirst))
	if err != nil || string(first) != rfc7677.serverFirst {
		t.Fatalf("First = %q, %v; want %q", first, err, rfc7677.serverFirst)
	}
	final, err := c.Final([]byte(rfc7677.clientFinal))
	if err != nil || string(final) != rfc7677.serverFinal {
		t.Fatalf("Final = %q, %v; want %q", final, err, rfc7677.serverFinal)
	}
}

func TestRejections(t *testing.T) {
	tamper := func(old, new string) string { return strings.Replace(rfc7677.clientFinal, old, new, 1) }
	for _, tc := range []struct {
		name        string
		clientFinal string
		want        error
	}{
		{"wrong proof", tamper("p=dHzb", "p=dHzc"), ErrAuthFailed},
		{"wrong nonce", tamper("r=rOpr", "r=xOpr"), ErrAuthFailed},
		{"channel binding mismatch", tamper("c=biws", "c=eSws"), ErrAuthFailed},
		{"short proof", tamper("p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", "p=AAAA"), ErrAuthFailed},
		{"no proof", "c=biws,r=x", ErrProtocol},
		{"garbage", "hello", ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rfcConversation(t)
			if _, err := c.First([]byte(rfc7677.clientFirst)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Final([]byte(tc.clientFinal)); !errors.Is(err, tc.want) {
				t.Fatalf("Final error = %v, want %v", err, tc.want)
			}
		})
	}
	for _, first := range []string{"", "p=tls-server-end-point,,n=,r=abc", "n,,r=abc", "n,,n=,r=", "x,,n=,r=abc", "n,b,n=,r=a"} {
		c := rfcConversation(t)
		if _, err := c.First([]byte(first)); !errors.Is(err, ErrProtocol) {
			t.Errorf("First(%q) error = %v, want ErrProtocol", first, err)
		}
	}
}

func TestUnknownUserMockExchangeFails(t *testing.T) {
	salt := MockSalt([]byte("secret"), "nobody")
	if !bytes.Equal(salt, MockSalt([]byte("secret"), "nobody")) || bytes.Equal(salt, MockSalt([]byte("secret"), "other")) {
		t.Fatal("mock salt is not stable per user")
	}
	c := NewConversation(nil, salt)
	first, err := c.First([]byte("n,,n=,r=abc"))
	if err != nil || !strings.Contains(string(first), base64.StdEncoding.EncodeToString(salt)) {
		t.Fatalf("First = %q, %v", first, err)
	}
	nonce := strings.TrimPrefix(strings.Split(string(first), ",")[0], "r=")
	_, err = c.Final([]byte("c=biws,r=" + nonce + ",p=" + base64.StdEncoding.EncodeToString(make([]byte, 32))))
	if !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("mock exchange error = %v, want ErrAuthFailed", err)
	}
}

func TestVerifierFormatRoundTrip(t *testing.T) {
	v, err := NewVerifier("s3cret", 1000)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseVerifier(v.String())
	if err != nil {
		t.Fatal(err)
	}
	if p.String() != v.String() {
		t.Fatalf("round trip changed %q into %q", v, p)
	}
	for _, bad := range []string{"", "md5abc", "SCRAM-SHA-256$x:AA==$AA==:AA==", "SCRAM-SHA-256$4096:AA==$AA==:AA==", "SCRAM-SHA-256$4096:AA=="} {
		if _, err := ParseVerifier(bad); err == nil {
			t.Errorf("ParseVerifier(%q) accepted", bad)
		}
	}
}

func TestParseAuthFile(t *testing.T) {
	v, _ := NewVerifier("pw", 100)
	good := "; comment\n# another\n\n\"alice\" \"plain pw\"\n\"bob\" \"" + v.String() + "\"\n\"q\"\"uote\" \"x\"\n"
	users, err := ParseAuthFile(strings.NewReader(good), "users.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 3 || users["bob"].String() != v.String() || users[`q"uote`] == nil {
		t.Fatalf("parsed %v", users)
	}
	want, _ := verifierFromSalt("plain pw", users["alice"].Salt, DefaultIterations)
	if !bytes.Equal(want.StoredKey, users["alice"].StoredKey) {
		t.Fatal("plaintext password turned into a wrong verifier")
	}
	for _, bad := range []string{
		"alice pw\n",
		"\"alice\"\n",
		"\"alice\" \"md5" + strings.Repeat("0", 32) + "\"\n",
		"\"a\" \"x\"\n\"a\" \"y\"\n",
		"\"a\" \"unterminated\n",
	} {
		if _, err := ParseAuthFile(strings.NewReader(bad), "f"); err == nil {
			t.Errorf("ParseAuthFile(%q) accepted", bad)
		}
	}
}

// FuzzConversation feeds arbitrary client messages to a conversation: it
// must never panic nor accept a proof it cannot verify.
func FuzzConversation(f *testing.F) {
	f.Add([]byte(rfc7677.clientFirst), []byte(rfc7677.clientFinal))
	f.Add([]byte("n,,n=,r=x"), []byte("c=biws,r=x,p=AAAA"))
	f.Add([]byte("y,a=u,n=u,r=abc"), []byte(""))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		v, err := verifierFromSalt("pencil", []byte("saltsaltsaltsalt"), 1)
		if err != nil {
			t.Fatal(err)
		}
		c := NewConversation(v, nil)
		if _, err := c.First(first); err != nil {
			return
		}
		if _, err := c.Final(final); err == nil {
			t.Fatalf("random proof accepted: %q %q", first, final)
		}
	})
}

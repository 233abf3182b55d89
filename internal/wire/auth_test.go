package wire_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/scram"
	"github.com/pgonion/pgonion/internal/wire"
)

func scramUsers(t testing.TB, pairs ...string) scram.Users {
	t.Helper()
	users := scram.Users{}
	for i := 0; i+1 < len(pairs); i += 2 {
		v, err := scram.NewVerifier(pairs[i+1], scram.DefaultIterations)
		if err != nil {
			t.Fatal(err)
		}
		users[pairs[i]] = v
	}
	return users
}

func connectErr(t testing.TB, dsn string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err == nil {
		var one int
		err = c.QueryRow(ctx, "SELECT 1").Scan(&one)
		c.Close(ctx)
	}
	return err
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func TestSCRAM(t *testing.T) {
	p := startProxy(t, func(c *wire.Config) {
		c.Auth = wire.AuthSCRAM
		c.Users = scramUsers(t, "alice", "correct horse", "bob", "pässwörd")
	})
	withPassword := func(user, pw string) string {
		u := p.url(user)
		return strings.Replace(u, "postgres://"+user+"@", "postgres://"+user+":"+urlEscape(pw)+"@", 1)
	}
	for _, tc := range []struct {
		name, user, password, wantCode string
	}{
		{"right password", "alice", "correct horse", ""},
		{"non-ASCII password", "bob", "pässwörd", ""},
		{"wrong password", "alice", "wrong", "28P01"},
		{"unknown user", "mallory", "correct horse", "28P01"},
		{"empty password", "alice", "", "28P01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := connectErr(t, withPassword(tc.user, tc.password))
			if tc.wantCode == "" && err != nil {
				t.Fatalf("connect: %v", err)
			}
			if tc.wantCode != "" && sqlState(err) != tc.wantCode {
				t.Fatalf("error %v, want SQLSTATE %s", err, tc.wantCode)
			}
		})
	}
	// psql with a wrong password prints PostgreSQL's message.
	out, err := runPsql(t, p, false, "-c", "SELECT 1")
	if err == nil || !strings.Contains(out, "password") {
		t.Fatalf("psql without password: %v %s", err, out)
	}
}

func urlEscape(s string) string {
	return strings.NewReplacer("%", "%25", "@", "%40", ":", "%3A", "/", "%2F", " ", "%20").Replace(s)
}

func TestTrustRefusedOnNonLoopback(t *testing.T) {
	backend, _ := pgconn.ParseConfig("postgres://x@127.0.0.1:1/db")
	srv, err := wire.NewServer(wire.Config{Backend: backend, Auth: wire.AuthTrust, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ln := fakeListener{addr: &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 5432}}
	if err := srv.Serve(ln); err == nil || !strings.Contains(err.Error(), "trust") {
		t.Fatalf("Serve on a non-loopback address with trust: %v", err)
	}
}

type fakeListener struct{ addr net.Addr }

func (f fakeListener) Accept() (net.Conn, error) { return nil, errors.New("fake listener") }
func (f fakeListener) Close() error              { return nil }
func (f fakeListener) Addr() net.Addr            { return f.addr }

// selfSigned writes a fresh self-signed certificate for 127.0.0.1 and
// returns the file names and a pool that trusts it.
func selfSigned(t testing.TB) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pgonion test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestTLS(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, func(c *wire.Config) {
		c.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		c.RequireTLS = true
		c.Auth = wire.AuthSCRAM
		c.Users = scramUsers(t, "alice", "pw")
	})
	base := strings.Replace(p.url("alice"), "alice@", "alice:pw@", 1)
	verifyFull := strings.Replace(base, "sslmode=disable", "sslmode=verify-full&sslrootcert="+certFile, 1)
	if err := connectErr(t, verifyFull); err != nil {
		t.Fatalf("verify-full with the test CA: %v", err)
	}
	// The connection really is TLS: the server tells pg_stat_ssl nothing
	// about the client side, so check with psql, which prints the cipher.
	out, err := runPsqlURL(t, strings.Replace(base, "sslmode=disable", "sslmode=require", 1), "-c", `\conninfo`)
	if err != nil || !strings.Contains(out, "SSL connection") {
		t.Fatalf("psql over TLS: %v\n%s", err, out)
	}
	if err := connectErr(t, base); err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("plaintext client accepted although TLS is required: %v", err)
	}
	// A client that does not trust the certificate must fail the handshake.
	if err := connectErr(t, strings.Replace(base, "sslmode=disable", "sslmode=verify-full", 1)); err == nil {
		t.Fatal("verify-full without the CA succeeded")
	}
}

// TestNoPlaintextAfterSSLRequest sends SSLRequest with a plaintext startup
// message pipelined behind it: the proxy must treat those bytes as the TLS
// handshake (and fail), never as a startup message.
func TestNoPlaintextAfterSSLRequest(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t)
	cert, _ := tls.LoadX509KeyPair(certFile, keyFile)
	p := startProxy(t, func(c *wire.Config) { c.TLS = &tls.Config{Certificates: []tls.Certificate{cert}} })
	conn, err := net.Dial("tcp", p.addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	msg := append([]byte{0, 0, 0, 8, 4, 210, 22, 47}, startupMessage("tester", p.backend.Database)...)
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, 1)
	if _, err := conn.Read(reply); err != nil || reply[0] != 'S' {
		t.Fatalf("SSLRequest answer %q %v", reply, err)
	}
	// Whatever comes back must not be an authentication request ('R').
	buf := make([]byte, 64)
	n, _ := conn.Read(buf)
	if n > 0 && buf[0] == 'R' {
		t.Fatalf("proxy answered pipelined plaintext with %q", buf[:n])
	}
}

func runPsqlURL(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := execCommand(ctx, pgBin(t, "psql"), append([]string{"-X", url}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

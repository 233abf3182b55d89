package wire_test

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/pgonion/pgonion/internal/embedpg"
)

// TestBackendTLS runs a server that accepts TLS and a proxy whose backend
// DSN says sslmode=verify-full: the proxy's server session must be
// encrypted, as pg_stat_ssl shows.
func TestBackendTLS(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t)
	// The server must own its key file (mode 0600).
	dir, err := os.MkdirTemp("", "pgtls-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srvCert, srvKey := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	for src, dst := range map[string]string{certFile: srvCert, keyFile: srvKey} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, f := range []string{dir, srvCert, srvKey} {
			if err := os.Chown(f, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	cluster, err := embedpg.Start(context.Background(), embedpg.Options{Settings: map[string]string{
		"ssl": "on", "ssl_cert_file": srvCert, "ssl_key_file": srvKey,
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	dsn := cluster.DSN("postgres")
	backendDSN := dsn[:len(dsn)-len("sslmode=disable")] + "sslmode=verify-full&sslrootcert=" + certFile
	p := startProxyFor(t, backendDSN, nil)

	c := p.connect(t)
	var ssl bool
	var version string
	err = c.QueryRow(context.Background(), "SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl, &version)
	if err != nil || !ssl {
		t.Fatalf("proxy's server session: ssl=%v version=%q err=%v", ssl, version, err)
	}
}

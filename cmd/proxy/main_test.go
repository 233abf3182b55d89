package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/embedpg"
	"github.com/pgonion/pgonion/internal/keys"
	"github.com/pgonion/pgonion/internal/pgtest"
	"github.com/pgonion/pgonion/internal/scram"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "proxy-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "proxy")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the proxy: %v\n%s", err, out)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	pgtest.Main(m)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// proc is a running proxy binary whose combined output is collected.
type proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	copied chan struct{} // closed when all output has been read
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// wait waits for the process to exit and for all its output.
func (p *proc) wait() error {
	err := p.cmd.Wait()
	<-p.copied
	return err
}

// started runs the binary and waits until a line of its output matches ready.
func started(t *testing.T, ready *regexp.Regexp, args ...string) *proc {
	t.Helper()
	return startedIn(t, t.TempDir(), ready, args...)
}

// startedIn is started with the working directory dir.
func startedIn(t *testing.T, dir string, ready *regexp.Regexp, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary, args...), copied: make(chan struct{})}
	p.cmd.Dir = dir
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	found := make(chan struct{})
	go func() {
		defer close(p.copied)
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if !once && ready.MatchString(sc.Text()) {
				once = true
				close(found)
			}
		}
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.wait()
		}
	})
	select {
	case <-found:
	case <-time.After(60 * time.Second):
		t.Fatalf("%v did not become ready:\n%s", args, p.output())
	}
	return p
}

func TestServeContract(t *testing.T) {
	dsn := pgtest.DSN(t)
	addr := freeAddr(t)
	p := started(t, regexp.MustCompile("proxy listening"), "serve", "--listen", addr, "--backend", dsn, "--auth", "trust",
		"--master-key-file", filepath.Join(t.TempDir(), "pgonion.master"))
	db := strings.TrimPrefix(dsn[strings.LastIndex(dsn, "/"):], "/")
	db = strings.SplitN(db, "?", 2)[0]
	url := "postgres://someone@" + addr + "/" + db + "?sslmode=disable"
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := c.QueryRow(ctx, "SELECT 6*7").Scan(&n); err != nil || n != 42 {
		t.Fatalf("query through serve: %d %v", n, err)
	}
	c.Close(ctx)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM\n%s", err, p.output())
	}
	if !strings.Contains(p.output(), "proxy stopped") {
		t.Fatalf("no orderly stop in the log:\n%s", p.output())
	}
}

func TestDemo(t *testing.T) {
	if _, err := embedpg.FindBinDir(); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := started(t, regexp.MustCompile("Press Ctrl-C"), "demo", "--listen", addr, "--log-level", "warn")
	out := p.output()
	m := regexp.MustCompile(`psql "([^"]+)"`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("demo printed no psql command:\n%s", out)
	}
	if strings.Contains(out, "warning:") {
		t.Fatalf("demo self-check or example failed:\n%s", out)
	}
	// The example: plaintext through the proxy, ciphertexts on the server.
	client := out[strings.Index(out, "Through the proxy"):strings.Index(out, "On the server")]
	server := out[strings.Index(out, "On the server"):]
	if !strings.Contains(client, "Ada Lovelace") || !strings.Contains(client, "120.50") || strings.Contains(server, "Ada Lovelace") || !strings.Contains(server, "name__eq") {
		t.Fatalf("demo example output:\n%s", out)
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, m[1])
	if err != nil {
		t.Fatal(err)
	}
	var db string
	if err := c.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil || db != "demo" {
		t.Fatalf("current_database() = %q, %v", db, err)
	}
	c.Close(ctx)
	dir := regexp.MustCompile(`data in ([^)]+)\)`).FindStringSubmatch(out)
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	if err := p.wait(); err != nil {
		t.Fatalf("demo exited with %v\n%s", err, p.output())
	}
	if dir == nil {
		t.Fatalf("demo did not say where its data is:\n%s", out)
	}
	if _, err := os.Stat(dir[1]); !os.IsNotExist(err) {
		t.Fatalf("demo left %s behind (%v)", dir[1], err)
	}
}

func TestCommandLineErrors(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{nil, 2, "Usage"},
		{[]string{"bogus"}, 2, "unknown command"},
		{[]string{"serve"}, 2, "--backend is required"},
		{[]string{"serve", "--backend", "postgres://x@127.0.0.1:1/db", "--auth", "trust"}, 1, "cannot reach the backend"},
		{[]string{"serve", "--backend", "postgres://x@127.0.0.1:1/db", "--auth", "trust", "--listen", "0.0.0.0:0"}, 2, "only on loopback"},
		{[]string{"serve", "--nope"}, 2, "hint: run 'proxy serve --help'"},
		{[]string{"serve", "--help"}, 0, "--backend"},
		{[]string{"passwd"}, 2, "exactly one USER"},
	} {
		cmd := exec.Command(binary, tc.args...)
		cmd.Dir = t.TempDir()
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != tc.code || !strings.Contains(string(out), tc.contains) {
			t.Errorf("proxy %v: exit %d, output:\n%s\nwant exit %d and %q", tc.args, cmd.ProcessState.ExitCode(), out, tc.code, tc.contains)
		}
	}
}

func TestServeRefusesTrustOffLoopback(t *testing.T) {
	dsn := pgtest.DSN(t)
	cmd := exec.Command(binary, "serve", "--backend", dsn, "--auth", "trust", "--listen", "0.0.0.0:0")
	cmd.Dir = t.TempDir()
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "only on loopback") {
		t.Fatalf("exit %d:\n%s", cmd.ProcessState.ExitCode(), out)
	}
}

func TestPasswd(t *testing.T) {
	cmd := exec.Command(binary, "passwd", "alice")
	cmd.Stdin = strings.NewReader("s3cret\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	users, err := scram.ParseAuthFile(bytes.NewReader(out), "stdout")
	if err != nil || users["alice"] == nil {
		t.Fatalf("passwd output %q does not parse: %v", out, err)
	}
	if bytes.Contains(out, []byte("s3cret")) {
		t.Fatal("passwd printed the password")
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	// --backend is checked first; set it so the log level is reached.
	cmd := exec.Command(binary, "serve", "--backend", "postgres://x@127.0.0.1:1/db")
	cmd.Env = append(os.Environ(), "PGONION_LOG_LEVEL=loud")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), `bad --log-level "loud"`) {
		t.Fatalf("environment variable not applied:\n%s", out)
	}
}

func TestMigrate(t *testing.T) {
	dsn := pgtest.DSN(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(binary, append([]string{"migrate", "--backend", dsn}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("migrate %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	nonePending := regexp.MustCompile(`(?m)^0 pending$`)
	if out := run("--check"); !strings.Contains(out, "pending") || nonePending.MatchString(out) {
		t.Fatalf("check before: %s", out)
	}
	if out := run(); !strings.Contains(out, "applied 0001_") {
		t.Fatalf("migrate: %s", out)
	}
	if out := run(); !strings.Contains(out, "up to date") {
		t.Fatalf("second migrate: %s", out)
	}
	if out := run("--check"); !nonePending.MatchString(out) {
		t.Fatalf("check after: %s", out)
	}
}

// TestServeKeyStore: the first start creates the keys, later starts reuse
// them, and a missing, corrupt or wrong key store stops the proxy before it
// opens a listener.
func TestServeKeyStore(t *testing.T) {
	dsn := pgtest.DSN(t)
	dir := t.TempDir()
	masterFile := filepath.Join(t.TempDir(), "pgonion.master")
	storeID := regexp.MustCompile(`store_id=([0-9a-f-]{36})`)

	// The master key is not created next to the key store.
	cmd := exec.Command(binary, "serve", "--listen", freeAddr(t), "--backend", dsn, "--auth", "trust")
	cmd.Dir = dir
	if out, _ := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "refusing to create the master key file") ||
		!strings.Contains(string(out), "hint:") || exists(filepath.Join(dir, "pgonion.master")) || exists(filepath.Join(dir, "pgonion.keystore")) {
		t.Fatalf("serve without --master-key-file: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}

	run := func() string {
		t.Helper()
		addr := freeAddr(t)
		p := startedIn(t, dir, regexp.MustCompile("proxy listening"), "serve", "--listen", addr, "--backend", dsn, "--auth", "trust", "--master-key-file", masterFile)
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		if err := p.wait(); err != nil {
			t.Fatalf("serve: %v\n%s", err, p.output())
		}
		return p.output()
	}
	first := run()
	if !strings.Contains(first, "created a new key store") || storeID.FindStringSubmatch(first) == nil {
		t.Fatalf("first start:\n%s", first)
	}
	for _, f := range []string{filepath.Join(dir, "pgonion.keystore"), masterFile} {
		st, err := os.Stat(f)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, st, err)
		}
	}
	second := run()
	if strings.Contains(second, "created a new key store") || storeID.FindStringSubmatch(second)[1] != storeID.FindStringSubmatch(first)[1] {
		t.Fatalf("second start did not reuse the key store:\n%s", second)
	}

	fails := func(name, want string, prepare func()) {
		t.Helper()
		prepare()
		addr := freeAddr(t)
		cmd := exec.Command(binary, "serve", "--listen", addr, "--backend", dsn, "--auth", "trust", "--master-key-file", masterFile)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), want) || strings.Contains(string(out), "proxy listening") {
			t.Fatalf("%s: exit %d:\n%s\nwant exit 1 and %q, no listener", name, cmd.ProcessState.ExitCode(), out, want)
		}
	}
	store := filepath.Join(dir, "pgonion.keystore")
	good, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	fails("missing key store", "restore that key store", func() { os.Rename(store, store+".bak") })
	if _, err := os.Stat(store); err == nil {
		t.Fatal("a new key store was created although the database holds data of another")
	}
	fails("corrupt key store", "tampered", func() {
		bad := append([]byte(nil), good...)
		bad[len(bad)-1] ^= 1
		os.WriteFile(store, bad, 0o600)
	})
	fails("wrong master key", "tampered", func() {
		os.WriteFile(store, good, 0o600)
		os.Remove(masterFile)
		c := exec.Command(binary, "keys", "init", "--keystore", filepath.Join(t.TempDir(), "x.keystore"), "--master-key-file", masterFile)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("making another master key: %v\n%s", err, out)
		}
	})
}

// TestStatus records a table in the catalog with the key store that serve
// created, then checks what `proxy status` shows, and that it refuses a
// catalog changed behind the proxy's back.
func TestStatus(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	dir := t.TempDir()
	init := exec.Command(binary, "keys", "init")
	init.Dir = dir
	if out, err := init.CombinedOutput(); err != nil {
		t.Fatalf("keys init: %v\n%s", err, out)
	}
	p := startedIn(t, dir, regexp.MustCompile("proxy listening"), "serve", "--listen", freeAddr(t), "--backend", dsn, "--auth", "trust")
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, p.output())
	}
	master, err := keys.LoadMasterKey(filepath.Join(dir, "pgonion.master"), "")
	if err != nil {
		t.Fatal(err)
	}
	store, err := keys.Open(filepath.Join(dir, "pgonion.keystore"), master)
	if err != nil {
		t.Fatal(err)
	}
	macKey, err := catalog.MACKey(store.Deriver())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = catalog.CreateTable(ctx, tx, macKey, &catalog.Table{Schema: "public", Name: "acc", Physical: "acc", Columns: []catalog.Column{
		{Position: 1, Name: "id", Type: "integer", Policy: catalog.Plain},
		{Position: 2, Name: "owner", Type: "text", Policy: catalog.Encrypted, Capabilities: []string{"eq", "search"}, Onions: map[string]string{"eq": "det", "search": "search"}},
	}})
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	status := func() (string, int) {
		cmd := exec.Command(binary, "status", "--backend", dsn)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := status()
	for _, want := range []string{store.ID().String(), "public.acc.id", "everything (stored unencrypted)", "public.acc.owner", "which rows hold equal values", "equality and frequency of the words and trigrams"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("status (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	if _, err := conn.Exec(ctx, `UPDATE pgonion.columns SET onions = '{"eq": "rnd", "search": "search"}'`); err != nil {
		t.Fatal(err)
	}
	if out, code := status(); code != 1 || !strings.Contains(out, "modified outside the proxy") {
		t.Fatalf("tampered catalog: exit %d\n%s", code, out)
	}
}

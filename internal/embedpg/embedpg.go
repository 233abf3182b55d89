// Package embedpg starts a throwaway PostgreSQL cluster from the server
// binaries installed on the machine (initdb + postgres), listening on a free
// loopback port. Tests and `proxy demo` use it as their default backend.
//
// The cluster is tuned for speed, not durability (fsync=off): never keep data
// in it that you want to survive.
//
// initdb and postgres refuse to run as root. When the current process is root,
// the cluster is created and run as the "postgres" OS user instead.
package embedpg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Options configure a cluster. The zero value is usable.
type Options struct {
	// BinDir holds initdb and postgres. Empty means: $PGBINDIR, the newest
	// /usr/lib/postgresql/*/bin, `pg_config --bindir`, then $PATH.
	BinDir string
	// Settings are extra postgres -c settings (name -> value).
	Settings map[string]string
	// StartTimeout bounds initdb plus start-up. Zero means 60 s.
	StartTimeout time.Duration
}

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	// Host and Port of the TCP listener (always loopback).
	Host string
	Port int
	// User is the superuser, who connects without a password.
	User string
	// Dir is the temporary directory holding the data directory, the
	// socket and the server log. It is removed by Stop.
	Dir string

	cmd  *exec.Cmd
	done chan error
}

// DSN returns a libpq URL for database db on the cluster.
func (c *Cluster) DSN(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(c.User),
		Host:     net.JoinHostPort(c.Host, strconv.Itoa(c.Port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// LogFile is the path of the server's log.
func (c *Cluster) LogFile() string { return filepath.Join(c.Dir, "postgres.log") }

// FindBinDir locates a directory with the PostgreSQL server binaries.
func FindBinDir() (string, error) {
	if d := os.Getenv("PGBINDIR"); d != "" {
		return d, checkBinDir(d)
	}
	if dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin"); len(dirs) > 0 {
		sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
		for _, d := range dirs {
			if checkBinDir(d) == nil {
				return d, nil
			}
		}
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := strings.TrimSpace(string(out))
		if checkBinDir(d) == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		d := filepath.Dir(p)
		if checkBinDir(d) == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries found (initdb, postgres)\n" +
		"hint: install them (Debian/Ubuntu: apt-get install postgresql) or set PGBINDIR")
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func checkBinDir(d string) error {
	for _, b := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(d, b)); err != nil {
			return fmt.Errorf("%s not found in %s", b, d)
		}
	}
	return nil
}

// Start creates and starts a new cluster. The caller must call Stop.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	bin := opts.BinDir
	if bin == "" {
		var err error
		if bin, err = FindBinDir(); err != nil {
			return nil, err
		}
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "embedpg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Host: "127.0.0.1", User: "postgres", Dir: dir}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(dir)
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("embedpg: chown %s: %w", dir, err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-U", c.User, "--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("embedpg: initdb: %w\n%s", err, out)
	}

	// A port can be taken between probing and binding; retry a few times.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		c.Port = port
		err = c.launch(ctx, bin, cred, opts.Settings)
		if err == nil {
			break
		}
		if attempt >= 4 || ctx.Err() != nil {
			return nil, err
		}
	}
	ok = true
	return c, nil
}

func (c *Cluster) launch(ctx context.Context, bin string, cred *syscall.Credential, settings map[string]string) error {
	logf, err := os.OpenFile(c.LogFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	if cred != nil {
		_ = os.Chown(c.LogFile(), int(cred.Uid), int(cred.Gid))
	}
	args := []string{
		"-D", filepath.Join(c.Dir, "data"),
		"-p", strconv.Itoa(c.Port),
		"-k", c.Dir,
		"-c", "listen_addresses=" + c.Host,
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
	}
	names := make([]string, 0, len(settings))
	for k := range settings {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		args = append(args, "-c", k+"="+settings[k])
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	// Pdeathsig stops the server if the test binary dies without Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("embedpg: start postgres: %w", err)
	}
	c.cmd = cmd
	c.done = make(chan error, 1)
	go func() { c.done <- cmd.Wait() }()

	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgconn.Connect(pctx, c.DSN("postgres")+"&connect_timeout=1")
		cancel()
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		select {
		case werr := <-c.done:
			c.cmd = nil
			return fmt.Errorf("embedpg: postgres exited during start-up: %v\n%s", werr, c.tailLog())
		case <-ctx.Done():
			c.kill()
			return fmt.Errorf("embedpg: postgres did not accept connections in time: %w\n%s", ctx.Err(), c.tailLog())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) tailLog() string {
	b, _ := os.ReadFile(c.LogFile())
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func (c *Cluster) kill() {
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	c.cmd = nil
}

// Stop shuts the server down (fast shutdown) and removes its directory.
func (c *Cluster) Stop() error {
	if c.cmd != nil {
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.done:
		case <-time.After(15 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		c.cmd = nil
	}
	return os.RemoveAll(c.Dir)
}

// serverCredential returns the credential to run initdb/postgres with: nil
// for a non-root user, the "postgres" OS user for root.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("embedpg: running as root, and initdb refuses root: %w\n"+
			"hint: create a 'postgres' OS user (installing the postgresql package does) or run as a normal user", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/embedpg"
)

// env is the benchmark's throwaway world: one PostgreSQL cluster with a
// plaintext database (queried directly) and an encrypted one (queried
// through a proxy process started from the project's own binary).
type env struct {
	work      string // scratch directory (keys, proxy log)
	cluster   *embedpg.Cluster
	proxyBin  string
	keyFlags  []string
	proxy     *exec.Cmd
	proxyArgs []string // the command line of the proxy
	proxyLog  string

	plainDSN string // the plaintext database, directly
	encDSN   string // the encrypted database, directly (the proxy's backend)
	proxyDSN string // the encrypted database, through the proxy
}

const (
	plainDB = "tpch_plain"
	encDB   = "tpch_enc"
)

// serverSettings are the settings of the throwaway cluster, shared by
// the plaintext and the encrypted database; sharedBuffers is a
// shared_buffers value ("auto": sharedBuffersAuto).
func serverSettings(sharedBuffers string) map[string]string {
	if sharedBuffers == "auto" {
		sharedBuffers = sharedBuffersAuto()
	}
	return map[string]string{"shared_buffers": sharedBuffers, "work_mem": "64MB"}
}

// sharedBuffersAuto is the usual advice for a dedicated database server,
// a quarter of the machine's memory (or of the cgroup's memory limit, if
// lower), kept between 512 MB and 8 GB (512 MB where the memory is
// unknown).
func sharedBuffersAuto() string {
	kb := memTotalKB()
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if limit, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && (kb == 0 || limit/1024 < kb) {
			kb = limit / 1024
		}
	}
	mb := kb / 4 / 1024
	return fmt.Sprintf("%dMB", min(max(mb, 512), 8192))
}

// startEnv builds the proxy, starts the cluster with settings, creates
// both databases and declares the column policy of the encrypted one.
func startEnv(ctx context.Context, root, work string, settings map[string]string, progress io.Writer) (*env, error) {
	e := &env{work: work, proxyBin: filepath.Join(work, "proxy"), proxyLog: filepath.Join(work, "proxy.log")}
	fmt.Fprintln(progress, "building the proxy...")
	build := exec.CommandContext(ctx, "go", "build", "-o", e.proxyBin, "./cmd/proxy")
	build.Dir, build.Stdout, build.Stderr = root, progress, progress
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("building the proxy: %w", err)
	}
	fmt.Fprintln(progress, "starting a throwaway PostgreSQL server...")
	c, err := embedpg.Start(ctx, embedpg.Options{Settings: settings})
	if err != nil {
		return nil, err
	}
	e.cluster = c
	admin, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		e.stop()
		return nil, err
	}
	defer admin.Close(ctx)
	for _, db := range []string{plainDB, encDB} {
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
			e.stop()
			return nil, err
		}
	}
	e.plainDSN, e.encDSN = c.DSN(plainDB), c.DSN(encDB)
	e.keyFlags = []string{"--keystore", filepath.Join(work, "tpch.keystore"), "--master-key-file", filepath.Join(work, "tpch.master")}
	if err := e.run(ctx, append([]string{"keys", "init"}, e.keyFlags...)...); err != nil {
		e.stop()
		return nil, err
	}
	fmt.Fprintln(progress, "declaring the column policy (proxy columns set)...")
	for _, t := range tables {
		for _, col := range columns(t) {
			caps, group := columnPolicy(t, col[0])
			args := []string{"columns", "set", t + "." + col[0], "--policy", "encrypted", "--capabilities", caps, "--backend", e.encDSN}
			if group != "" {
				args = append(args, "--join-group", group)
			}
			if err := e.run(ctx, append(args, e.keyFlags...)...); err != nil {
				e.stop()
				return nil, err
			}
		}
	}
	return e, e.startProxy(ctx)
}

// run runs a proxy admin command.
func (e *env) run(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, e.proxyBin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("proxy %s: %w\n%s", strings.Join(args[:2], " "), err, out)
	}
	return nil
}

// startProxy starts `proxy serve` in front of the encrypted database and
// waits until it answers.
func (e *env) startProxy(ctx context.Context) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	logf, err := os.Create(e.proxyLog)
	if err != nil {
		return err
	}
	// Split execution of the grouped queries holds hundreds of MB at SF 1:
	// no per-statement limit here.
	args := append([]string{"serve", "--listen", addr, "--auth", "trust", "--log-level", "info", "--backend", e.encDSN,
		"--max-held-memory", strconv.FormatInt(1<<40, 10)}, e.keyFlags...)
	e.proxyArgs = append([]string{e.proxyBin}, args...)
	e.proxy = exec.Command(e.proxyBin, args...)
	e.proxy.Stdout, e.proxy.Stderr = logf, logf
	if err := e.proxy.Start(); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(addr)
	e.proxyDSN = fmt.Sprintf("postgres://%s@%s:%s/%s?sslmode=disable", e.cluster.User, host, port, encDB)
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, e.proxyDSN)
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the proxy does not answer on %s: %w (log: %s)", addr, err, e.proxyLog)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the proxy and the cluster (deleting its data).
func (e *env) stop() error {
	var errs []error
	if e.proxy != nil && e.proxy.Process != nil {
		e.proxy.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- e.proxy.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			e.proxy.Process.Kill()
			<-done
		}
	}
	if e.cluster != nil {
		errs = append(errs, e.cluster.Stop())
	}
	return errors.Join(errs...)
}

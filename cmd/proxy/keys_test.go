package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pgonion/pgonion/internal/keys"
)

// keysRun runs the proxy binary in dir with the test's environment minus
// every PGONION_* variable, plus env.
func keysRun(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PGONION_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running proxy %v: %v", args, err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// want fails the test unless the command exited with code and its output
// contains every string of contains.
func wantRun(t *testing.T, what string, stdout, stderr string, code, wantCode int, contains ...string) {
	t.Helper()
	out := stdout + stderr
	if code != wantCode {
		t.Fatalf("%s: exit %d, want %d; output:\n%s", what, code, wantCode, out)
	}
	for _, s := range contains {
		if !strings.Contains(out, s) {
			t.Fatalf("%s: output does not contain %q:\n%s", what, s, out)
		}
	}
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var storeIDRe = regexp.MustCompile(`store id: +([0-9a-f-]{36})`)

func TestKeysLifecycle(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "pgonion.keystore")
	oldFile := filepath.Join(dir, "pgonion.master")
	newFile := filepath.Join(dir, "new.master")
	var outputs []string
	run := func(env []string, args ...string) (string, string, int) {
		o, e, c := keysRun(t, dir, env, args...)
		outputs = append(outputs, o, e)
		return o, e, c
	}

	// init creates both files, mode 0600, with the default names.
	o, e, c := run(nil, "keys", "init")
	wantRun(t, "init", o, e, c, 0, "created master key file "+oldFile, "created key store "+store, "Back up the master key and the key store")
	m := storeIDRe.FindStringSubmatch(o)
	if m == nil {
		t.Fatalf("init prints no store id:\n%s", o)
	}
	id := m[1]
	for _, f := range []string{store, oldFile} {
		if mode := fileMode(t, f); mode != 0o600 {
			t.Fatalf("%s has mode %04o, want 0600", f, mode)
		}
	}
	oldKey := strings.TrimSpace(string(readFile(t, oldFile)))
	if !strings.HasPrefix(oldKey, keys.MasterKeyPrefix) {
		t.Fatalf("master key file does not hold a master key")
	}
	storeBytes, masterBytes := readFile(t, store), readFile(t, oldFile)

	// A second init refuses and changes nothing.
	o, e, c = run(nil, "keys", "init")
	wantRun(t, "second init", o, e, c, 1, "already exists", "refusing to overwrite")
	if !bytes.Equal(storeBytes, readFile(t, store)) || !bytes.Equal(masterBytes, readFile(t, oldFile)) {
		t.Fatal("a refused init changed a file")
	}

	// check opens the store and prints its id, and no key.
	o, e, c = run(nil, "keys", "check")
	wantRun(t, "check", o, e, c, 0, "store id:       "+id, "format version: 2", "root key:       generation 0", "secrets:        paillier", "master key:     file "+oldFile, "ok:")

	// rotate-master generates the new master key and re-wraps the store.
	o, e, c = run(nil, "keys", "rotate-master", "--new-master-key-file", "new.master")
	wantRun(t, "rotate-master", o, e, c, 0, "generated new master key file "+newFile, "re-wrapped key store", id, "delete the old master key file "+oldFile)
	if mode := fileMode(t, newFile); mode != 0o600 {
		t.Fatalf("new master key file has mode %04o", mode)
	}
	if !bytes.Equal(masterBytes, readFile(t, oldFile)) {
		t.Fatal("rotate-master changed the old master key file")
	}
	if bytes.Equal(storeBytes, readFile(t, store)) {
		t.Fatal("rotate-master did not rewrite the store")
	}
	newKey := strings.TrimSpace(string(readFile(t, newFile)))

	o, e, c = run(nil, "keys", "check", "--master-key-file", "new.master")
	wantRun(t, "check with the new master key", o, e, c, 0, "store id:       "+id)
	o, e, c = run(nil, "keys", "check")
	wantRun(t, "check with the old master key", o, e, c, 1, "wrong master key", "cannot be told apart", "hint: the master key was read from file "+oldFile)

	// The master key from the environment; the flag from PGONION_*.
	o, e, c = run([]string{"PGONION_MASTER_KEY=" + newKey}, "keys", "check")
	wantRun(t, "check with PGONION_MASTER_KEY", o, e, c, 0, "store id:       "+id, "master key:     $PGONION_MASTER_KEY")
	o, e, c = run([]string{"PGONION_MASTER_KEY_FILE=new.master"}, "keys", "check")
	wantRun(t, "check with PGONION_MASTER_KEY_FILE", o, e, c, 0, "store id:       "+id)
	o, e, c = run([]string{"PGONION_MASTER_KEY=" + oldKey}, "keys", "check")
	wantRun(t, "check with the old key in PGONION_MASTER_KEY", o, e, c, 1, "wrong master key", "$PGONION_MASTER_KEY")

	// Rotating again to the same file, or to the key in use, is refused.
	o, e, c = run(nil, "keys", "rotate-master", "--master-key-file", "new.master", "--new-master-key-file", "new.master")
	wantRun(t, "rotate-master to the same file", o, e, c, 2, "must differ")

	// A flipped bit anywhere makes check fail with a clear message.
	rotated := readFile(t, store)
	for _, i := range []int{0, 17, 30, 60, 99, 100, len(rotated) - 1} {
		bad := bytes.Clone(rotated)
		bad[i] ^= 0x04
		if err := os.WriteFile(store, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		o, e, c = run(nil, "keys", "check", "--master-key-file", "new.master")
		if c != 1 || !regexp.MustCompile(`wrong master key, or the file was damaged or tampered with|not a pgonion key store|format version|corrupt|truncated`).MatchString(e) {
			t.Fatalf("check of a store with byte %d modified: exit %d\n%s%s", i, c, o, e)
		}
	}
	if err := os.WriteFile(store, rotated, 0o600); err != nil {
		t.Fatal(err)
	}
	o, e, c = run(nil, "keys", "check", "--master-key-file", "new.master")
	wantRun(t, "check of the restored store", o, e, c, 0, id)

	for _, out := range outputs {
		for _, k := range []string{oldKey, newKey} {
			if strings.Contains(out, strings.TrimPrefix(k, keys.MasterKeyPrefix)) {
				t.Fatalf("a master key was printed:\n%s", out)
			}
		}
	}
}

func TestKeysInitWithMasterKeyFromEnv(t *testing.T) {
	dir := t.TempDir()
	master := keys.GenerateMasterKey().Encode()
	env := []string{"PGONION_MASTER_KEY=" + master, "PGONION_KEYSTORE=env.keystore"}
	o, e, c := keysRun(t, dir, env, "keys", "init")
	wantRun(t, "init", o, e, c, 0, "from PGONION_MASTER_KEY", "created key store "+filepath.Join(dir, "env.keystore"))
	if _, err := os.Stat(filepath.Join(dir, defaultMasterKeyFile)); err == nil {
		t.Fatal("init wrote a master key file although the key came from PGONION_MASTER_KEY")
	}
	o, e, c = keysRun(t, dir, env, "keys", "check")
	wantRun(t, "check", o, e, c, 0, "store id:")
	o, e, c = keysRun(t, dir, env[1:], "keys", "check")
	wantRun(t, "check without the master key", o, e, c, 1, "master key file "+filepath.Join(dir, defaultMasterKeyFile), "does not exist", "hint:")

	// rotate-master from the environment to a file.
	o, e, c = keysRun(t, dir, env, "keys", "rotate-master", "--new-master-key-file", "rotated.master")
	wantRun(t, "rotate-master", o, e, c, 0, "the old master key in PGONION_MASTER_KEY")
	o, e, c = keysRun(t, dir, env[1:], "keys", "check", "--master-key-file", "rotated.master")
	wantRun(t, "check after rotation", o, e, c, 0, "ok:")
	if strings.Contains(o+e, strings.TrimPrefix(master, keys.MasterKeyPrefix)) {
		t.Fatal("the master key was printed")
	}
}

func TestKeysErrors(t *testing.T) {
	dir := t.TempDir()
	if o, e, c := keysRun(t, dir, nil, "keys", "init"); c != 0 {
		t.Fatalf("init: %s%s", o, e)
	}
	loose := filepath.Join(dir, "loose.master")
	if err := os.WriteFile(loose, readFile(t, filepath.Join(dir, defaultMasterKeyFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, tc := range []struct {
		name     string
		dir      string
		env      []string
		args     []string
		code     int
		contains []string
	}{
		{"no subcommand", dir, nil, []string{"keys"}, 2, []string{"missing subcommand", "hint: run 'proxy keys --help'"}},
		{"unknown subcommand", dir, nil, []string{"keys", "bogus"}, 2, []string{"unknown subcommand"}},
		{"keys help", dir, nil, []string{"keys", "--help"}, 0, []string{"init", "rotate-master", "check"}},
		{"init help", dir, nil, []string{"keys", "init", "--help"}, 0, []string{"--use-existing-master", "pgonion.keystore", "pgonion.master"}},
		{"rotate help", dir, nil, []string{"keys", "rotate-master", "--help"}, 0, []string{"--new-master-key-file"}},
		{"check help", dir, nil, []string{"keys", "check", "-h"}, 0, []string{"--keystore"}},
		{"bad flag", dir, nil, []string{"keys", "check", "--nope"}, 2, []string{"hint:"}},
		{"extra argument", dir, nil, []string{"keys", "check", "extra"}, 2, []string{"unexpected argument"}},
		{"missing store", empty, nil, []string{"keys", "check"}, 1, []string{"does not exist", "proxy keys init"}},
		{"missing store, rotate", empty, nil, []string{"keys", "rotate-master", "--new-master-key-file", "n"}, 1, []string{"does not exist"}},
		{"rotate without new file", dir, nil, []string{"keys", "rotate-master"}, 2, []string{"--new-master-key-file is required"}},
		{"insecure master key file", dir, nil, []string{"keys", "check", "--master-key-file", "loose.master"}, 1, []string{"mode 0644", "chmod 600 " + loose}},
		{"master key twice", dir, []string{"PGONION_MASTER_KEY=x"}, []string{"keys", "check", "--master-key-file", "pgonion.master"}, 2, []string{"one way only"}},
		{"empty env master key", dir, []string{"PGONION_MASTER_KEY="}, []string{"keys", "check"}, 2, []string{"set but empty"}},
		{"malformed env master key", dir, []string{"PGONION_MASTER_KEY=secret-value-123"}, []string{"keys", "check"}, 1, []string{"malformed"}},
		{"store is not a store", dir, nil, []string{"keys", "check", "--keystore", "pgonion.master"}, 1, []string{"not a pgonion key store"}},
		{"init over existing master", empty, nil, []string{"keys", "init", "--keystore", "other.keystore", "--master-key-file", filepath.Join(dir, "pgonion.master")}, 1, []string{"refusing to overwrite", "--use-existing-master"}},
		{"use-existing without file", empty, nil, []string{"keys", "init", "--use-existing-master"}, 1, []string{"does not exist"}},
		{"same file for both", empty, nil, []string{"keys", "init", "--keystore", "k", "--master-key-file", "./k"}, 2, []string{"same file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, e, c := keysRun(t, tc.dir, tc.env, tc.args...)
			wantRun(t, strings.Join(tc.args, " "), o, e, c, tc.code, tc.contains...)
			if strings.Contains(o+e, "secret-value-123") {
				t.Fatal("the value of PGONION_MASTER_KEY was printed")
			}
		})
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("failed commands left files behind: %v", ents)
	}

	// --use-existing-master creates a second store under the same key.
	o, e, c := keysRun(t, empty, nil, "keys", "init", "--keystore", "second.keystore", "--master-key-file", filepath.Join(dir, "pgonion.master"), "--use-existing-master")
	wantRun(t, "init --use-existing-master", o, e, c, 0, "existing file")
	o, e, c = keysRun(t, empty, nil, "keys", "check", "--keystore", "second.keystore", "--master-key-file", filepath.Join(dir, "pgonion.master"))
	wantRun(t, "check of the second store", o, e, c, 0, "ok:")
}

// TestKeyFlags exercises the helper serve will use, in process: the
// master key from PGONION_MASTER_KEY is removed from the environment once
// read, and errors carry hints.
func TestKeyFlags(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ks")
	master := keys.GenerateMasterKey()
	s := keys.New()
	if err := keys.Create(path, master, s); err != nil {
		t.Fatal(err)
	}
	t.Setenv(keys.MasterKeyEnv, master.Encode())
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var k keyFlags
	k.register(fs)
	if err := parseFlags(fs, []string{"--keystore", path}); err != nil {
		t.Fatal(err)
	}
	got, err := k.open()
	if err != nil {
		t.Fatal(err)
	}
	if got.ID() != s.ID() {
		t.Fatalf("opened store %s, want %s", got.ID(), s.ID())
	}
	if _, ok := os.LookupEnv(keys.MasterKeyEnv); ok {
		t.Fatalf("%s is still in the environment after it was read", keys.MasterKeyEnv)
	}
	// A second open uses the key already loaded.
	if _, err := k.open(); err != nil {
		t.Fatalf("second open: %v", err)
	}

	fs = flag.NewFlagSet("test", flag.ContinueOnError)
	k = keyFlags{}
	k.register(fs)
	if err := parseFlags(fs, []string{"--keystore", path, "--master-key-file", filepath.Join(dir, "none")}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.open(); err == nil || !strings.Contains(err.Error(), "hint:") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("open with a missing master key file: %v", err)
	}
}

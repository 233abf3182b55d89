//go:build unix

package keys

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMasterKeyFileOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	path := filepath.Join(t.TempDir(), "master")
	if err := WriteMasterKeyFile(path, GenerateMasterKey()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := LoadMasterKey(path, "")
	if !errors.Is(err, ErrMasterKeyFilePermissions) || !strings.Contains(err.Error(), "owned by user id 65534") {
		t.Fatalf("a master key file of another user: %v", err)
	}
}

// TestMasterKeyFileFIFO checks that a named pipe is refused at once,
// without blocking in open(2) for a writer.
func TestMasterKeyFileFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := LoadMasterKey(fifo, "")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("a named pipe as master key file: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LoadMasterKey blocked on a named pipe")
	}
}

//go:build unix

package keys

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a master key file that the current (effective) user
// does not own: someone else could read or replace it.
func checkOwner(fi fs.FileInfo, name string) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%w: %s is owned by user id %d, not by the user running the proxy (user id %d); give it to that user with chown, and mode 0600",
			ErrMasterKeyFilePermissions, name, st.Uid, uid)
	}
	return nil
}

// lockFile takes an exclusive advisory lock (flock) on f, waiting for it.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

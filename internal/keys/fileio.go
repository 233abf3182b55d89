package keys

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// writeNew creates the file path with mode 0600 holding data, and fails
// with an error wrapping fs.ErrExist if path exists (also as a dangling
// symbolic link). The data is written to a temporary file in the same
// directory and synced, then hard-linked to path (link(2) never replaces
// an existing name, so the creation is atomic and exclusive), and the
// directory is synced. Where the file system has no hard links, the file
// is created with O_EXCL and written in place instead: still exclusive,
// but a crash may then leave a partial file, which Open reports as
// truncated.
func writeNew(path string, data []byte) error {
	if _, err := os.Lstat(path); err == nil {
		return &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
	}
	dir := filepath.Dir(path)
	tmp, err := writeTemp(dir, filepath.Base(path), data)
	if err != nil {
		return err
	}
	err = os.Link(tmp, path)
	os.Remove(tmp)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		return err
	default:
		if err := writeExclusive(path, data); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

// writeReplaceLocked replaces the file path with data atomically: readers
// see the old or the new content, never a mix, and after a crash the file
// holds one of the two. The new file has mode 0600. It is locked (see
// lockFile) before it is renamed into place, and returned open and locked,
// so that the caller can check it before any other updater gets to it; the
// caller unlocks and closes it.
func writeReplaceLocked(path string, data []byte) (*os.File, error) {
	dir := filepath.Dir(path)
	f, err := createTemp(dir, filepath.Base(path), data)
	if err != nil {
		return nil, err
	}
	err = lockFile(f)
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		unlockFile(f)
		f.Close()
		return nil, err
	}
	return f, nil
}

// writeTemp writes data to a new temporary file with mode 0600 in dir,
// syncs and closes it, and returns its name.
func writeTemp(dir, base string, data []byte) (string, error) {
	f, err := createTemp(dir, base, data)
	if err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// createTemp writes data to a new temporary file with mode 0600 in dir,
// syncs it, and returns it open.
func createTemp(dir, base string, data []byte) (*os.File, error) {
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the name of the temporary file would only confuse
		}
		return nil, fmt.Errorf("cannot create a file in %s: %w", absPath(dir), err)
	}
	err = f.Chmod(0o600) // CreateTemp's default, made explicit
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

func writeExclusive(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// syncDir makes a new or renamed directory entry in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", absPath(dir), err)
	}
	return nil
}

// readAllLimit reads r to the end, or fails once it has more than max bytes.
func readAllLimit(r io.Reader, max int64) ([]byte, bool, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > max {
		return nil, true, nil
	}
	return data, false, nil
}

package keys

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// newTestStore returns a store with two secrets, written to a fresh file
// under a fresh master key.
func newTestStore(t *testing.T) (path string, master MasterKey, s *Store) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "test.keystore")
	master = GenerateMasterKey()
	s = New()
	if err := s.SetSecret("paillier", []byte("not really a paillier key")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSecret("empty", nil); err != nil {
		t.Fatal(err)
	}
	if err := Create(path, master, s); err != nil {
		t.Fatal(err)
	}
	return path, master, s
}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// assertSameStore checks that got has the id, creation time, root key and
// secrets of want.
func assertSameStore(t *testing.T, got, want *Store) {
	t.Helper()
	if got.ID() != want.ID() {
		t.Errorf("id %s, want %s", got.ID(), want.ID())
	}
	if !got.Created().Equal(want.Created()) {
		t.Errorf("created %v, want %v", got.Created(), want.Created())
	}
	if got.root != want.root {
		t.Errorf("root key differs")
	}
	if g, w := strings.Join(got.SecretNames(), ","), strings.Join(want.SecretNames(), ","); g != w {
		t.Errorf("secret names %q, want %q", g, w)
	}
	for _, name := range want.SecretNames() {
		g, ok1 := got.Secret(name)
		w, ok2 := want.Secret(name)
		if !ok1 || !ok2 || !bytes.Equal(g, w) {
			t.Errorf("secret %q: %q (%v), want %q (%v)", name, g, ok1, w, ok2)
		}
	}
	k1, err1 := got.Deriver().Derive([]byte("col"), "eq", "det", 32)
	k2, err2 := want.Deriver().Derive([]byte("col"), "eq", "det", 32)
	if err1 != nil || err2 != nil || !bytes.Equal(k1, k2) {
		t.Errorf("derived keys differ (%v, %v)", err1, err2)
	}
}

func TestRoundTrip(t *testing.T) {
	path, master, s := newTestStore(t)
	got, err := Open(path, master)
	if err != nil {
		t.Fatal(err)
	}
	assertSameStore(t, got, s)
	if got.Version() != FormatVersion {
		t.Errorf("version %d", got.Version())
	}
	if !got.Wrapped().Equal(s.Wrapped()) || got.Wrapped().IsZero() {
		t.Errorf("wrapped %v, want %v (non-zero)", got.Wrapped(), s.Wrapped())
	}
	if d := time.Since(got.Created()); d < 0 || d > time.Minute {
		t.Errorf("created %v is not now", got.Created())
	}
	if v, ok := got.Secret("missing"); ok || v != nil {
		t.Errorf("Secret(missing) = %q, %v", v, ok)
	}
	// Secret returns a copy.
	v, _ := got.Secret("paillier")
	v[0] ^= 1
	if w, _ := got.Secret("paillier"); w[0] == v[0] {
		t.Error("Secret returned the store's own slice")
	}
	// Data keys come from the root key, not from the master key.
	fromRoot, _ := Derive(got.root[:], []byte("col"), "ord", "ope", 32)
	fromMaster, _ := Derive(master.b[:], []byte("col"), "ord", "ope", 32)
	k, err := got.Deriver().Derive([]byte("col"), "ord", "ope", 32)
	if err != nil || !bytes.Equal(k, fromRoot) || bytes.Equal(k, fromMaster) {
		t.Errorf("Deriver is not over the root key")
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("store file mode %v, %v; want 0600", fi.Mode(), err)
	}
	h, err := ReadHeader(path)
	if err != nil || h.StoreID != s.ID() || h.Version != FormatVersion || !h.Created.Equal(s.Created()) {
		t.Errorf("ReadHeader = %+v, %v", h, err)
	}
	if len(readBytes(t, path)) != headerSize+s.payloadSize()+tagSize {
		t.Errorf("file size does not match the documented layout")
	}
}

func TestTwoStoresDiffer(t *testing.T) {
	a, b := New(), New()
	if a.ID() == b.ID() || a.root == b.root {
		t.Fatal("two new stores share an id or a root key")
	}
	for _, s := range []*Store{a, b} {
		if s.ID()[6]>>4 != 4 || s.ID()[8]>>6 != 2 {
			t.Errorf("store id %s is not a version 4 UUID", s.ID())
		}
		id, err := ParseStoreID(strings.ToUpper(s.ID().String()))
		if err != nil || id != s.ID() {
			t.Errorf("ParseStoreID(%s) = %s, %v", s.ID(), id, err)
		}
	}
	for _, bad := range []string{"", "00000000000000000000000000000000", "0000000-00000-0000-0000-000000000000", "zzzzzzzz-0000-0000-0000-000000000000"} {
		if _, err := ParseStoreID(bad); err == nil {
			t.Errorf("ParseStoreID(%q) succeeded", bad)
		}
	}
}

// TestEveryBitFlipDetected flips every bit of a store file, one at a time:
// each modified file must fail to open, as corrupt or as not
// authenticating, never as a store.
func TestEveryBitFlipDetected(t *testing.T) {
	path, master, _ := newTestStore(t)
	orig := readBytes(t, path)
	for i := range orig {
		for bit := range 8 {
			data := bytes.Clone(orig)
			data[i] ^= 1 << bit
			s, err := decode(data, master, "x")
			if err == nil {
				t.Fatalf("flipping bit %d of byte %d went undetected: %v", bit, i, s)
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrWrongKeyOrTampered) {
				t.Fatalf("flipping bit %d of byte %d: error %v is neither ErrCorrupt nor ErrWrongKeyOrTampered", bit, i, err)
			}
		}
	}
	// And through the file system, for a few positions.
	for _, i := range []int{0, offVersion + 1, offID, offCreated + 7, offSalt, offNonce, offLength + 3, headerSize, len(orig) - 1} {
		data := bytes.Clone(orig)
		data[i] ^= 0x80
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path, master); err == nil {
			t.Errorf("Open accepted a file with byte %d modified", i)
		}
	}
}

func TestTruncationAndExtension(t *testing.T) {
	path, master, _ := newTestStore(t)
	orig := readBytes(t, path)
	for n := range len(orig) {
		_, err := decode(orig[:n], master, "x")
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: got %v, want ErrCorrupt", n, err)
		}
		if n > 0 && !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("truncated to %d bytes: message %q does not say truncated", n, err)
		}
	}
	_, err := decode(append(bytes.Clone(orig), 0), master, "x")
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "after its end") {
		t.Fatalf("one byte appended: got %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	path, master, _ := newTestStore(t)
	orig := readBytes(t, path)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withVersion := func(v uint16) []byte {
		b := bytes.Clone(orig)
		binary.BigEndian.PutUint16(b[offVersion:], v)
		return b
	}
	masterFile := filepath.Join(dir, "master")
	if err := WriteMasterKeyFile(masterFile, master); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		path   string
		master MasterKey
		is     []error
		says   []string
	}{
		{"missing", filepath.Join(dir, "nope.keystore"), master, []error{fs.ErrNotExist}, []string{"does not exist", "proxy keys init", "backup"}},
		{"wrong master", path, GenerateMasterKey(), []error{ErrWrongKeyOrTampered}, []string{"wrong master key", "tampered", "cannot be told apart"}},
		{"newer version", write("v3", withVersion(3)), master, []error{ErrCorrupt, ErrUnsupportedVersion}, []string{"format version 3", "reads versions 1 to 2", "newer pgonion"}},
		{"version 0", write("v0", withVersion(0)), master, []error{ErrCorrupt, ErrUnsupportedVersion}, []string{"format version 0", "damaged"}},
		{"not a key store", write("text", []byte("hello, world\n")), master, []error{ErrCorrupt}, []string{"not a pgonion key store"}},
		{"master key file as store", masterFile, master, []error{ErrCorrupt}, []string{"not a pgonion key store"}},
		{"empty", write("empty", nil), master, []error{ErrCorrupt}, []string{"empty"}},
		{"directory", dir, master, nil, []string{"cannot read key store"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.path, tc.master)
			if err == nil {
				t.Fatalf("Open succeeded: %v", s)
			}
			for _, target := range tc.is {
				if !errors.Is(err, target) {
					t.Errorf("error %q does not wrap %v", err, target)
				}
			}
			for _, want := range []error{fs.ErrNotExist, ErrCorrupt, ErrUnsupportedVersion, ErrWrongKeyOrTampered} {
				if errors.Is(err, want) && !containsErr(tc.is, want) {
					t.Errorf("error %q wraps %v too", err, want)
				}
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if abs, _ := filepath.Abs(tc.path); !strings.Contains(err.Error(), abs) {
				t.Errorf("error %q does not name the file %s", err, abs)
			}
		})
	}
}

func containsErr(list []error, e error) bool {
	for _, x := range list {
		if x == e {
			return true
		}
	}
	return false
}

func TestCreateRefusesToOverwrite(t *testing.T) {
	path, master, _ := newTestStore(t)
	before := readBytes(t, path)
	other := New()
	err := Create(path, master, other)
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("second Create: %v", err)
	}
	if !bytes.Equal(before, readBytes(t, path)) {
		t.Fatal("second Create changed the file")
	}
	// A failed Create leaves the store writable elsewhere.
	if err := Create(path+".2", master, other); err != nil {
		t.Fatalf("Create after a refused Create: %v", err)
	}
	// A dangling symbolic link is not overwritten either.
	link := filepath.Join(t.TempDir(), "link")
	target := filepath.Join(t.TempDir(), "target")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Create(link, master, New()); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over a dangling symlink: %v", err)
	}
	if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("Create wrote through a dangling symlink")
	}
	assertNoTempFiles(t, filepath.Dir(path))
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestRotateMaster(t *testing.T) {
	path, oldMaster, s := newTestStore(t)
	before := readBytes(t, path)
	newMaster := GenerateMasterKey()
	if err := RotateMaster(path, oldMaster, newMaster); err != nil {
		t.Fatal(err)
	}
	after := readBytes(t, path)
	if bytes.Equal(before, after) {
		t.Fatal("RotateMaster did not change the file")
	}
	got, err := Open(path, newMaster)
	if err != nil {
		t.Fatalf("new master does not open the rotated store: %v", err)
	}
	assertSameStore(t, got, s)
	if got.Wrapped().Before(s.Wrapped()) {
		t.Errorf("wrapped time went back: %v < %v", got.Wrapped(), s.Wrapped())
	}
	if _, err := Open(path, oldMaster); !errors.Is(err, ErrWrongKeyOrTampered) {
		t.Fatalf("old master on the rotated store: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("rotated store mode %v, %v", fi.Mode(), err)
	}
	assertNoTempFiles(t, filepath.Dir(path))

	// Rotating with a wrong old master changes nothing.
	if err := RotateMaster(path, oldMaster, GenerateMasterKey()); !errors.Is(err, ErrWrongKeyOrTampered) {
		t.Fatalf("RotateMaster with a wrong old master: %v", err)
	}
	if !bytes.Equal(after, readBytes(t, path)) {
		t.Fatal("a failed RotateMaster changed the file")
	}
	if err := RotateMaster(filepath.Join(t.TempDir(), "none"), oldMaster, newMaster); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("RotateMaster of a missing store: %v", err)
	}
	if err := RotateMaster(path, newMaster, MasterKey{}); err == nil {
		t.Fatal("RotateMaster to the zero key succeeded")
	}
}

func TestAddSecret(t *testing.T) {
	path, master, s := newTestStore(t)
	got, err := AddSecret(path, master, "extra", []byte{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	back, err := Open(path, master)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Store{got, back} {
		if v, ok := st.Secret("extra"); !ok || !bytes.Equal(v, []byte{1, 2, 3}) {
			t.Errorf("added secret reads back as %v, %v", v, ok)
		}
		if st.ID() != s.ID() || st.root != s.root {
			t.Error("AddSecret changed the id or root key")
		}
	}
	before := readBytes(t, path)
	if _, err := AddSecret(path, master, "paillier", []byte("another")); !errors.Is(err, ErrSecretExists) {
		t.Fatalf("replacing a secret: %v", err)
	}
	if !bytes.Equal(before, readBytes(t, path)) {
		t.Fatal("a refused AddSecret changed the file")
	}
	if _, err := AddSecret(path, GenerateMasterKey(), "other", nil); !errors.Is(err, ErrWrongKeyOrTampered) {
		t.Fatalf("AddSecret with a wrong master: %v", err)
	}
	if err := back.SetSecret("late", nil); err == nil {
		t.Fatal("SetSecret on a store read from a file succeeded")
	}
}

func TestSecretNames(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"paillier", true},
		{"a", true},
		{"hom.v1_key-2", true},
		{strings.Repeat("x", MaxSecretNameLen), true},
		{"", false},
		{strings.Repeat("x", MaxSecretNameLen+1), false},
		{"Paillier", false},
		{".hidden", false},
		{"-x", false},
		{"a b", false},
		{"a/b", false},
		{"é", false},
	}
	for _, tc := range tests {
		err := New().SetSecret(tc.name, []byte("v"))
		if (err == nil) != tc.ok {
			t.Errorf("SetSecret(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	s := New()
	if err := s.SetSecret("big", make([]byte, MaxSecretSize+1)); err == nil {
		t.Error("a secret larger than MaxSecretSize was accepted")
	}
	if err := s.SetSecret("x", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSecret("x", nil); !errors.Is(err, ErrSecretExists) {
		t.Errorf("SetSecret of a taken name: %v", err)
	}
}

// TestConcurrentAddSecret checks that concurrent updates of one file do not
// lose each other's secrets (the file lock serialises them).
func TestConcurrentAddSecret(t *testing.T) {
	path, master, _ := newTestStore(t)
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := AddSecret(path, master, "s"+string(rune('a'+i)), []byte{byte(i)})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(path, master)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.SecretNames()); got != n+2 {
		t.Fatalf("%d secrets after %d concurrent AddSecret calls, want %d: %v", got, n, n+2, s.SecretNames())
	}
}

// FuzzDecode checks that no input makes the decoder panic, that nothing
// opens under a wrong master key, and that under the right master key
// only the files actually written with it open.
func FuzzDecode(f *testing.F) {
	right, wrong := GenerateMasterKey(), GenerateMasterKey()
	var valid [][]byte
	for i, secrets := range [][]string{nil, {"paillier"}, {"a", "b", "c"}} {
		s := New()
		for _, name := range secrets {
			if err := s.SetSecret(name, []byte("value of "+name)); err != nil {
				f.Fatal(err)
			}
		}
		if i == 2 {
			// Earlier root generations, as RotateRoot leaves them.
			s.older[0] = &oldRoot{root: s.root}
			s.older[3] = &oldRoot{}
			s.gen = 7
		}
		s.wrapped = time.Now().UTC().Truncate(time.Second)
		data := s.seal(right)
		valid = append(valid, data)
		f.Add(data)
		f.Add(data[:headerSize])
		f.Add(data[:len(data)-1])
	}
	f.Add([]byte{})
	f.Add([]byte(storeMagic))
	f.Add([]byte("pgonion-master-v1:AAAA"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if s, err := decode(data, wrong, "fuzz"); err == nil {
			t.Fatalf("opened under a wrong master key: %v", s)
		}
		s, err := decode(data, right, "fuzz")
		if err == nil {
			found := false
			for _, v := range valid {
				found = found || bytes.Equal(v, data)
			}
			if !found {
				t.Fatalf("a file that was never written opened: %v", s)
			}
			if s.Deriver() == nil {
				t.Fatal("opened store without a Deriver")
			}
		} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrWrongKeyOrTampered) {
			t.Fatalf("error %v is neither ErrCorrupt nor ErrWrongKeyOrTampered", err)
		}
		_, _, _ = parseHeader(data, "fuzz")
	})
}

// sealVersion1 returns s as a format 1 file (one root key, no
// generation), as pgonion wrote before root rotation.
func sealVersion1(t *testing.T, s *Store, master MasterKey) []byte {
	t.Helper()
	if s.gen != 0 || len(s.older) != 0 {
		t.Fatal("a format 1 store has one root key, of generation 0")
	}
	data := s.seal(master)
	hdr := bytes.Clone(data[:headerSize])
	binary.BigEndian.PutUint16(hdr[offVersion:], 1)
	full := s.payload()
	// Format 2 starts with the generation and ends the root keys with a
	// count of earlier ones: drop both.
	payload := append(bytes.Clone(full[4:4+RootKeySize]), full[4+RootKeySize+2:]...)
	binary.BigEndian.PutUint32(hdr[offLength:], uint32(len(payload)+tagSize))
	aead := newAEAD(master, hdr[offSalt:offSalt+saltSize])
	return aead.Seal(hdr, hdr[offNonce:offNonce+nonceSize], payload, hdr)
}

func TestReadsVersion1(t *testing.T) {
	master := GenerateMasterKey()
	s := New()
	if err := s.SetSecret("paillier", []byte("pk")); err != nil {
		t.Fatal(err)
	}
	s.wrapped = time.Now().UTC().Truncate(time.Second)
	path := filepath.Join(t.TempDir(), "v1.keystore")
	if err := os.WriteFile(path, sealVersion1(t, s, master), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Open(path, master)
	if err != nil {
		t.Fatal(err)
	}
	assertSameStore(t, got, s)
	if got.Version() != 1 || got.Generation() != 0 || !slices.Equal(got.Generations(), []int{0}) {
		t.Errorf("version %d, generation %d, generations %v", got.Version(), got.Generation(), got.Generations())
	}
	// Any change writes the current format, keys unchanged.
	up, err := AddSecret(path, master, "other", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if up.Version() != FormatVersion || up.root != s.root {
		t.Errorf("after AddSecret: version %d, root kept %v", up.Version(), up.root == s.root)
	}
}

func TestRotateAndRetireRoot(t *testing.T) {
	path, master, s := newTestStore(t)
	key := func(st *Store, gen int) []byte {
		t.Helper()
		d, ok := st.DeriverAt(gen)
		if !ok {
			t.Fatalf("no root key of generation %d (store holds %v)", gen, st.Generations())
		}
		k, err := d.Derive([]byte("col"), "eq", "det", 32)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k0 := key(s, 0)
	r1, err := RotateRoot(path, master, map[string][]byte{"paillier.1": []byte("second pair")})
	if err != nil {
		t.Fatal(err)
	}
	if r1.Generation() != 1 || !slices.Equal(r1.Generations(), []int{0, 1}) {
		t.Fatalf("generation %d, generations %v", r1.Generation(), r1.Generations())
	}
	if !bytes.Equal(key(r1, 0), k0) {
		t.Error("the former root key's keys changed")
	}
	k1 := key(r1, 1)
	if bytes.Equal(k1, k0) {
		t.Error("the new root key derives the old keys")
	}
	if d := r1.Deriver(); d != func() *Deriver { d, _ := r1.DeriverAt(1); return d }() {
		t.Error("Deriver is not the current generation's")
	}
	if v, ok := r1.Secret("paillier.1"); !ok || string(v) != "second pair" {
		t.Errorf("secret added with the rotation: %q %v", v, ok)
	}
	// A name taken refuses the whole rotation.
	if _, err := RotateRoot(path, master, map[string][]byte{"paillier": nil}); !errors.Is(err, ErrSecretExists) {
		t.Errorf("rotation with a taken secret name: %v", err)
	}
	r2, err := RotateRoot(path, master, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r2.Generations(), []int{0, 1, 2}) || !bytes.Equal(key(r2, 1), k1) {
		t.Fatalf("generations %v", r2.Generations())
	}
	if _, err := RetireRoot(path, master, 2); err == nil || !strings.Contains(err.Error(), "current") {
		t.Errorf("retiring the current root key: %v", err)
	}
	got, err := RetireRoot(path, master, 0, "paillier", "no-such-secret")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.DeriverAt(0); ok || !slices.Equal(got.Generations(), []int{1, 2}) {
		t.Errorf("after retiring 0: generations %v", got.Generations())
	}
	if _, ok := got.Secret("paillier"); ok {
		t.Error("the retired generation's secret is still there")
	}
	if _, err := RetireRoot(path, master, 0); err != nil {
		t.Errorf("retiring again: %v", err)
	}
	back, err := Open(path, master)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(key(back, 1), k1) || back.Generation() != 2 || back.ID() != s.ID() {
		t.Error("the store read back differs")
	}
	assertNoTempFiles(t, filepath.Dir(path))
}

package keys

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMasterKeyText(t *testing.T) {
	k := GenerateMasterKey()
	text := k.Encode()
	if !strings.HasPrefix(text, MasterKeyPrefix) || len(text) != len(MasterKeyPrefix)+43 {
		t.Fatalf("Encode = %d characters", len(text))
	}
	if GenerateMasterKey().Equal(k) {
		t.Fatal("two generated master keys are equal")
	}
	body := strings.TrimPrefix(text, MasterKeyPrefix)
	raw, _ := base64.RawURLEncoding.DecodeString(body)
	tests := []struct {
		name string
		in   string
		ok   bool
		says string
	}{
		{"canonical", text, true, ""},
		{"surrounding white space", " \t" + text + "\r\n\n", true, ""},
		{"empty", "  \n", false, "empty"},
		{"no prefix", body, false, "does not start with"},
		{"other prefix", "pgonion-master-v2:" + body, false, "does not start with"},
		{"hex", hex.EncodeToString(raw), false, "does not start with"},
		{"too short", text[:len(text)-1], false, "want 43"},
		{"padded", text + "=", false, "want 43"},
		{"standard base64", MasterKeyPrefix + base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)), false, "base64url"},
		{"inner line break", text[:30] + "\n" + text[31:], false, "line break"},
		{"inner space", text[:30] + " " + text[31:], false, "base64url"},
		{"all zero", MasterKeyPrefix + base64.RawURLEncoding.EncodeToString(make([]byte, 32)), false, "zero"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMasterKey(tc.in)
			if tc.ok {
				if err != nil || !got.Equal(k) {
					t.Fatalf("ParseMasterKey: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
			if len(tc.in) > 20 && strings.Contains(err.Error(), strings.TrimSpace(tc.in)[len(MasterKeyPrefix)/2:]) {
				t.Errorf("error %q contains the input", err)
			}
		})
	}
}

func writeFileMode(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestLoadMasterKey(t *testing.T) {
	dir := t.TempDir()
	k := GenerateMasterKey()
	text := k.Encode() + "\n"
	file := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		writeFileMode(t, p, text, mode)
		return p
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file("target", 0o600), link); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage")
	writeFileMode(t, garbage, "not a key", 0o600)
	big := filepath.Join(dir, "big")
	writeFileMode(t, big, strings.Repeat(" ", maxMasterKeyFile)+text, 0o600)

	tests := []struct {
		name      string
		file, env string
		ok        bool
		is        error
		says      []string
	}{
		{"file 0600", file("m600", 0o600), "", true, nil, nil},
		{"file 0400", file("m400", 0o400), "", true, nil, nil},
		{"file 0700", file("m700", 0o700), "", true, nil, nil},
		{"symlink to 0600 file", link, "", true, nil, nil},
		{"env", "", text, true, nil, nil},
		{"file 0644", file("m644", 0o644), "", false, ErrMasterKeyFilePermissions, []string{"mode 0644", "chmod 600 " + filepath.Join(dir, "m644")}},
		{"file 0640", file("m640", 0o640), "", false, ErrMasterKeyFilePermissions, []string{"mode 0640", "chmod 600"}},
		{"file 0604", file("m604", 0o604), "", false, ErrMasterKeyFilePermissions, []string{"mode 0604", "chmod 600"}},
		{"file 0660", file("m660", 0o660), "", false, ErrMasterKeyFilePermissions, []string{"chmod 600"}},
		{"missing file", filepath.Join(dir, "none"), "", false, fs.ErrNotExist, []string{filepath.Join(dir, "none")}},
		{"directory", filepath.Join(dir, "adir"), "", false, nil, []string{"not a regular file"}},
		{"malformed file", garbage, "", false, nil, []string{"malformed", garbage}},
		{"oversized file", big, "", false, nil, []string{"longer than"}},
		{"malformed env", "", "pgonion-master-v1:short", false, nil, []string{MasterKeyEnv, "malformed"}},
		{"both", file("both", 0o600), text, false, nil, []string{"both"}},
		{"neither", "", "", false, nil, []string{"no master key", MasterKeyEnv}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadMasterKey(tc.file, tc.env)
			if tc.ok {
				if err != nil || !got.Equal(k) {
					t.Fatalf("LoadMasterKey: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q does not wrap %v", err, tc.is)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if strings.Contains(err.Error(), strings.TrimPrefix(k.Encode(), MasterKeyPrefix)) {
				t.Errorf("error %q contains the key", err)
			}
		})
	}
}

func TestWriteMasterKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master")
	k := GenerateMasterKey()
	if err := WriteMasterKeyFile(path, k); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("master key file mode %v, %v", fi.Mode(), err)
	}
	if got, err := LoadMasterKey(path, ""); err != nil || !got.Equal(k) {
		t.Fatalf("reading back: %v", err)
	}
	before, _ := os.ReadFile(path)
	err = WriteMasterKeyFile(path, GenerateMasterKey())
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("overwriting: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a refused WriteMasterKeyFile changed the file")
	}
	if err := WriteMasterKeyFile(path+"2", MasterKey{}); err == nil {
		t.Fatal("wrote the zero key")
	}
	if err := WriteMasterKeyFile(filepath.Join(t.TempDir(), "no", "such", "dir"), k); err == nil || strings.Contains(err.Error(), ".tmp-") {
		t.Fatalf("writing into a missing directory: %v", err)
	}
	assertNoTempFiles(t, filepath.Dir(path))
}

// TestMasterKeyNeverPrinted formats a master key, things holding one, and
// errors about one, and looks for the key in every encoding.
func TestMasterKeyNeverPrinted(t *testing.T) {
	k := GenerateMasterKey()
	secrets := []string{
		k.Encode(),
		strings.TrimPrefix(k.Encode(), MasterKeyPrefix),
		hex.EncodeToString(k.b[:]),
		base64.StdEncoding.EncodeToString(k.b[:]),
		fmt.Sprint(k.b[:]), // [12 34 ...]
		fmt.Sprintf("%#v", k.b),
		string(k.b[:8]),
	}
	type holder struct {
		Name string
		Key  MasterKey
		Ptr  *MasterKey
	}
	h := holder{"x", k, &k}
	var outputs []string
	for _, v := range []any{k, &k, h, &h, []MasterKey{k}, map[string]MasterKey{"k": k}} {
		outputs = append(outputs, fmt.Sprintf("%v %+v %#v %s %x %X %q %d %T", v, v, v, v, v, v, v, v, v))
		j, _ := json.Marshal(v)
		outputs = append(outputs, string(j))
	}
	outputs = append(outputs, k.String(), k.GoString())
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("m", "key", k, "holder", h)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("m", "key", k, "ptr", &k)
	outputs = append(outputs, logs.String())

	// Errors about a key file whose content is a key with one character
	// changed, or a key under the wrong prefix.
	dir := t.TempDir()
	near := filepath.Join(dir, "near")
	writeFileMode(t, near, "pgonion-master-v2:"+strings.TrimPrefix(k.Encode(), MasterKeyPrefix), 0o600)
	_, err1 := LoadMasterKey(near, "")
	_, err2 := LoadMasterKey("", k.Encode()+"x")
	loose := filepath.Join(dir, "loose")
	writeFileMode(t, loose, k.Encode(), 0o644)
	_, err3 := LoadMasterKey(loose, "")
	for _, err := range []error{err1, err2, err3} {
		if err == nil {
			t.Fatal("a bad master key was accepted")
		}
		outputs = append(outputs, fmt.Sprintf("%v %+v %#v %s", err, err, err, err))
	}
	for _, out := range outputs {
		if !strings.Contains(out, "[redacted]") && !strings.Contains(out, "master key") && !strings.HasPrefix(out, "{") && !strings.HasPrefix(out, "[{") {
			t.Errorf("output %q shows neither [redacted] nor an error", out)
		}
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Fatalf("the master key (%d-byte form) appears in %q", len(s), out)
			}
		}
	}
}

// TestStoreNeverPrinted checks that formatting a store shows neither its
// root key nor its secrets.
func TestStoreNeverPrinted(t *testing.T) {
	s := New()
	secret := []byte("the paillier private key bytes")
	if err := s.SetSecret("paillier", secret); err != nil {
		t.Fatal(err)
	}
	out := fmt.Sprintf("%v %+v %#v %s %x %q %v %+v %#v", s, s, s, s, s, s, *s, []Store{*s}, struct{ S *Store }{s})
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("m", "store", s)
	out += logs.String()
	for _, bad := range []string{string(secret), hex.EncodeToString(secret), hex.EncodeToString(s.root[:]), fmt.Sprint(s.root[:4])[1:12]} {
		if strings.Contains(out, bad) {
			t.Fatalf("formatting a store shows key material: %q", out)
		}
	}
	if !strings.Contains(out, s.ID().String()) || !strings.Contains(out, "paillier") {
		t.Errorf("formatting a store does not show its id and secret names: %q", out)
	}
}

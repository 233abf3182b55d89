package engine_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// psycopgVersion is the psycopg the driver tests install (from PyPI, into
// a virtual environment under the user's cache directory).
const psycopgVersion = "3.3.9"

// psycopgPython returns a Python that has psycopg, setting up the virtual
// environment on first use. Without python3 the test fails in CI and is
// skipped elsewhere.
func psycopgPython(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	venv := filepath.Join(cache, "pgonion", "psycopg-"+psycopgVersion)
	py := filepath.Join(venv, "bin", "python")
	if exec.Command(py, "-c", "import psycopg").Run() == nil {
		return py
	}
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	python3, err := exec.LookPath("python3")
	if err != nil {
		unavailable("python3 is needed for the psycopg tests (apt-get install python3 python3-venv)")
	}
	os.RemoveAll(venv)
	if out, err := exec.Command(python3, "-m", "venv", venv).CombinedOutput(); err != nil {
		unavailable("python3 -m venv: %v\n%s", err, out)
	}
	if out, err := exec.Command(filepath.Join(venv, "bin", "pip"), "install", "-q", "psycopg[binary]=="+psycopgVersion).CombinedOutput(); err != nil {
		unavailable("installing psycopg %s: %v\n%s", psycopgVersion, err, out)
	}
	return py
}

// TestPsycopgRaceAndChurn runs testdata/psycopg_race.py (see its doc):
// the create/insert race through one proxy and through two (1,000 trials
// each), and 250 new sessions each whose first statement uses server-side
// binding. No canary reaches the server's log, and every
// answer arrives.
func TestPsycopgRaceAndChurn(t *testing.T) {
	py := psycopgPython(t)
	for _, two := range []bool{false, true} {
		name := "one proxy"
		if two {
			name = "two proxies"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := newEncDB(t)
			logAll(t, db.direct(t))
			p1 := startProxy(t, db, nil)
			p2 := p1
			if two {
				p2 = startProxy(t, db, nil)
			}
			read := serverLog(t)
			cmd := exec.Command(py, "testdata/psycopg_race.py", p1.url, p2.url, "1000", "250")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("psycopg_race.py: %v\n%s", err, out)
			}
			t.Logf("%s", strings.TrimSpace(string(out)))
			if log := read(); bytes.Contains(log, []byte("zebra")) {
				i := bytes.Index(log, []byte("zebra"))
				t.Fatalf("a canary reached the server log: %s", log[max(0, i-200):min(len(log), i+50)])
			}
		})
	}
}

// TestPsycopgNamedCursor runs testdata/psycopg_cursor.py: psycopg's
// named cursors Describe the cursor by name before they FETCH, and get
// its logical columns.
func TestPsycopgNamedCursor(t *testing.T) {
	py := psycopgPython(t)
	p := startProxy(t, newEncDB(t), nil)
	out, err := exec.Command(py, "testdata/psycopg_cursor.py", p.url).CombinedOutput()
	if err != nil {
		t.Fatalf("psycopg_cursor.py: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

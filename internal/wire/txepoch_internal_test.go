package wire

import "testing"

// TestEndsTransactionMaybe: only answers known to stay inside the
// current transaction leave the epoch alone.
func TestEndsTransactionMaybe(t *testing.T) {
	for _, c := range []struct {
		t    byte
		body string
		want bool
	}{
		{'C', "SELECT 1\x00", false},
		{'C', "INSERT 0 1\x00", false},
		{'C', "UPDATE 3\x00", false},
		{'C', "SAVEPOINT\x00", false},
		{'C', "SET\x00", false},
		{'C', "COMMIT\x00", true},
		{'C', "ROLLBACK\x00", true},
		{'C', "BEGIN\x00", true},
		{'C', "START TRANSACTION\x00", true},
		{'C', "CALL\x00", true},
		{'C', "DO\x00", true},
		{'C', "PREPARE TRANSACTION\x00", true},
		{'C', "SELECTED\x00", true}, // unknown: counted
		{'C', "", true},
		{'Z', "T", false},
		{'Z', "I", true},
		{'Z', "E", true},
		{'E', "SERROR\x00\x00", true},
		{'D', "\x00\x01", false},
		{'T', "", false},
	} {
		if got := endsTransactionMaybe(c.t, []byte(c.body)); got != c.want {
			t.Errorf("%c %q: %v, want %v", c.t, c.body, got, c.want)
		}
	}
}

package wire

import "testing"

func TestTagWithCount(t *testing.T) {
	for _, tc := range []struct{ tag, want string }{
		{"SELECT 40", "SELECT 7"},
		{"INSERT 0 40", "INSERT 0 7"},
		{"UPDATE 1", "UPDATE 7"},
		{"FETCH 12", "FETCH 7"},
		{"SELECT", "SELECT"},
		{"CREATE TABLE", "CREATE TABLE"},
		{"12", "12"},
		{"", ""},
		{"MOVE2", "MOVE2"},
	} {
		if got := string(tagWithCount([]byte(tc.tag), 7)); got != tc.want {
			t.Errorf("tagWithCount(%q, 7) = %q, want %q", tc.tag, got, tc.want)
		}
	}
}

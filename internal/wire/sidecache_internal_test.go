package wire

import (
	"testing"
	"time"
)

// TestSlowSetNeedsRunsInARow: a statement is slow after slowRuns slow
// runs in a row; a fast run (a lock wait that ended) starts it over.
func TestSlowSetNeedsRunsInARow(t *testing.T) {
	var s slowSet
	slow := time.Now().Add(-2 * slowAfter)
	fast := time.Now()
	steps := []struct {
		start time.Time
		want  bool
	}{
		{slow, false},
		{fast, false},
		{slow, false},
		{slow, true},
		{slow, true},
		{fast, false},
		{slow, false},
	}
	for i, st := range steps {
		s.timed("k", st.start)
		if got := s.has("k"); got != st.want {
			t.Fatalf("after run %d: slow %v, want %v", i+1, got, st.want)
		}
	}
	if s.has("other") {
		t.Fatal("a statement never run is slow")
	}
}

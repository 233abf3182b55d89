package main

import (
	"testing"
	"time"
)

func TestTimingMore(t *testing.T) {
	tm := timing{Min: 3, MinTime: 2 * time.Second}
	for _, tc := range []struct {
		n     int
		spent time.Duration
		want  bool
	}{
		{0, 0, true},
		{2, time.Minute, true},                // the minimum first
		{3, time.Minute, false},               // slow query: the minimum only
		{3, time.Second, true},                // fast query: more
		{10, 2 * time.Second, false},          // enough time spent
		{maxRuns - 1, time.Millisecond, true}, // bounded
		{maxRuns, time.Millisecond, false},
	} {
		if got := tm.more(tc.n, tc.spent); got != tc.want {
			t.Errorf("more(%d, %v) = %v, want %v", tc.n, tc.spent, got, tc.want)
		}
	}
	if (timing{Min: 1}).more(1, 0) {
		t.Error("MinTime 0 asked for more than the minimum")
	}
}

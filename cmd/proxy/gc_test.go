package main

import "testing"

func TestMemoryBound(t *testing.T) {
	meminfo := []byte("MemTotal:       24608072 kB\nMemFree:         1234567 kB\n")
	for _, tc := range []struct {
		name            string
		meminfo, cgroup []byte
		want            int64
	}{
		{"machine only", meminfo, nil, 24608072 * 1024},
		{"unlimited cgroup", meminfo, []byte("max\n"), 24608072 * 1024},
		{"lower cgroup limit", meminfo, []byte("2147483648\n"), 2 << 30},
		{"higher cgroup limit", meminfo, []byte("99999999999999\n"), 24608072 * 1024},
		{"cgroup only", nil, []byte("1073741824"), 1 << 30},
		{"nothing known", nil, nil, 0},
		{"malformed", []byte("MemTotal: lots\n"), []byte("-1"), 0},
	} {
		if got := memoryBound(tc.meminfo, tc.cgroup); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

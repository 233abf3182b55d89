package recrypt

import (
	"context"
	"testing"
	"time"
)

// TestPace: with MaxRate, converting rows takes at least rows/MaxRate
// seconds; without, pace never waits.
func TestPace(t *testing.T) {
	ctx := context.Background()
	r := &Rewriter{MaxRate: 1000}
	began := time.Now()
	r.pace(ctx, 100, began)
	if d := time.Since(began); d < 95*time.Millisecond {
		t.Fatalf("100 rows at 1,000 rows/s took %v, want at least 100 ms", d)
	}
	r.MaxRate = 0
	began = time.Now()
	r.pace(ctx, 1e9, began.Add(-time.Hour))
	if d := time.Since(began); d > time.Second {
		t.Fatalf("without a rate pace waited %v", d)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	r.MaxRate = 1
	began = time.Now()
	r.pace(cancelled, 3600, began)
	if d := time.Since(began); d > time.Second {
		t.Fatalf("pace ignored its cancelled context: %v", d)
	}
}

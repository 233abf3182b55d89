package procs

import (
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
)

// fake records the governor's settings and holds its pending lowerings
// until the test fires them.
type fake struct {
	sets    []int
	pending []func()
}

func (f *fake) set(n int) { f.sets = append(f.sets, n) }

// wait's stop does nothing: the governor must ignore a lowering it
// stopped that runs anyway.
func (f *fake) wait(fn func()) func() {
	f.pending = append(f.pending, fn)
	return func() {}
}

// fire runs every pending lowering, stopped ones included: a timer that
// fired while being stopped still runs its function.
func (f *fake) fire() {
	p := f.pending
	f.pending = nil
	for _, fn := range p {
		fn()
	}
}

func TestGovernor(t *testing.T) {
	type step struct {
		do   string // "open", "close" (the last opened), "claim", "release", "fire"
		want []int  // the settings made so far
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"one session stays on one P", []step{
			{"open", []int{1}},
			{"close", []int{1}},
			{"fire", []int{1}},
		}},
		{"a second session raises at once", []step{
			{"open", []int{1}},
			{"open", []int{1, 4}},
			{"open", []int{1, 4}},
		}},
		{"lowering waits", []step{
			{"open", []int{1}},
			{"open", []int{1, 4}},
			{"close", []int{1, 4}},
			{"fire", []int{1, 4, 1}},
		}},
		{"a session back before the delay keeps every P", []step{
			{"open", []int{1}},
			{"open", []int{1, 4}},
			{"close", []int{1, 4}},
			{"open", []int{1, 4}},
			{"fire", []int{1, 4}},
		}},
		{"a claim raises a lone session", []step{
			{"open", []int{1}},
			{"claim", []int{1, 4}},
			{"release", []int{1, 4}},
			{"fire", []int{1, 4, 1}},
		}},
		{"a claim without sessions", []step{
			{"claim", []int{1, 4}},
			{"claim", []int{1, 4}},
			{"release", []int{1, 4}},
			{"fire", []int{1, 4}},
			{"release", []int{1, 4}},
			{"fire", []int{1, 4, 1}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{}
			g := newGovernor(4, f.set, f.wait)
			var closes, releases []func()
			for i, s := range tt.steps {
				switch s.do {
				case "open":
					closes = append(closes, g.add(&g.sessions, 1))
				case "close":
					closes[len(closes)-1]()
					closes = closes[:len(closes)-1]
				case "claim":
					releases = append(releases, g.add(&g.claims, 1))
				case "release":
					releases[len(releases)-1]()
					releases = releases[:len(releases)-1]
				case "fire":
					f.fire()
				}
				if !slices.Equal(f.sets, s.want) {
					t.Fatalf("step %d (%s): settings %v, want %v", i, s.do, f.sets, s.want)
				}
			}
		})
	}
}

func TestDoneTwice(t *testing.T) {
	f := &fake{}
	g := newGovernor(2, f.set, f.wait)
	a := g.add(&g.sessions, 1)
	g.add(&g.sessions, 1)
	g.add(&g.sessions, 1)
	a()
	a() // a second call must not close another session
	f.fire()
	if g.sessions != 2 || g.cur != 2 {
		t.Fatalf("sessions %d, Ps %d after one of three closed twice: want 2 and 2", g.sessions, g.cur)
	}
}

func TestWithoutAdapt(t *testing.T) {
	if std.Load() != nil {
		t.Skip("Adapt was called in this process")
	}
	before := runtime.GOMAXPROCS(0)
	done, release := Session(), Claim()
	done()
	release()
	if got := runtime.GOMAXPROCS(0); got != before || Full() != before {
		t.Fatalf("GOMAXPROCS %d, Full %d without Adapt: want %d", got, Full(), before)
	}
}

// TestAdapt runs the process's own scheduler through a lone session, a
// second one and the delay back (last in this file: it adapts the test
// process for good).
func TestAdapt(t *testing.T) {
	full := runtime.GOMAXPROCS(0)
	if !Adapt() {
		t.Skipf("not adapting with GOMAXPROCS %d (environment %q)", full, os.Getenv("GOMAXPROCS"))
	}
	if Adapt() {
		t.Fatal("Adapt adapted twice")
	}
	if got := runtime.GOMAXPROCS(0); got != 1 || Full() != full {
		t.Fatalf("no session: GOMAXPROCS %d, Full %d; want 1 and %d", got, Full(), full)
	}
	first := Session()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("one session: GOMAXPROCS %d, want 1", got)
	}
	second := Session()
	if got := runtime.GOMAXPROCS(0); got != full {
		t.Fatalf("two sessions: GOMAXPROCS %d, want %d", got, full)
	}
	second()
	first()
	deadline := time.Now().Add(10 * lowerAfter)
	for runtime.GOMAXPROCS(0) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("GOMAXPROCS still %d %v after the last session", runtime.GOMAXPROCS(0), 10*lowerAfter)
		}
		time.Sleep(lowerAfter / 10)
	}
	release := Claim()
	if got := runtime.GOMAXPROCS(0); got != full {
		t.Fatalf("claimed: GOMAXPROCS %d, want %d", got, full)
	}
	release()
}

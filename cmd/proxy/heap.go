package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"
)

// heapProfiles writes a heap profile to DIR/heap-TIME.pprof on each
// SIGUSR1 when PGONION_HEAPPROFILE_DIR=DIR is set, for memory work (go
// tool pprof -inuse_space FILE; bench/soak.sh takes one after warm-up and
// one at the end). It returns a function that stops it.
func heapProfiles(log *slog.Logger) func() {
	dir := os.Getenv("PGONION_HEAPPROFILE_DIR")
	if dir == "" {
		return func() {}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-sigs:
				runtime.GC() // the profile shows live memory as of now
				path := filepath.Join(dir, fmt.Sprintf("heap-%s.pprof", time.Now().Format("150405.000")))
				f, err := os.Create(path)
				if err == nil {
					err = pprof.WriteHeapProfile(f)
					f.Close()
				}
				if err != nil {
					log.Error("writing a heap profile", "err", err)
				} else {
					log.Info("wrote a heap profile", "file", path)
				}
			}
		}
	}()
	return func() { signal.Stop(sigs); close(done) }
}

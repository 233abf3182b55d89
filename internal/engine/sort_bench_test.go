package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// BenchmarkRunSorterFlush sorts runs of 100 rows by a character(120)
// column, as sysbench's ORDER BY c does in the proxy.
func BenchmarkRunSorterFlush(b *testing.B) {
	typ := onion.Type{Base: onion.Char, Length: 120}
	d := &decrypter{p: &projection{cols: []projColumn{{x: &encrypted{typ: typ}}}}}
	plan := &rewrite.ProxySort{Keys: []rewrite.SortKey{{Kind: rewrite.SortValue, Column: 0}}}
	r := rand.New(rand.NewPCG(1, 2))
	const n = 100
	keys := make([]onion.Value, n)
	for i := range keys {
		keys[i] = onion.TextValue(fmt.Sprintf("%011d-%011d-%011d-%011d-%011d-%011d-%011d-%011d-%011d-%011d ", r.IntN(1e9), r.IntN(1e9), r.IntN(1e9), r.IntN(1e9), r.IntN(1e9), r.IntN(1e9), r.IntN(1e9), r.IntN(1e9), r.IntN(1e9), r.IntN(1e9)))
	}
	for b.Loop() {
		s := &runSorter{d: d, plan: plan, limit: -1}
		s.run = make([]heldRow, n)
		for i := range s.run {
			s.run[i].keys = []sortVal{{v: keys[i]}}
		}
		s.flush()
		d.sent = 0
	}
}

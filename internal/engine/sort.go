package engine

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// runSorter completes the order of a result sorted by the server on the
// 8-byte prefixes of an encrypted text column (rewrite.ProxySort): it
// holds each run of rows with equal run columns, sorts it stably by the
// plan's keys on decrypted values, and releases it with the proxy's
// OFFSET, LIMIT and WITH TIES applied. Memory grows with the longest run
// (values sharing their first 8 bytes), not with the result.
type runSorter struct {
	d    *decrypter
	plan *rewrite.ProxySort
	// limit -1 is none; offset the rows to skip.
	limit, offset int64

	runKey  [][]byte // run columns of the held rows
	run     []heldRow
	order   []int32             // flush's, kept for the next run
	out     []*pgproto3.DataRow // released, valid until the next release
	sawRow  bool
	matched int64 // rows put in order so far
	// finished is set once the limit is reached (and its ties sent): the
	// remaining rows are dropped unread.
	finished bool

	budget  *heldBudget // what the run may hold
	runCost int         // charged for the held run

	mem     heldMemory // the held rows' values and keys
	lastRun int        // rows in the last run flushed, to size the next
}

// heldRow is a held row: the client's values and the sort keys.
type heldRow struct {
	vals [][]byte
	keys []sortVal
}

// sortVal is one sort key of a row: a decrypted value (SortValue), an OPE
// ciphertext (SortCipher, nil for NULL) or a rank (SortRank).
type sortVal struct {
	v    onion.Value
	b    []byte
	rank int64
}

func newRunSorter(d *decrypter, ex *execState) *runSorter {
	s := &runSorter{d: d, plan: d.p.sort, limit: -1}
	if d.params != nil {
		s.budget = newHeldBudget(d.params.maxHeld)
	}
	if ex != nil {
		s.limit, s.offset = ex.limit, ex.offset
	}
	if s.limit == 0 {
		s.finished = true
	}
	return s
}

// hold takes the decrypter's current row (values in d.vals): a row that
// starts a new run sends the previous one on. It returns wire.ErrSkipRow:
// rows reach the client through release.
func (s *runSorter) hold(row *pgproto3.DataRow, rowSalt []byte) error {
	d := s.d
	if !s.sawRow || !s.sameRun(row) {
		s.flush()
		s.runKey = s.runKey[:0]
		for _, c := range s.plan.Run {
			s.runKey = append(s.runKey, bytes.Clone(row.Values[c]))
		}
		s.sawRow = true
		if s.finished {
			return wire.ErrSkipRow
		}
	}
	cost := rowCost(d.vals) + len(s.plan.Keys)*heldValueOverhead
	if err := s.budget.charge(cost); err != nil {
		return err
	}
	s.runCost += cost
	if s.run == nil {
		s.run = make([]heldRow, 0, max(s.lastRun, 64))
	}
	h := heldRow{vals: s.mem.clone(d.vals), keys: take(&s.mem.keys, len(s.plan.Keys), 1024)}
	for i, k := range s.plan.Keys {
		var err error
		switch k.Kind {
		case rewrite.SortValue:
			if k.Column < len(d.decoded) {
				h.keys[i].v = d.decoded[k.Column]
			} else if h.keys[i].v, err = d.cellValue(&d.p.cols[k.Column], row, rowSalt); err != nil {
				return err
			}
		case rewrite.SortCipher:
			if raw := row.Values[k.Column]; raw != nil {
				if h.keys[i].b, err = cellBytes(raw, d.serverBinary); err != nil {
					return err
				}
				h.keys[i].b = bytes.Clone(h.keys[i].b)
			}
		case rewrite.SortRank:
			if h.keys[i].rank, err = countValue(row.Values[k.Column], d.serverBinary); err != nil {
				return err
			}
		}
	}
	s.run = append(s.run, h)
	return wire.ErrSkipRow
}

// sameRun reports whether row belongs to the run being held.
func (s *runSorter) sameRun(row *pgproto3.DataRow) bool {
	for i, c := range s.plan.Run {
		a, b := s.runKey[i], row.Values[c]
		if (a == nil) != (b == nil) || !bytes.Equal(a, b) {
			return false
		}
	}
	return true
}

// flush sorts the held run and queues it for release.
func (s *runSorter) flush() {
	if len(s.run) == 0 {
		return
	}
	// Stable: ties stay in the server's order. By index, with the index
	// as the last key: a stable merge sort moving the rows themselves
	// took twice as long (sysbench's ORDER BY c over 100 rows).
	order := s.order[:0]
	for i := range s.run {
		order = append(order, int32(i))
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := s.compare(&s.run[a], &s.run[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	s.order = order
	// Ties of the last row sent are in its run: rows of other runs
	// differ on an earlier key or on the text key.
	var last *heldRow
	// One allocation for the run's rows, not one a row (a third of the
	// proxy's allocations under sysbench's ORDER BY c).
	rows := make([]pgproto3.DataRow, 0, len(order))
	for _, i := range order {
		h := &s.run[i]
		if s.finished {
			break
		}
		s.matched++
		if s.matched <= s.offset {
			continue
		}
		if s.limit >= 0 && s.d.sent >= s.limit {
			if !s.plan.WithTies || last == nil || s.compare(last, h) != 0 {
				s.finished = true
				break
			}
		}
		rows = append(rows, pgproto3.DataRow{Values: h.vals})
		s.out = append(s.out, &rows[len(rows)-1])
		s.d.sent++
		last = h
	}
	if s.limit >= 0 && s.d.sent >= s.limit && !s.plan.WithTies {
		s.finished = true
	}
	// Not reused: the released rows point into it.
	s.lastRun, s.run = len(s.run), nil
	s.budget.release(s.runCost)
	s.runCost = 0
}

// release returns the rows ready to go (all of them at the end).
func (s *runSorter) release(atEnd bool) []*pgproto3.DataRow {
	if atEnd {
		s.flush()
	}
	out := s.out
	s.out = nil
	return out
}

// compare orders two rows of one run by the plan's keys.
func (s *runSorter) compare(a, b *heldRow) int {
	for i := range s.plan.Keys {
		k := &s.plan.Keys[i]
		x, y := &a.keys[i], &b.keys[i]
		var c int
		switch k.Kind {
		case rewrite.SortRank:
			c = cmp.Compare(x.rank, y.rank)
		case rewrite.SortValue:
			c = exec.NullsOrder(x.v.IsNull(), y.v.IsNull(), k.NullsFirst)
			if c == 0 && !x.v.IsNull() && !y.v.IsNull() {
				c = s.d.p.cols[k.Column].x.typ.Compare(x.v, y.v)
				if k.Desc {
					c = -c
				}
			}
		case rewrite.SortCipher:
			c = exec.NullsOrder(x.b == nil, y.b == nil, k.NullsFirst)
			if c == 0 && x.b != nil && y.b != nil {
				c = bytes.Compare(x.b, y.b)
				if k.Desc {
					c = -c
				}
			}
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// heldMemory hands out the held rows' memory from chunks shared by many
// rows: three allocations per row were a third of the cost of holding
// one (sysbench's ORDER BY c over 100 rows). Chunks are never reused,
// since released rows point into them; the collector frees a chunk with
// the last of its rows.
type heldMemory struct {
	bytes []byte
	vals  [][]byte
	keys  []sortVal
}

// clone copies a row's values (NULLs stay nil).
func (m *heldMemory) clone(vals [][]byte) [][]byte {
	n := 0
	for _, v := range vals {
		n += len(v)
	}
	bytes := take(&m.bytes, n, 64<<10)[:0]
	out := take(&m.vals, len(vals), 2048)
	for i, v := range vals {
		switch {
		case v == nil:
		case len(v) == 0:
			out[i] = emptyValue // not NULL: bytes may be nil
		default:
			from := len(bytes)
			bytes = append(bytes, v...)
			out[i] = bytes[from:len(bytes):len(bytes)]
		}
	}
	return out
}

// emptyValue is an empty value that is not NULL.
var emptyValue = []byte{}

// take returns n zero elements of *chunk, first replacing it with a
// chunk twice the size of the last (up to limit, or n) when too few are
// left.
func take[T any](chunk *[]T, n, limit int) []T {
	c := *chunk
	if cap(c)-len(c) < n {
		c = make([]T, 0, max(n, min(2*cap(c), limit), 16))
	}
	*chunk = c[:len(c)+n]
	return c[len(c) : len(c)+n : len(c)+n]
}

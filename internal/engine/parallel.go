package engine

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/procs"
	"github.com/pgonion/pgonion/internal/wire"
)

// A long result is decrypted on every core: after parallelAfter rows
// decrypted as they come, the decrypter copies rows into batches of
// parallelBatch, workers decrypt the batches, and Release hands them on
// in the server's order. OLTP results (a few to a few hundred rows) never
// reach the threshold, so they pay no hand-off; a result of 500,000 rows
// spends most of the proxy's time decrypting (67% of its CPU profile).
const (
	parallelAfter = 2048
	parallelBatch = 256
)

// parallelBatches counts the batches workers have decrypted, for tests.
var parallelBatches atomic.Int64

// parallelRows is the parallel mode of one decrypter's result.
type parallelRows struct {
	d       *decrypter
	idle    chan *decrypter // the workers' decrypters not in use
	cur     *decryptBatch   // being filled
	pending []*decryptBatch // handed to workers, in the server's order
	sent    []*decryptBatch // released by the last call: reused after it
	free    []*decryptBatch
	rows    []*pgproto3.DataRow // Release's result, reused
	// unclaim gives the cores back (procs.Claim): at the end, or when
	// the result is dropped or forgotten.
	unclaim func()
}

// decryptBatch is server rows (in) and their decrypted form (out, once
// done is closed).
type decryptBatch struct {
	in, out rowBatch
	rows    []pgproto3.DataRow // out's rows, aliasing out
	outVals [][]byte           // their values
	vals    [][]byte           // a row of in, for the worker
	err     error
	done    chan struct{}
}

// parallelOK reports whether d may decrypt its result in parallel: it is
// the session's rewriter of the statement (mayParallel), it returns every
// row it decrypts, in the server's order, and there are cores for it.
func (d *decrypter) parallelOK() bool {
	return d.mayParallel && d.p.sort == nil && len(d.p.residuals) == 0 && !d.decodeOnly && d.skip == nil &&
		procs.Full() > 1
}

func newParallelRows(d *decrypter) *parallelRows {
	n := procs.Full()
	p := &parallelRows{d: d, idle: make(chan *decrypter, n), unclaim: procs.Claim()}
	// A session that ends mid-result forgets p without a last Release.
	runtime.AddCleanup(p, func(unclaim func()) { unclaim() }, p.unclaim)
	for range n {
		p.idle <- &decrypter{p: d.p, params: d.params, formats: d.formats, serverBinary: d.serverBinary, env: d.env, envOK: true}
	}
	return p
}

// add keeps a copy of row; a full batch goes to the next idle worker.
func (p *parallelRows) add(row *pgproto3.DataRow) error {
	if len(row.Values) != p.d.p.nServer {
		return fmt.Errorf("engine: the server returned a row of %d columns, the plan expects %d", len(row.Values), p.d.p.nServer)
	}
	if p.cur == nil {
		p.cur = p.newBatch()
	}
	p.cur.in.add(row)
	if p.cur.in.n == parallelBatch {
		p.dispatch()
	}
	return wire.ErrSkipRow
}

func (p *parallelRows) newBatch() *decryptBatch {
	var b *decryptBatch
	if n := len(p.free); n > 0 {
		b, p.free = p.free[n-1], p.free[:n-1]
	} else {
		b = &decryptBatch{}
	}
	cols := p.d.p.nServer
	b.in = rowBatch{cols: cols, arena: b.in.arena[:0], spans: b.in.spans[:0]}
	b.out = rowBatch{cols: p.d.p.shown(), arena: b.out.arena[:0], spans: b.out.spans[:0]}
	b.err, b.done = nil, make(chan struct{})
	return b
}

// dispatch hands the current batch to a worker, waiting for one to be
// idle: at most one batch per core is in flight.
func (p *parallelRows) dispatch() {
	b := p.cur
	p.cur = nil
	p.pending = append(p.pending, b)
	w := <-p.idle
	parallelBatches.Add(1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				b.err = fmt.Errorf("engine: panic decrypting rows: %v", v)
			}
			p.idle <- w
			close(b.done)
		}()
		b.err = b.decrypt(w)
	}()
}

// decrypt fills b.out with the decrypted form of b.in's rows.
func (b *decryptBatch) decrypt(w *decrypter) error {
	var row pgproto3.DataRow
	for r := range b.in.n {
		b.vals = b.in.rowValues(r, b.vals[:0])
		row.Values = b.vals
		if err := w.DataRow(&row); err != nil {
			return err
		}
		b.out.add(&row)
	}
	return nil
}

// release returns the rows of the batches done, in order; atEnd, of all,
// and the parallel mode ends. The rows are valid until the next call.
func (p *parallelRows) release(atEnd bool) ([]*pgproto3.DataRow, error) {
	p.free = append(p.free, p.sent...)
	p.sent = p.sent[:0]
	if atEnd && p.cur != nil && p.cur.in.n > 0 {
		p.dispatch()
	}
	p.rows = p.rows[:0]
	for len(p.pending) > 0 {
		b := p.pending[0]
		if atEnd {
			<-b.done
		} else {
			select {
			case <-b.done:
			default:
				return p.rows, nil
			}
		}
		p.pending = p.pending[1:]
		if b.err != nil {
			p.drop()
			return nil, b.err // the session fails the statement
		}
		b.resolve()
		for i := range b.rows {
			p.rows = append(p.rows, &b.rows[i])
		}
		p.sent = append(p.sent, b)
	}
	if atEnd {
		p.unclaim()
	}
	return p.rows, nil
}

// resolve makes b.rows the rows of b.out, aliasing its arena.
func (b *decryptBatch) resolve() {
	cols := b.out.cols
	b.outVals = b.outVals[:0]
	for r := range b.out.n {
		b.outVals = b.out.rowValues(r, b.outVals)
	}
	b.rows = b.rows[:0]
	for r := range b.out.n {
		b.rows = append(b.rows, pgproto3.DataRow{Values: b.outVals[r*cols : (r+1)*cols : (r+1)*cols]})
	}
}

// drop waits for the batches in flight and forgets them: the statement
// failed.
func (p *parallelRows) drop() {
	for _, b := range p.pending {
		<-b.done
	}
	p.pending, p.cur = nil, nil
	p.unclaim()
}

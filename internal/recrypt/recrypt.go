// Package recrypt changes how existing columns are stored, online: it
// encrypts plaintext columns of existing tables in place (adoption) and
// decrypts encrypted columns back to plaintext (roll back), while
// applications keep reading and writing through the proxy (DESIGN §12).
//
// A rewrite builds the column's new form in shadow columns beside the old
// one, which stays authoritative until the end:
//
//   - prepare: the shadow columns, a trigger that empties a row's shadow
//     whenever the old form is written (so the rewriter's copy can never
//     silently go stale), and a checkpoint row in pgonion.rewrites, in one
//     transaction (with the table's registration in the catalog when it
//     was not there);
//   - backfill: batches of heap blocks, each read with its rows locked,
//     converted in this process and written back in one transaction with
//     its checkpoint; a run that is killed resumes at the checkpoint;
//   - catch-up: the rows whose shadow was emptied or never filled (written
//     or inserted meanwhile) are converted the same way;
//   - cutover: under a short exclusive lock, the last rows are caught up,
//     the trigger goes, the old form is set aside (a plaintext column is
//     renamed to c__plaintext) or dropped (cells), and the catalog records
//     the new form (sealed), all in one transaction: every proxy then
//     plans with the new form, and a statement planned with the old one
//     fails rather than read or write a form that is no longer current.
//
// After adoption the plaintext is still on the server, in c__plaintext,
// until the final step (Scrub) drops the column and rewrites every row,
// so that later WAL and dumps hold no plaintext of it.
//
// One rewrite per table runs at a time across all processes (a session
// advisory lock, released when the rewriter's connection ends).
package recrypt

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/keyring"
	"github.com/pgonion/pgonion/internal/schemes/hom"
)

// Kind is what a rewrite does to a column.
type Kind string

const (
	// Encrypt turns a plaintext column into encrypted onions.
	Encrypt Kind = "encrypt"
	// Decrypt turns an encrypted column back into plaintext.
	Decrypt Kind = "decrypt"
	// Reencrypt turns an encrypted column into another encrypted form:
	// fresh keys (rotation), other onions, another join group.
	Reencrypt Kind = "reencrypt"
)

// PlaintextSuffix names the adopted column's former plaintext until
// Scrub drops it: c becomes c__plaintext.
const PlaintextSuffix = "__plaintext"

// ErrBusy is returned when another process rewrites the table.
var ErrBusy = errors.New("recrypt: another rewrite of this table is running")

// Keys are what a rewrite encrypts and decrypts with.
type Keys struct {
	// MACKey authenticates the catalog: the catalog key of Generation.
	MACKey []byte
	// Ring gives each column the keys of its root key generation.
	Ring *keyring.Ring
	// Generation is the root key generation the catalog is authenticated
	// under (catalog.MACGeneration): columns encrypted or rotated get it.
	Generation int
}

// Progress reports how far a rewrite is.
type Progress struct {
	Table  string
	Phase  string // "backfill", "catch-up", "cutover", "scrub"
	Blocks int64  // heap blocks done (backfill, scrub)
	Total  int64  // heap blocks to do
	Rows   int64  // rows converted so far
	Since  time.Duration
}

// Rewriter runs rewrites over one connection, which it owns for the
// duration (its session holds the advisory lock).
type Rewriter struct {
	Conn *pgx.Conn
	Keys Keys
	// BatchBlocks is the number of heap blocks per backfill transaction
	// (default 32).
	BatchBlocks int64
	// LockTimeout bounds each wait for the exclusive lock at cutover
	// (default 2 s; it is tried again up to LockTries times, default 30).
	LockTimeout time.Duration
	LockTries   int
	// Progress, when set, is called after each batch and phase.
	Progress func(Progress)
	// AfterBatch, when set, runs after each committed batch (tests pause
	// or stop a rewrite midway); its error ends the run.
	AfterBatch func(p Progress) error
	// DryRun reports what would be done without changing anything.
	DryRun bool
	// MaxRate, when positive, caps the rows converted per second (by the
	// backfill and the catch-up), leaving the server to the application.
	MaxRate float64

	hom map[int]*hom.Encrypter // by root key generation
}

func (r *Rewriter) batchBlocks() int64 {
	if r.BatchBlocks > 0 {
		return r.BatchBlocks
	}
	return 32
}

// advisoryClass is the first key of the rewriters' advisory locks.
const advisoryClass = 0x70677277 // "pgrw"

// lockTable takes the session advisory lock of schema.table, or returns
// ErrBusy.
func (r *Rewriter) lockTable(ctx context.Context, schema, table string) (func(), error) {
	h := fnv.New32a()
	h.Write([]byte(schema + "." + table))
	key := int32(h.Sum32())
	var ok bool
	if err := r.Conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", int32(advisoryClass), key).Scan(&ok); err != nil {
		return nil, fmt.Errorf("recrypt: taking the rewrite lock: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s.%s", ErrBusy, schema, table)
	}
	return func() {
		_, _ = r.Conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1, $2)", int32(advisoryClass), key)
	}, nil
}

// setSession fixes the settings values are read and written in.
func (r *Rewriter) setSession(ctx context.Context) error {
	_, err := r.Conn.Exec(ctx, "SET DateStyle = 'ISO, MDY'; SET TimeZone = 'UTC'; SET IntervalStyle = 'postgres'; SET extra_float_digits = 3")
	return err
}

// pace sleeps as long as converting rows since began needs to stay
// within MaxRate.
func (r *Rewriter) pace(ctx context.Context, rows int64, began time.Time) {
	if r.MaxRate <= 0 {
		return
	}
	ahead := time.Duration(float64(rows)/r.MaxRate*float64(time.Second)) - time.Since(began)
	if ahead <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(ahead):
	}
}

func (r *Rewriter) report(p Progress) {
	if r.Progress != nil {
		r.Progress(p)
	}
}

// quoteIdent quotes a SQL identifier.
func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// qualified is "schema"."table".
func qualified(schema, table string) string { return pgx.Identifier{schema, table}.Sanitize() }

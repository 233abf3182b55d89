package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/recrypt"
	"github.com/pgonion/pgonion/internal/rewrite"
)

const encryptUsage = `Usage:
  proxy encrypt [flags] [SCHEMA.]TABLE [COLUMN ...]
  proxy decrypt [flags] [SCHEMA.]TABLE [COLUMN ...]

encrypt adopts existing plaintext: it encrypts the named columns of TABLE
(without COLUMN: every column whose policy is not plain) in place, as the
proxy would have stored them had the table been created through it (the
declared policy, else --default-policy). The table may have been created
directly on the server; it keeps its name and rows. Applications keep
reading and writing through 'proxy serve' meanwhile: the rewrite runs in
batches, each committed with its checkpoint, and a short exclusive lock
switches the columns over at the end. Stopped at any point (even kill -9),
it resumes where it was when run again.

After the switch the plaintext is kept aside (column c__plaintext) until
the final step drops it and rewrites every row, so that dumps and the WAL
written afterwards hold none of it: with --yes it runs at once, otherwise
you are asked (or run 'proxy encrypt --yes TABLE' later). WAL segments,
backups and replicas from before the final step still hold the plaintext.

decrypt is the way back: the named encrypted columns (without COLUMN:
every one) become plaintext again, online in the same way; a table left
without encrypted columns leaves the proxy's catalog.

A column that an index, constraint, default, view or trigger uses cannot
be rewritten in place (the server evaluates those over the stored form):
drop them first, or declare the column plain. Only one rewrite of a table
runs at a time.`

func runEncrypt(args []string, stdout, stderr io.Writer) error {
	return runRecrypt(recrypt.Encrypt, args, stdout, stderr)
}

func runDecrypt(args []string, stdout, stderr io.Writer) error {
	return runRecrypt(recrypt.Decrypt, args, stdout, stderr)
}

func runRecrypt(kind recrypt.Kind, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(string(kind), flag.ContinueOnError)
	var f rewriteFlags
	f.register(fs, encryptUsage)
	yes := fs.Bool("yes", false, "encrypt: run the final step (drop the plaintext) without asking")
	abort := fs.Bool("abort", false, "undo an unfinished rewrite of the columns: the old form stays")
	defaultPolicy := fs.String("default-policy", string(catalog.Encrypted), "encrypt: how columns without a declared policy are stored (as proxy serve's flag): encrypted or sensitive")
	positional, err := f.parse(fs, args)
	if err != nil {
		return err
	}
	if len(positional) == 0 {
		return usagef("a TABLE is required")
	}
	schema, table := rewrite.DefaultSchema, positional[0]
	if s, t, ok := strings.Cut(table, "."); ok {
		schema, table = s, t
	}
	columns := positional[1:]
	pol := catalog.Policy(*defaultPolicy)
	if pol != catalog.Encrypted && pol != catalog.Sensitive {
		return usagef("bad --default-policy %q: want encrypted or sensitive", *defaultPolicy)
	}
	// Interrupted, the rewrite stops where it is: it resumes from its
	// last checkpoint when run again.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, rw, err := f.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer a.close(context.Background())
	target := schema + "." + table
	if *abort {
		done, err := rw.Abort(ctx, schema, table, columns)
		if err != nil {
			return err
		}
		if len(done) == 0 {
			fmt.Fprintf(stdout, "no unfinished rewrite of %s to abort\n", target)
			return nil
		}
		fmt.Fprintf(stdout, "aborted the rewrite of %s.%s: the columns keep their old form\n", target, strings.Join(done, ", "))
		return nil
	}
	var plan *recrypt.Plan
	if kind == recrypt.Encrypt {
		declared, err := catalog.Policies(ctx, a.conn, a.macKey, schema, table)
		if err != nil {
			return err
		}
		policy := func(_, column string) rewrite.ColumnPolicy {
			for _, d := range declared {
				if d.Column == column {
					return rewrite.ColumnPolicy{Policy: d.Policy, Capabilities: d.Capabilities, JoinGroup: d.JoinGroup}
				}
			}
			return rewrite.ColumnPolicy{Policy: pol}
		}
		plan, err = rw.EncryptColumns(ctx, schema, table, columns, policy)
		if err != nil {
			return recryptError(err, kind, target)
		}
	} else {
		plan, err = rw.DecryptColumns(ctx, schema, table, columns)
		if err != nil {
			return recryptError(err, kind, target)
		}
	}
	printPlan(stdout, plan, f.dryRun)
	if kind != recrypt.Encrypt {
		return nil
	}
	// The final step.
	rw.DryRun = true
	pending, err := rw.Scrub(ctx, schema, table)
	if err != nil || len(pending) == 0 || f.dryRun {
		return err
	}
	if !*yes && !confirm(stderr, fmt.Sprintf("Drop the plaintext of %s.%s now (it stays in WAL and backups taken before)? [y/N] ", target, strings.Join(pending, ", "))) {
		fmt.Fprintf(stdout, "the plaintext of %s.%s is kept aside as %s\nhint: run 'proxy encrypt --yes %s' to drop it\n", target, strings.Join(pending, ", "), pending[0]+recrypt.PlaintextSuffix, target)
		return nil
	}
	rw.DryRun = false
	dropped, err := rw.Scrub(ctx, schema, table)
	if err != nil {
		return fmt.Errorf("dropping the plaintext of %s: %w\nhint: run the same command again to resume", target, err)
	}
	fmt.Fprintf(stdout, "dropped the plaintext of %s.%s and rewrote every row\n", target, strings.Join(dropped, ", "))
	return nil
}

func recryptError[K ~string](err error, kind K, target string) error {
	if strings.Contains(err.Error(), "hint:") {
		return err
	}
	return fmt.Errorf("%s %s: %w\nhint: run the same command again to resume from the last checkpoint, or with --abort to undo", kind, target, err)
}

// printPlan says what the rewrite did (or would do).
func printPlan(w io.Writer, p *recrypt.Plan, dry bool) {
	verb := map[recrypt.Kind]string{recrypt.Encrypt: "encrypted", recrypt.Decrypt: "decrypted", recrypt.Reencrypt: "re-encrypted"}[p.Kind]
	if dry {
		verb = "would be " + verb
	}
	if p.Register && dry {
		fmt.Fprintf(w, "%s.%s would enter the proxy's catalog\n", p.Schema, p.Table)
	}
	for _, c := range p.Columns {
		resumed := ""
		if c.Resumed {
			resumed = fmt.Sprintf(" (resumed after %d rows)", c.Done)
		}
		fmt.Fprintf(w, "%s.%s.%s %s: %s -> %s%s\n", p.Schema, p.Table, c.Name, verb, c.From, c.To, resumed)
	}
	for _, s := range p.Skipped {
		fmt.Fprintf(w, "%s.%s.%s left as it is\n", p.Schema, p.Table, s)
	}
	if len(p.Columns) > 0 {
		for _, s := range p.Indexes {
			fmt.Fprintf(w, "%s.%s %s\n", p.Schema, p.Table, s)
		}
	}
	if len(p.Columns) == 0 && len(p.Skipped) == 0 {
		fmt.Fprintf(w, "nothing to do for %s.%s\n", p.Schema, p.Table)
	}
	if dry {
		fmt.Fprintf(w, "table: %d blocks, about %d rows\n", p.Blocks, p.Rows)
	}
}

// progressPrinter reports progress at most twice a second: blocks, rows,
// rate and the time left.
func progressPrinter(w io.Writer) func(recrypt.Progress) {
	var last time.Time
	var phase string
	return func(p recrypt.Progress) {
		if p.Phase == phase && time.Since(last) < 500*time.Millisecond && p.Blocks < p.Total {
			return
		}
		last, phase = time.Now(), p.Phase
		line := fmt.Sprintf("%s %s: %d rows", p.Table, p.Phase, p.Rows)
		if p.Total > 0 {
			line = fmt.Sprintf("%s %s: block %d of %d, %d rows", p.Table, p.Phase, p.Blocks, p.Total, p.Rows)
			if secs := p.Since.Seconds(); secs > 0 && p.Blocks > 0 {
				if p.Rows > 0 {
					line += fmt.Sprintf(", %.0f rows/s", float64(p.Rows)/secs)
				}
				left := time.Duration(float64(p.Since) * float64(p.Total-p.Blocks) / float64(p.Blocks))
				line += ", about " + left.Round(time.Second).String() + " left"
			}
		}
		fmt.Fprintln(w, line)
	}
}

// confirm asks on w and reads an answer from standard input, if it is a
// terminal (not merely a character device such as /dev/null).
func confirm(w io.Writer, question string) bool {
	if !isTerminal(os.Stdin) {
		return false
	}
	fmt.Fprint(w, question)
	answer, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	answer = strings.ToLower(strings.TrimSpace(answer))
	return answer == "y" || answer == "yes"
}

// splitArgs separates positional arguments from flags, which may come in
// any order: a flag takes the next argument as its value unless it is
// boolean or written -flag=value.
func splitArgs(fs *flag.FlagSet, args []string) (positional, flags []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(positional, args[i+1:]...), flags, nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue // parseFlags reports it (or -h)
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return positional, flags, nil
}

const rotateUsage = `Usage: proxy keys rotate [flags] [SCHEMA.]TABLE[.COLUMN] ...

Re-encrypts encrypted columns under fresh keys, online: each named column
(every encrypted column of a named TABLE; every encrypted column of every
table when none is named) gets the next key version, recorded in the
proxy's catalog when its rows are all re-encrypted; until then the old
keys read and write it. It runs like proxy encrypt: in batches with
checkpoints while applications keep working, resumable after any stop,
one rewrite per table at a time. The new cells start at their onions'
strongest layers (an onion a query had peeled is peeled again when one
needs it), and a column an increment left in its Add onion is whole
again.

What it protects against: with the new keys, ciphertexts copied earlier
(backups, replicas, dumps) no longer match the live ones, and the old
keys, if they leak later, read none of the new cells. It does not
re-wrap the key store (proxy keys rotate-master does) and does not make
old copies unreadable to whoever holds the old key store. A column of a
join group also moves to the group's next key version (the keys its
columns share): rotate every table of the group (no TABLE rotates all);
until then the proxy refuses comparisons between rotated and unrotated
columns of the group.`

func runKeysRotate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("keys rotate", flag.ContinueOnError)
	var f rewriteFlags
	f.register(fs, rotateUsage)
	positional, err := f.parse(fs, args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, rw, err := f.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer a.close(context.Background())
	// Which columns of which tables, in the order named.
	type target struct {
		schema, table string
		columns       []string
	}
	var targets []*target
	find := func(schema, table string) *target {
		for _, t := range targets {
			if t.schema == schema && t.table == table {
				return t
			}
		}
		t := &target{schema: schema, table: table}
		targets = append(targets, t)
		return t
	}
	for _, p := range positional {
		parts := strings.Split(p, ".")
		var schema, table, column string
		switch {
		case len(parts) == 1:
			schema, table = rewrite.DefaultSchema, parts[0]
		case len(parts) == 2 && a.snap.Table(parts[0], parts[1]) != nil:
			schema, table = parts[0], parts[1]
		case len(parts) == 2:
			schema, table, column = rewrite.DefaultSchema, parts[0], parts[1]
		case len(parts) == 3:
			schema, table, column = parts[0], parts[1], parts[2]
		default:
			return usagef("want [SCHEMA.]TABLE[.COLUMN], got %q", p)
		}
		if a.snap.Table(schema, table) == nil {
			return fmt.Errorf("table %s.%s has no encrypted column (the catalog does not list it)\nhint: proxy status lists the tables the proxy manages", schema, table)
		}
		t := find(schema, table)
		if column != "" {
			t.columns = append(t.columns, column)
		}
	}
	if len(positional) == 0 {
		for _, t := range a.snap.Tables() {
			find(t.Schema, t.Name)
		}
	}
	if len(targets) == 0 {
		fmt.Fprintln(stdout, "no tables are managed by the proxy")
		return nil
	}
	for _, t := range targets {
		plan, err := rw.RotateColumns(ctx, t.schema, t.table, t.columns)
		if err != nil {
			return recryptError(err, "keys rotate", t.schema+"."+t.table)
		}
		printPlan(stdout, plan, f.dryRun)
	}
	return nil
}

// rewriteFlags are the flags of the commands that rewrite columns.
type rewriteFlags struct {
	backend string
	dryRun  bool
	batch   int64
	quiet   bool
	maxRate float64
	keys    keyFlags
}

func (f *rewriteFlags) register(fs *flag.FlagSet, usage string) {
	fs.StringVar(&f.backend, "backend", "", "libpq `DSN` of the PostgreSQL server (the proxy's own credentials)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "show what would be done, change nothing")
	fs.Int64Var(&f.batch, "batch-blocks", 32, "heap blocks (8 kB) per transaction")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress on standard error")
	fs.Float64Var(&f.maxRate, "max-rate", 0, "at most this many `rows` per second (0: as fast as it goes), to leave the server to the applications")
	f.keys.register(fs)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), usage+"\n\nFlags:"); fs.PrintDefaults() }
}

// parse parses args (flags and positional arguments in any order) and
// returns the positional ones.
func (f *rewriteFlags) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	positional, flags, err := splitArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if err := parseFlags(fs, flags); err != nil {
		return nil, err
	}
	if f.batch < 1 {
		return nil, usagef("--batch-blocks must be at least 1")
	}
	if f.maxRate < 0 {
		return nil, usagef("--max-rate must not be negative")
	}
	return positional, nil
}

// open opens the key store and the backend (migrated) and returns the
// rewriter working on them.
func (f *rewriteFlags) open(ctx context.Context, stderr io.Writer) (*admin, *recrypt.Rewriter, error) {
	a, err := openAdmin(ctx, f.backend, &f.keys, true)
	if err != nil {
		return nil, nil, err
	}
	rw, err := newRewriter(a, f.batch, f.dryRun, f.quiet, stderr)
	if err != nil {
		a.close(context.Background())
		return nil, nil, err
	}
	rw.MaxRate = f.maxRate
	return a, rw, nil
}

// newRewriter is the Rewriter of an admin command.
func newRewriter(a *admin, batch int64, dryRun, quiet bool, stderr io.Writer) (*recrypt.Rewriter, error) {
	keys := recrypt.Keys{MACKey: a.macKey, Ring: a.ring, Generation: a.gen}
	rw := &recrypt.Rewriter{Conn: a.conn, Keys: keys, BatchBlocks: batch, DryRun: dryRun}
	if !quiet {
		rw.Progress = progressPrinter(stderr)
	}
	return rw, nil
}

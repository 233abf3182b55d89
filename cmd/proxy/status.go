package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/recrypt"
)

// leakage says what the server can learn from a column at each layer.
var leakage = map[string]string{
	"rnd":    "nothing but length class and NULLs",
	"det":    "which rows hold equal values",
	"ope":    "the order of the values (and roughly their upper half of bits)",
	"hom":    "nothing but NULLs (probabilistic; sums computed blind)",
	"search": "equality and frequency of the words and trigrams of each value (which rows share them) and its approximate length, from the first row written",
}

func runStatus(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	backend := fs.String("backend", "", "libpq `DSN` of the PostgreSQL server (the proxy's own credentials)")
	var k keyFlags
	k.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: proxy status --backend DSN [--keystore FILE] [--master-key-file FILE]\n\nLists every table and column the proxy manages: its policy, its onions,\ntheir current layers, and what the server can learn from each. The\nmetadata is verified with the key store: changes made behind the proxy's\nback are reported, not shown.\n\nFlags (each also settable as PGONION_<NAME>):")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := openAdmin(ctx, *backend, &k, false)
	if err != nil {
		return err
	}
	defer a.close(ctx)
	snap := a.snap
	if snap.StoreID == "" {
		fmt.Fprintf(stdout, "key store %s (not yet bound to this database)\n", a.store.ID())
	} else {
		fmt.Fprintf(stdout, "key store %s, catalog version %d\n", a.store.ID(), snap.Version)
	}
	if err := printRewrites(ctx, stdout, a); err != nil {
		return err
	}
	tables := snap.Tables()
	if len(tables) == 0 {
		fmt.Fprintln(stdout, "no tables are managed by the proxy yet")
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nCOLUMN\tTYPE\tPOLICY\tONION\tLAYER\tTHE SERVER CAN LEARN")
	for _, t := range tables {
		for _, c := range t.Columns {
			name := t.Schema + "." + t.Name + "." + c.Name
			if c.Policy == catalog.Plain {
				fmt.Fprintf(w, "%s\t%s\tplain\t-\t-\teverything (stored unencrypted)\n", name, c.Type)
				continue
			}
			for i, o := range onionsInOrder(&c) {
				layer := c.Onions[o]
				if i == 0 {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s%s\n", name, c.Type, c.Policy, o, layer, leakage[layer], onionNote(&c, layer))
				} else {
					fmt.Fprintf(w, "\t\t\t%s\t%s\t%s%s\n", o, layer, leakage[layer], onionNote(&c, layer))
				}
			}
			if _, built := c.Onions["search"]; !built && c.Policy == catalog.Encrypted && slices.Contains(c.Capabilities, "search") {
				fmt.Fprintf(w, "\t\t\tsearch\tnot built\tnothing yet: the proxy builds it the first time a LIKE or ILIKE could use it\n")
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return printLearned(stdout, tables)
}

// printRewrites shows the rewrites under way (proxy encrypt, decrypt) and
// the plaintext adoption left aside.
func printRewrites(ctx context.Context, w io.Writer, a *admin) error {
	var migrated bool
	if err := a.conn.QueryRow(ctx, "SELECT to_regclass('pgonion.rewrites') IS NOT NULL").Scan(&migrated); err != nil || !migrated {
		return err // a database not migrated since: nothing can be under way
	}
	under, err := recrypt.Rewrites(ctx, a.conn)
	if err != nil {
		return fmt.Errorf("reading the rewrites under way: %w", err)
	}
	for _, u := range under {
		what := u.Schema + "." + u.Table
		if u.Column != "" {
			what += "." + u.Column
		}
		line := fmt.Sprintf("%s under way on %s: block %d of %d, %d rows", u.Kind, what, min(u.Block, u.Blocks), u.Blocks, u.Rows)
		if r := u.Rate(); r > 0 {
			line += fmt.Sprintf(", %.0f rows/s", r)
		}
		if left := u.Left(); left > 0 {
			line += ", about " + left.Round(time.Second).String() + " left"
		}
		line += ", last checkpoint " + time.Since(u.Updated).Round(time.Second).String() + " ago"
		fmt.Fprintln(w, line)
	}
	aside, err := recrypt.PlaintextAside(ctx, a.conn)
	if err != nil {
		return err
	}
	for _, c := range aside {
		fmt.Fprintf(w, "%s is encrypted, but its former plaintext is still on the server (%s%s): run 'proxy encrypt --yes TABLE' to drop it\n", c, c[strings.LastIndex(c, ".")+1:], recrypt.PlaintextSuffix)
	}
	return nil
}

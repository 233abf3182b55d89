package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
)

// leakage says what the server can learn from a column at each layer.
var leakage = map[string]string{
	"rnd":    "nothing but length class and NULLs",
	"det":    "which rows hold equal values",
	"ope":    "the order of the values (and roughly their upper half of bits)",
	"hom":    "nothing but NULLs (probabilistic; sums computed blind)",
	"search": "which rows share words or trigrams",
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
	if *backend == "" {
		return usagef("--backend is required")
	}
	store, err := k.open()
	if err != nil {
		return err
	}
	macKey, err := catalog.MACKey(store.Deriver())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, *backend)
	if err != nil {
		return fmt.Errorf("cannot reach the backend: %w\nhint: check --backend", err)
	}
	defer conn.Close(ctx)
	snap, err := catalog.Load(ctx, conn, macKey)
	if err != nil {
		return fmt.Errorf("%w\nhint: has the database been migrated (proxy migrate)? A metadata error means someone changed the schema pgonion directly", err)
	}
	switch {
	case snap.StoreID == "":
		fmt.Fprintf(stdout, "key store %s (not yet bound to this database)\n", store.ID())
	case !strings.EqualFold(snap.StoreID, store.ID().String()):
		return fmt.Errorf("this database's encrypted data belongs to key store %s, not to %s\nhint: give the key store that encrypted it with --keystore", snap.StoreID, store.ID())
	default:
		fmt.Fprintf(stdout, "key store %s, catalog version %d\n", store.ID(), snap.Version)
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
			for i, o := range slices.Sorted(maps.Keys(c.Onions)) {
				layer := c.Onions[o]
				if i == 0 {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", name, c.Type, c.Policy, o, layer, leakage[layer])
				} else {
					fmt.Fprintf(w, "\t\t\t%s\t%s\t%s\n", o, layer, leakage[layer])
				}
			}
		}
	}
	return w.Flush()
}

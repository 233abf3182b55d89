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
	"github.com/pgonion/pgonion/internal/rewrite"
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
		fmt.Fprintf(stdout, "root key generation %d (the catalog is authenticated under generation %d)\n", a.store.Generation(), a.gen)
		if older := olderColumns(snap, a.store.Generation()); len(older) > 0 || a.gen < a.store.Generation() {
			fmt.Fprintf(stdout, "a root key rotation is under way: %d columns still under earlier generations; run 'proxy keys rotate-root' to finish it\n", len(older))
		}
	}
	if err := printRewrites(ctx, stdout, a); err != nil {
		return err
	}
	tables := snap.Tables()
	if len(tables) == 0 {
		fmt.Fprintln(stdout, "no tables are managed by the proxy yet")
		return nil
	}
	why, err := plainReasons(ctx, a)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nCOLUMN\tTYPE\tPOLICY\tONION\tLAYER\tTHE SERVER CAN LEARN")
	for _, t := range tables {
		for _, c := range t.Columns {
			name := t.Schema + "." + t.Name + "." + c.Name
			if c.Policy == catalog.Plain {
				reason := ""
				if r := why[t.Schema+"."+t.Physical+"."+c.Name]; r != "" {
					reason = "; " + r
				}
				fmt.Fprintf(w, "%s\t%s\tplain\t-\t-\teverything (stored unencrypted%s)\n", name, c.Type, reason)
				continue
			}
			for i, o := range onionsInOrder(&c) {
				layer := c.Onions[o]
				if i == 0 {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s%s\n", name, rewrite.DisplayType(&c), c.Policy, o, layer, leakage[layer], onionNote(&c, layer))
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

// plainReasons says, by schema.table.column on the server, why a column
// the proxy stores plain would gain nothing from encryption: the server
// generates its values (serial, identity, sequence default), or enforces a
// foreign key from it to another column.
func plainReasons(ctx context.Context, a *admin) (map[string]string, error) {
	rows, err := a.conn.Query(ctx, `SELECT n.nspname || '.' || c.relname || '.' || a.attname,
		CASE WHEN a.attidentity <> '' THEN 'the server generates its values (an identity)'
			WHEN pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%' THEN 'the server generates its values (a sequence default)'
			ELSE (SELECT 'a foreign key to ' || r.relname || '.' || ra.attname || ', enforced by the server'
				FROM pg_constraint k JOIN pg_class r ON r.oid = k.confrelid
				JOIN pg_attribute ra ON ra.attrelid = k.confrelid AND ra.attnum = k.confkey[array_position(k.conkey, a.attnum)]
				WHERE k.conrelid = c.oid AND k.contype = 'f' AND a.attnum = ANY(k.conkey) ORDER BY k.conname LIMIT 1) END
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pgonion')`)
	if err != nil {
		return nil, fmt.Errorf("reading why plain columns are plain: %w", err)
	}
	out := map[string]string{}
	for rows.Next() {
		var col string
		var why *string
		if err := rows.Scan(&col, &why); err != nil {
			return nil, err
		}
		if why != nil {
			out[col] = *why
		}
	}
	return out, rows.Err()
}

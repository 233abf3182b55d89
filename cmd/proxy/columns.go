package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/recrypt"
	"github.com/pgonion/pgonion/internal/rewrite"
)

func runColumns(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, columnsUsage)
		if len(args) == 0 {
			return usagef("a subcommand is required: list, set or plan")
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "list":
		return runColumnsList(args[1:], stdout)
	case "set":
		return runColumnsSet(args[1:], stdout)
	case "plan":
		return runColumnsPlan(args[1:], stdout)
	}
	return usagef("unknown subcommand %q: want list, set or plan", args[0])
}

const columnsUsage = `Usage:
  proxy columns list --backend DSN [--keystore FILE] [--master-key-file FILE]
  proxy columns set [SCHEMA.]TABLE.COLUMN --policy POLICY [--capabilities LIST] [--join-group NAME] --backend DSN ...
  proxy columns plan --workload FILE [--json] --backend DSN ...

list shows every column the proxy manages, and the policies declared for
tables not created yet.

set declares how a column is stored:
  plain       stored unencrypted (the server sees everything)
  sensitive   encrypted, never below RND: the server can compute nothing on it
  encrypted   encrypted with the onions of --capabilities, each starting at
              its strongest layer and peeled only when a query needs it
              (default: eq, plus ord where the type has it but text; add,
              Paillier, and the ord of text only when declared; text also
              allows search, whose tokens are built the first time a LIKE
              or ILIKE could use them; declared, they exist from the first
              row)

--join-group NAME (encrypted columns with the eq capability) puts the
column in a join group: the columns of one group share their DET and OPE
keys, so the server can evaluate joins (a.x = b.y) and comparisons
between them, and learns which of their values are equal (with ord: how
they are ordered) across the columns. Use it for keys that queries join
on, e.g. orders.customer_id and customers.id. NAME is a lowercase
identifier; --join-group '' means no group.

For a table not created yet, the declaration applies when it is created
through the proxy (or adopted by proxy encrypt); each set replaces the
column's whole declaration (without --join-group the column is in no
group). For a column of a table the proxy manages, set applies the
change at once: removing onions (fewer capabilities, or sensitive) drops
their server-side columns; encrypting a plain column, decrypting an
encrypted one, adding onions or moving it to another join group rewrites
its data online, as proxy encrypt does (resumable, while applications
keep working).

plan shows, without running anything, the onion layers the SELECTs of a
workload file would need, what the server would learn, and which
statements would be refused (see proxy columns plan --help).`

func runColumnsList(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("columns list", flag.ContinueOnError)
	backend := fs.String("backend", "", "libpq `DSN` of the PostgreSQL server (the proxy's own credentials)")
	var k keyFlags
	k.register(fs)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), columnsUsage+"\n\nFlags:"); fs.PrintDefaults() }
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
	declared, err := catalog.Policies(ctx, a.conn, a.macKey, "", "")
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "COLUMN\tTYPE\tPOLICY\tCAPABILITIES\tJOIN GROUP\tONIONS")
	n := 0
	for _, t := range a.snap.Tables() {
		for _, c := range t.Columns {
			n++
			var onions []string
			for _, o := range slices.Sorted(maps.Keys(c.Onions)) {
				onions = append(onions, o+"="+c.Onions[o])
			}
			fmt.Fprintf(w, "%s.%s.%s\t%s\t%s\t%s\t%s\t%s\n", t.Schema, t.Name, c.Name, rewrite.DisplayType(&c), c.Policy, dash(strings.Join(c.Capabilities, ",")), dash(c.JoinGroup), dash(strings.Join(onions, " ")))
		}
	}
	for _, d := range declared {
		if a.snap.Table(d.Schema, d.Table) != nil {
			continue
		}
		n++
		caps := "(all of its type)"
		if d.Capabilities != nil {
			caps = strings.Join(d.Capabilities, ",")
		}
		if d.Policy != catalog.Encrypted {
			caps = "-"
		}
		fmt.Fprintf(w, "%s.%s.%s\t(table not created yet)\t%s\t%s\t%s\t-\n", d.Schema, d.Table, d.Column, d.Policy, caps, dash(d.JoinGroup))
	}
	if n == 0 {
		fmt.Fprintln(stdout, "no columns are managed by the proxy yet")
		return nil
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runColumnsSet(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("columns set", flag.ContinueOnError)
	backend := fs.String("backend", "", "libpq `DSN` of the PostgreSQL server (the proxy's own credentials)")
	policy := fs.String("policy", "", "plain, sensitive or encrypted (required)")
	capsFlag := fs.String("capabilities", "", "for encrypted: comma-separated `list` of eq, ord, add, search (default: eq, and ord but for text; add only declared)")
	joinGroup := fs.String("join-group", "", "for encrypted: the join group `NAME` of the column, whose members share DET and OPE keys ('' for none)")
	var k keyFlags
	k.register(fs)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), columnsUsage+"\n\nFlags:"); fs.PrintDefaults() }
	// The column may come before, between or after the flags (all of
	// which take a value).
	var target string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if !strings.Contains(a, "=") && a != "-h" && a != "--help" && a != "-help" {
				i++
			}
			continue
		}
		if target != "" {
			return usagef("unexpected argument %q", a)
		}
		target = a
		args = append(args[:i:i], args[i+1:]...)
		i--
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	joinGiven := false
	fs.Visit(func(f *flag.Flag) { joinGiven = joinGiven || f.Name == "join-group" })
	parts := strings.Split(target, ".")
	switch len(parts) {
	case 2:
		parts = append([]string{rewrite.DefaultSchema}, parts...)
	case 3:
	default:
		return usagef("want [SCHEMA.]TABLE.COLUMN, got %q", target)
	}
	want := catalog.ColumnPolicy{Schema: parts[0], Table: parts[1], Column: parts[2], Policy: catalog.Policy(*policy)}
	switch want.Policy {
	case catalog.Plain, catalog.Sensitive, catalog.Encrypted:
	case "":
		return usagef("--policy is required: plain, sensitive or encrypted")
	default:
		return usagef("bad --policy %q: want plain, sensitive or encrypted", *policy)
	}
	if *capsFlag != "" {
		if want.Policy != catalog.Encrypted {
			return usagef("--capabilities goes with --policy encrypted")
		}
		for _, c := range strings.Split(*capsFlag, ",") {
			c = strings.TrimSpace(c)
			switch onion.Capability(c) {
			case onion.Capability(onion.KindEq), onion.Capability(onion.KindOrd), onion.Capability(onion.KindAdd), onion.Capability(onion.KindSearch):
			default:
				return usagef("bad capability %q: want eq, ord, add or search", c)
			}
			if !slices.Contains(want.Capabilities, c) {
				want.Capabilities = append(want.Capabilities, c)
			}
		}
	}
	if want.JoinGroup = *joinGroup; want.JoinGroup != "" {
		switch {
		case !catalog.ValidJoinGroupName(want.JoinGroup):
			return usagef("bad --join-group %q: want a lowercase identifier ([a-z_][a-z0-9_]*, at most 63 characters)", want.JoinGroup)
		case want.Policy != catalog.Encrypted:
			return usagef("--join-group goes with --policy encrypted (a %s column shares no keys)", want.Policy)
		case want.Capabilities != nil && !slices.Contains(want.Capabilities, string(onion.KindEq)):
			return usagef("--join-group needs the eq capability: add eq to --capabilities")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := openAdmin(ctx, *backend, &k, true)
	if err != nil {
		return err
	}
	defer a.close(ctx)
	tx, err := a.conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	t := a.snap.Table(want.Schema, want.Table)
	if t == nil {
		var left string // the join group an implicit replacement drops
		if !joinGiven {
			declared, err := catalog.Policies(ctx, tx, a.macKey, want.Schema, want.Table)
			if err != nil {
				return err
			}
			for _, d := range declared {
				if d.Column == want.Column {
					left = d.JoinGroup
				}
			}
		}
		if err := catalog.SetPolicy(ctx, tx, a.macKey, want); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s.%s.%s will be %s when table %s.%s is created through the proxy\n", want.Schema, want.Table, want.Column, describePolicy(want), want.Schema, want.Table)
		if left != "" {
			fmt.Fprintf(stdout, "note: it is no longer in join group %s (each set replaces the whole declaration; add --join-group %s to keep it)\n", left, left)
		}
		return nil
	}
	if c := t.Column(want.Column); c != nil && needsRewrite(c, want, joinGiven) {
		_ = tx.Rollback(ctx)
		return rewriteColumn(a, t, c, want, joinGiven, stdout)
	}
	msg, err := narrowColumn(ctx, tx, a.macKey, t, want, joinGiven)
	if err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	fmt.Fprintln(stdout, msg)
	return nil
}

func describePolicy(p catalog.ColumnPolicy) string {
	s := string(p.Policy)
	if p.Policy == catalog.Encrypted && p.Capabilities != nil {
		s = "encrypted with capabilities " + strings.Join(p.Capabilities, ",")
	}
	if p.JoinGroup != "" {
		s += " in join group " + p.JoinGroup
	}
	return s
}

// needsRewrite reports whether applying want to existing column c needs
// its data rewritten: encrypted or decrypted, given an onion it lacks, or
// moved to another join group.
func needsRewrite(c *catalog.Column, want catalog.ColumnPolicy, setJoinGroup bool) bool {
	switch {
	case (c.Policy == catalog.Plain) != (want.Policy == catalog.Plain):
		return true
	case c.Policy == catalog.Plain:
		return false
	case setJoinGroup && want.JoinGroup != c.JoinGroup:
		return true
	case want.Policy == catalog.Sensitive:
		return false // fewer onions: narrowColumn
	case want.Capabilities == nil:
		return c.Policy == catalog.Sensitive // every capability of its type
	}
	for _, cp := range want.Capabilities {
		if !slices.Contains(c.Capabilities, cp) {
			return true
		}
	}
	return false
}

// rewriteColumn applies want to existing column c by rewriting its data
// online (package recrypt): encrypting it in place, decrypting it, or
// re-encrypting it with other onions or another join group.
func rewriteColumn(a *admin, t *catalog.Table, c *catalog.Column, want catalog.ColumnPolicy, setJoinGroup bool, stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rw, err := newRewriter(a, 32, false, false, os.Stderr)
	if err != nil {
		return err
	}
	if !setJoinGroup && want.Policy == catalog.Encrypted {
		want.JoinGroup = c.JoinGroup
	}
	policy := func(string, string) rewrite.ColumnPolicy {
		return rewrite.ColumnPolicy{Policy: want.Policy, Capabilities: want.Capabilities, JoinGroup: want.JoinGroup}
	}
	var plan *recrypt.Plan
	switch {
	case c.Policy == catalog.Plain:
		plan, err = rw.EncryptColumns(ctx, t.Schema, t.Name, []string{c.Name}, policy)
	case want.Policy == catalog.Plain:
		plan, err = rw.DecryptColumns(ctx, t.Schema, t.Name, []string{c.Name})
	default:
		var to catalog.Column
		if to, err = recrypt.Target(t.Schema, t.Name, *c, policy); err == nil {
			// Its keys stay, unless it moves into another group: it
			// takes that group's keys and format, if it has columns.
			to.KeyVersion, to.Format, to.RootGeneration, to.GroupKeyVersion = c.KeyVersion, c.Format, c.RootGeneration, c.GroupKeyVersion
			if to.JoinGroup != c.JoinGroup {
				to.GroupKeyVersion = 0
				if g, ok := a.snap.Groups()[to.JoinGroup]; ok && to.JoinGroup != "" {
					to.Format, to.RootGeneration, to.GroupKeyVersion = g.Format, g.Newest.Generation, g.Newest.Version
				}
			}
			plan, err = rw.ReshapeColumn(ctx, t.Schema, t.Name, c.Name, to)
		}
	}
	if err != nil {
		return recryptError(err, "columns set", t.Schema+"."+t.Name+"."+c.Name)
	}
	printPlan(stdout, plan, false)
	if c.Policy == catalog.Plain {
		fmt.Fprintf(stdout, "its former plaintext is kept aside as %s%s\nhint: run 'proxy encrypt --yes %s.%s' to drop it\n", c.Name, recrypt.PlaintextSuffix, t.Schema, t.Name)
	}
	return nil
}

// narrowColumn applies a policy to an existing column when that only
// removes onions: it drops their server-side columns and records the
// column's new policy, in tx. The column's join group cannot change: with
// setJoinGroup, want.JoinGroup must be its current group; without, the
// column keeps its group.
func narrowColumn(ctx context.Context, tx pgx.Tx, macKey []byte, t *catalog.Table, want catalog.ColumnPolicy, setJoinGroup bool) (string, error) {
	c := t.Column(want.Column)
	if c == nil {
		return "", fmt.Errorf("table %s.%s has no column %s\nhint: proxy columns list shows the columns", t.Schema, t.Name, want.Column)
	}
	name := t.Schema + "." + t.Name + "." + c.Name
	switch {
	case c.Policy == catalog.Plain && want.Policy == catalog.Plain:
		return name + " is already plain", nil
	case c.Policy == catalog.Plain:
		return "", fmt.Errorf("%s is stored in plaintext; encrypting existing data in place is not supported yet\nhint: create a new table through the proxy and copy the data into it with INSERT ... through the proxy", name)
	case want.Policy == catalog.Plain:
		return "", fmt.Errorf("%s is encrypted; decrypting existing data in place is not supported\nhint: read it through the proxy and write it into a plain table", name)
	}
	if setJoinGroup && want.JoinGroup != c.JoinGroup {
		in := "in no join group"
		if c.JoinGroup != "" {
			in = "in join group " + c.JoinGroup
		}
		return "", fmt.Errorf("%s is %s; changing the join group of an existing column needs its data re-encrypted under other keys, which is not supported yet\n"+
			"hint: declare the join group before creating the table (proxy columns set on a table not created yet), or create a new table through the proxy and copy the data into it", name, in)
	}
	caps := want.Capabilities
	if want.Policy == catalog.Sensitive {
		caps = []string{string(onion.KindEq)}
		if c.Onions[string(onion.KindEq)] != string(onion.LayerRND) {
			return "", fmt.Errorf("%s cannot become sensitive: its Eq onion is at %s already (a UNIQUE or PRIMARY KEY constraint, or a query, needed it)", name, c.Onions[string(onion.KindEq)])
		}
	}
	if caps == nil {
		caps = c.Capabilities
	}
	if err := catalog.CheckJoinGroup(c.JoinGroup, want.Policy, caps); err != nil {
		return "", fmt.Errorf("%s cannot become %s: %v\nhint: a column cannot leave its join group once its table exists", name, describePolicy(catalog.ColumnPolicy{Policy: want.Policy, Capabilities: want.Capabilities}), err)
	}
	for _, cp := range caps {
		if !slices.Contains(c.Capabilities, cp) {
			return "", fmt.Errorf("%s has no %s onion; adding one needs the column's data re-encrypted, which is not supported yet\nhint: declare the capabilities before creating the table (proxy columns set on a table not created yet)", name, cp)
		}
	}
	before, err := rewrite.PhysicalColumns(c)
	if err != nil {
		return "", err
	}
	next := *c
	next.Policy = want.Policy
	next.Capabilities = slices.Clone(caps)
	next.Onions = map[string]string{}
	for k, layer := range c.Onions {
		if k == string(onion.KindEq) || slices.Contains(caps, k) {
			next.Onions[k] = layer
		}
	}
	after, err := rewrite.PhysicalColumns(&next)
	if err != nil {
		return "", err
	}
	var dropped []string
	for _, pc := range before {
		if !slices.ContainsFunc(after, func(o onion.PhysicalColumn) bool { return o.Name == pc.Name }) {
			dropped = append(dropped, pc.Name)
			if _, err := tx.Exec(ctx, "ALTER TABLE "+pgx.Identifier{t.Schema, t.Physical}.Sanitize()+" DROP COLUMN "+pgx.Identifier{pc.Name}.Sanitize()); err != nil {
				return "", fmt.Errorf("dropping %s of %s: %w", pc.Name, name, err)
			}
		}
	}
	nt := *t
	nt.Columns = slices.Clone(t.Columns)
	for i := range nt.Columns {
		if nt.Columns[i].ID == c.ID {
			nt.Columns[i] = next
		}
	}
	if err := catalog.UpdateTable(ctx, tx, macKey, &nt); err != nil {
		return "", err
	}
	msg := fmt.Sprintf("%s is now %s", name, describePolicy(catalog.ColumnPolicy{Policy: want.Policy, Capabilities: caps, JoinGroup: next.JoinGroup}))
	if len(dropped) > 0 {
		msg += "; dropped server columns " + strings.Join(dropped, ", ")
	}
	return msg, nil
}

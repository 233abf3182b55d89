package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// This file holds `proxy columns plan`, CryptDB's training mode: it plans
// a workload's SELECTs against the catalog (rewrite.PlanQuery), without
// running anything, and reports the onion layers they need. It also holds
// the descriptions of what the server learns at each layer, shared with
// `proxy status`.

const planUsage = `Usage:
  proxy columns plan --workload FILE [--json] --backend DSN [--keystore FILE] [--master-key-file FILE]

plan reads a file of SQL statements separated by semicolons (--workload -
reads standard input) and, without running any of them, shows for each
SELECT the onion layers it needs on the server (COLUMN ONION=LAYER, and
whether the onion is at that layer already or would be peeled), or why
the proxy would refuse it (SQLSTATE 0A000), and the columns it would
re-key into a join group first (JOIN-ADJ: a comparison of columns under
different keys). Then, per column, the layers
the whole workload needs and what the server would learn once they are
peeled (equality, order), and the sensitive columns that make statements
be refused.

Nothing is executed, peeled or written: run it before pointing an
application at the proxy, to see what its queries would reveal, and
declare columns sensitive or narrow their capabilities (proxy columns
set) before creating the tables. Tables are looked up in the verified
catalog as the proxy does (unqualified names in schema public). INSERT,
UPDATE and DELETE peel nothing (values are written at the columns'
current layers); other statements are not analysed. The exit status is 0
even when statements would be refused.`

// Results of a planned statement (planStatement.Result).
const (
	planPlanned     = "planned"      // a SELECT the proxy would run
	planRefused     = "refused"      // a SELECT the proxy would refuse
	planPlain       = "plain"        // reads no encrypted table
	planWrite       = "write"        // INSERT (or UPDATE, DELETE whose WHERE needs no peel)
	planNotAnalysed = "not analysed" // any other statement
	planError       = "error"        // the planner failed otherwise
)

// Actions on a needed onion (planNeed.Action).
const (
	actionAlready  = "already" // at the layer in the catalog
	actionPeel     = "peel"    // this statement would peel it
	actionPeeled   = "peeled"  // an earlier statement of the workload would peel it
	actionRefusedS = "refused" // the column is sensitive: never peeled
)

// planReport is the result of `proxy columns plan`, printed as text or
// JSON.
type planReport struct {
	Workload       string          `json:"workload"`
	CatalogVersion int64           `json:"catalog_version"`
	Schema         string          `json:"default_schema"`
	Statements     []planStatement `json:"statements"`
	Counts         map[string]int  `json:"counts"` // statements by result
	// Onions are the onion layers the workload needs, one per onion.
	Onions []planOnion `json:"onions"`
	// Sensitive are the layers refused statements would need of
	// sensitive columns.
	Sensitive []planSensitive `json:"sensitive"`
	Peels     int             `json:"peels"` // how many onions would be peeled
	// Rekeys are the columns the workload would have the proxy re-key
	// into join groups (JOIN-ADJ).
	Rekeys []planRekey `json:"rekeys"`
}

// planRekey is a column a statement would have the proxy re-key into a
// join group, so that the server can compare it with the group's columns.
type planRekey struct {
	Column    string `json:"column"`
	Group     string `json:"join_group"`
	Reveals   string `json:"reveals"`
	Statement int    `json:"statement"`
}

type planStatement struct {
	Number int    `json:"number"` // 1-based, in the file
	Line   int    `json:"line"`   // of its first token in the file
	SQL    string `json:"sql"`    // on one line, without leading comments
	Kind   string `json:"kind"`   // e.g. "Select", "Insert"
	Result string `json:"result"` // planned, refused, plain, write, not analysed, error
	// Needs are the onion layers a planned SELECT needs.
	Needs []planNeed `json:"needs,omitempty"`
	// Code and Message are the error the proxy would answer a refused
	// statement with.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Sensitive are the layers a refused statement would need of
	// sensitive columns (when that is why it is refused).
	Sensitive []planNeed `json:"sensitive,omitempty"`
	Note      string     `json:"note,omitempty"`
	// Rekeys are the re-keyings the statement would wait for.
	Rekeys []planRekey `json:"rekeys,omitempty"`
	// Proxy is what the proxy computes of a SELECT in split execution,
	// as EXPLAIN shows it (rewrite.ExplainSplit).
	Proxy []string `json:"proxy,omitempty"`
}

type planNeed struct {
	Column  string `json:"column"` // schema.table.column
	Onion   string `json:"onion"`  // eq or ord
	Layer   string `json:"layer"`  // det or ope
	Current string `json:"current"`
	// Action: already (at the layer in the catalog), peel (this
	// statement peels it), peeled (by statement PeeledBy, earlier in the
	// workload) or refused (a sensitive column).
	Action   string `json:"action"`
	PeeledBy int    `json:"peeled_by,omitempty"`
}

type planOnion struct {
	Column     string `json:"column"`
	Onion      string `json:"onion"`
	Current    string `json:"current"` // the layer in the catalog now
	Needed     string `json:"needed"`
	Peel       bool   `json:"peel"` // the workload would peel it
	Learns     string `json:"learns"`
	JoinGroup  string `json:"join_group,omitempty"`
	Statements []int  `json:"statements"`
}

type planSensitive struct {
	Column     string `json:"column"`
	Onion      string `json:"onion"`
	Layer      string `json:"layer"`
	Statements []int  `json:"statements"`
}

func runColumnsPlan(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("columns plan", flag.ContinueOnError)
	backend := fs.String("backend", "", "libpq `DSN` of the PostgreSQL server (the proxy's own credentials)")
	workload := fs.String("workload", "", "`file` of SQL statements separated by semicolons ('-' for standard input; required)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	var k keyFlags
	k.register(fs)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), planUsage+"\n\nFlags:"); fs.PrintDefaults() }
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *workload == "" {
		return usagef("--workload FILE is required: a file of the SQL statements to plan")
	}
	var src []byte
	var err error
	if *workload == "-" {
		src, err = io.ReadAll(os.Stdin)
	} else {
		src, err = os.ReadFile(*workload)
	}
	if err != nil {
		return fmt.Errorf("cannot read the workload: %w\nhint: --workload takes a file of SQL statements separated by semicolons", err)
	}
	stmts, err := rewrite.Parse(string(src))
	if err != nil {
		var se *rewrite.SyntaxError
		if errors.As(err, &se) && se.Position > 0 {
			line, col := lineCol(string(src), se.Position)
			return fmt.Errorf("%s:%d:%d: syntax error: %s\nhint: the workload must be valid PostgreSQL SQL, statements separated by semicolons; nothing was planned", *workload, line, col, se.Message)
		}
		return fmt.Errorf("%s: %w\nhint: the workload must be valid PostgreSQL SQL, statements separated by semicolons; nothing was planned", *workload, err)
	}
	if len(stmts) == 0 {
		return fmt.Errorf("%s holds no SQL statement\nhint: --workload takes a file of SQL statements separated by semicolons", *workload)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := openAdmin(ctx, *backend, &k, false)
	if err != nil {
		return err
	}
	defer a.close(ctx)
	r := planWorkload(*workload, string(src), stmts, a.snap)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.print(stdout)
}

// lineCol converts PostgreSQL's 1-based character position in src to a
// line and column.
func lineCol(src string, pos int) (line, col int) {
	line, col = 1, 1
	n := 0
	for _, r := range src {
		if n++; n >= pos {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

type onionKey struct {
	col  catalog.ID
	kind onion.Kind
}

// planWorkload plans every statement of a workload against the catalog
// snapshot, in order: a SELECT finds the onions earlier statements need
// already peeled. Nothing is run.
func planWorkload(name, src string, stmts []rewrite.Statement, snap *catalog.Snapshot) *planReport {
	r := &planReport{Workload: name, CatalogVersion: snap.Version, Schema: rewrite.DefaultSchema, Counts: map[string]int{}, Statements: []planStatement{}, Onions: []planOnion{}, Sensitive: []planSensitive{}, Rekeys: []planRekey{}}
	// regroup holds the join groups the workload's statements would move
	// columns into (JOIN-ADJ): later statements see them.
	regroup := map[catalog.ID]string{}
	table := func(schema, name string) *catalog.Table {
		t := snap.Table(schema, name)
		if t == nil {
			return nil
		}
		nt := *t
		nt.Columns = slices.Clone(t.Columns)
		for i, c := range nt.Columns {
			if g, ok := regroup[c.ID]; ok {
				nt.Columns[i].JoinGroup = g
			}
		}
		return &nt
	}
	lookup := func(schema, name string) *catalog.Table { return table(schema, name) }
	// rekeyed notes the re-keyings err asks for, if it does, in ps and
	// regroup: the statement is then planned again.
	rekeyed := func(err error, ps *planStatement) bool {
		var rk *rewrite.RekeyError
		if !errors.As(err, &rk) || len(ps.Rekeys) > 0 {
			return false
		}
		for _, x := range rk.Rekeys {
			regroup[x.Column.ID] = x.Group
			pr := planRekey{Column: qualified(x.Table, x.Column), Group: x.Group, Reveals: rk.Reveals, Statement: ps.Number}
			ps.Rekeys = append(ps.Rekeys, pr)
			r.Rekeys = append(r.Rekeys, pr)
		}
		return true
	}
	// relaxed is the catalog with sensitive columns taken as encrypted: a
	// statement refused that plans with it is refused because of them.
	relaxed := func(schema, name string) *catalog.Table {
		nt := table(schema, name)
		if nt == nil {
			return nil
		}
		for i := range nt.Columns {
			if nt.Columns[i].Policy == catalog.Sensitive {
				nt.Columns[i].Policy = catalog.Encrypted
			}
		}
		return nt
	}
	layers := map[onionKey]string{} // as the workload leaves them
	peeledBy := map[onionKey]int{}
	onions := map[onionKey]*planOnion{}
	sensitive := map[onionKey]*planSensitive{}
	var onionOrder, sensitiveOrder []onionKey
	for i, st := range stmts {
		ps := planStatement{Number: i + 1, Kind: st.Kind}
		ps.Line, ps.SQL = statementText(src, st)
		addNeeds := func(needs []rewrite.Need) {
			for _, n := range needs {
				k := onionKey{n.Column.ID, n.Kind}
				now := n.Column.Onions[string(n.Kind)]
				cur, ok := layers[k]
				if !ok {
					cur = now
				}
				pn := planNeed{Column: qualified(n.Table, n.Column), Onion: string(n.Kind), Layer: string(n.Layer), Current: now}
				switch {
				case cur != string(n.Layer):
					pn.Action = actionPeel
					layers[k], peeledBy[k] = string(n.Layer), ps.Number
				case peeledBy[k] != 0:
					pn.Action, pn.PeeledBy = actionPeeled, peeledBy[k]
				default:
					pn.Action = actionAlready
				}
				ps.Needs = append(ps.Needs, pn)
				if onions[k] == nil {
					onions[k] = &planOnion{Column: pn.Column, Onion: pn.Onion, Current: now, Needed: pn.Layer, JoinGroup: n.Column.JoinGroup,
						Learns: learns(n.Layer, n.Column.JoinGroup)}
					onionOrder = append(onionOrder, k)
				}
				o := onions[k]
				if g := n.Column.JoinGroup; g != o.JoinGroup {
					// Re-keyed by an earlier statement (JOIN-ADJ).
					o.JoinGroup, o.Learns = g, learns(onion.Layer(o.Needed), g)
				}
				o.Peel = o.Peel || pn.Action == actionPeel
				o.Statements = append(o.Statements, ps.Number)
			}
		}
		switch st.Kind {
		case "Select":
			encrypted := false
			for _, rel := range rewrite.Relations(st) {
				encrypted = encrypted || snap.Table(rel.Schema, rel.Name) != nil
			}
			if !encrypted {
				ps.Result, ps.Note = planPlain, "reads no encrypted table: passed through unchanged"
				break
			}
			sel, err := rewrite.PlanSelect(st, lookup, rewrite.SelectOptions{})
			if rekeyed(err, &ps) {
				sel, err = rewrite.PlanSelect(st, lookup, rewrite.SelectOptions{})
			}
			var rk *rewrite.RekeyError
			if errors.As(err, &rk) {
				// As the proxy runs it when re-keying is not possible.
				sel, err = rewrite.PlanSelect(st, lookup, rewrite.SelectOptions{SplitOverRekey: true})
			}
			if err != nil {
				var pe *pgconn.PgError
				if !errors.As(err, &pe) {
					ps.Result, ps.Message = planError, err.Error()
					break
				}
				ps.Result, ps.Code, ps.Message = planRefused, pe.Code, pe.Message
				if rp, err := rewrite.PlanQuery(reparse(st), relaxed); err == nil {
					for _, n := range rp.Needs {
						if c := snap.ColumnByID(n.Column.ID); c == nil || c.Policy != catalog.Sensitive {
							continue
						}
						pn := planNeed{Column: qualified(n.Table, n.Column), Onion: string(n.Kind), Layer: string(n.Layer), Current: n.Column.Onions[string(n.Kind)], Action: actionRefusedS}
						ps.Sensitive = append(ps.Sensitive, pn)
						k := onionKey{n.Column.ID, n.Kind}
						if sensitive[k] == nil {
							sensitive[k] = &planSensitive{Column: pn.Column, Onion: pn.Onion, Layer: pn.Layer}
							sensitiveOrder = append(sensitiveOrder, k)
						}
						sensitive[k].Statements = append(sensitive[k].Statements, ps.Number)
					}
				}
				break
			}
			ps.Result = planPlanned
			addNeeds(sel.Server.Needs)
			if sel.Proxy != nil {
				ps.Note = "split execution: the server runs FROM and WHERE over the onions, the proxy decrypts the rows and computes the rest"
				ps.Proxy, _ = rewrite.ExplainSplit(sel.Proxy)
			}
		case "Update", "Delete":
			// Their WHERE runs on the onions like a SELECT's.
			var t *catalog.Table
			for _, rel := range rewrite.Relations(st) {
				if t == nil {
					t = table(rel.Schema, rel.Name)
				}
			}
			var needs []rewrite.Need
			var err error
			for try := 0; try < 2; try++ {
				if t != nil && st.Kind == "Update" {
					var up *rewrite.UpdatePlan
					if up, err = rewrite.PlanUpdate(reparse(st), t); err == nil {
						needs = up.Needs
					}
				} else if t != nil {
					var dp *rewrite.DeletePlan
					if dp, err = rewrite.PlanDelete(reparse(st), t); err == nil {
						needs = dp.Needs
					}
				}
				if !rekeyed(err, &ps) {
					break
				}
				t = table(t.Schema, t.Name)
			}
			var rk *rewrite.RekeyError
			if errors.As(err, &rk) {
				err = rk.Refusal()
			}
			var pe *pgconn.PgError
			switch {
			case errors.As(err, &pe):
				ps.Result, ps.Code, ps.Message = planRefused, pe.Code, pe.Message
			case err != nil:
				ps.Result, ps.Message = planError, err.Error()
			case len(needs) > 0:
				ps.Result = planPlanned
				addNeeds(needs)
			default:
				ps.Result, ps.Note = planWrite, "peels nothing: values are written at the columns' current layers"
			}
		case "Insert":
			ps.Result, ps.Note = planWrite, "peels nothing: values are written at the columns' current layers"
		default:
			ps.Result, ps.Note = planNotAnalysed, "not analysed ("+st.Kind+" statement)"
		}
		r.Counts[ps.Result]++
		r.Statements = append(r.Statements, ps)
	}
	byName := func(a, b string, ka, kb onion.Kind) int {
		if c := strings.Compare(a, b); c != 0 {
			return c
		}
		return onionRank(string(ka)) - onionRank(string(kb))
	}
	slices.SortStableFunc(onionOrder, func(a, b onionKey) int {
		return byName(onions[a].Column, onions[b].Column, a.kind, b.kind)
	})
	for _, k := range onionOrder {
		r.Onions = append(r.Onions, *onions[k])
		if onions[k].Peel {
			r.Peels++
		}
	}
	slices.SortStableFunc(sensitiveOrder, func(a, b onionKey) int {
		return byName(sensitive[a].Column, sensitive[b].Column, a.kind, b.kind)
	})
	for _, k := range sensitiveOrder {
		r.Sensitive = append(r.Sensitive, *sensitive[k])
	}
	return r
}

// reparse returns a fresh parse of a statement (PlanQuery rewrites the
// tree it is given).
func reparse(st rewrite.Statement) rewrite.Statement {
	if stmts, err := rewrite.Parse(st.SQL); err == nil && len(stmts) == 1 {
		return stmts[0]
	}
	return st
}

func qualified(t *catalog.Table, c *catalog.Column) string {
	return t.Schema + "." + t.Name + "." + c.Name
}

// statementText returns the line of a statement's first token in src and
// its text on one line, without leading comments, shortened.
func statementText(src string, st rewrite.Statement) (int, string) {
	start := min(max(int(st.Tree.StmtLocation), 0), len(src))
	end := len(src)
	if st.Tree.StmtLen > 0 {
		end = min(start+int(st.Tree.StmtLen), len(src))
	}
	off := start + skipComments(src[start:end])
	text := strings.Join(strings.Fields(src[off:end]), " ")
	if text == "" {
		off, text = start, strings.Join(strings.Fields(st.SQL), " ")
	}
	if utf8.RuneCountInString(text) > 120 {
		text = string([]rune(text)[:117]) + "..."
	}
	return 1 + strings.Count(src[:off], "\n"), text
}

// skipComments returns the length of the white space and comments that
// begin s.
func skipComments(s string) int {
	i := 0
	for {
		rest := strings.TrimLeft(s[i:], " \t\r\n\f\v")
		i = len(s) - len(rest)
		switch {
		case strings.HasPrefix(rest, "--"):
			j := strings.IndexByte(rest, '\n')
			if j < 0 {
				return len(s)
			}
			i += j + 1
		case strings.HasPrefix(rest, "/*"):
			j := strings.Index(rest, "*/")
			if j < 0 {
				return len(s)
			}
			i += j + 2
		default:
			return i
		}
	}
}

// print writes the report as text.
func (r *planReport) print(out io.Writer) error {
	fmt.Fprintf(out, "workload %s: %s, planned against catalog version %d (unqualified tables in schema %s); nothing was run or peeled\n",
		r.Workload, plural(len(r.Statements), "statement"), r.CatalogVersion, r.Schema)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, s := range r.Statements {
		fmt.Fprintf(w, "\n[%d] line %d: %s\n", s.Number, s.Line, s.SQL)
		for _, x := range s.Rekeys {
			fmt.Fprintf(w, "    re-keys\t%s\tinto join group %s\t(JOIN-ADJ, before it runs)\n", x.Column, x.Group)
		}
		switch s.Result {
		case planPlanned:
			if s.Note != "" {
				fmt.Fprintf(w, "    %s\n", s.Note)
			}
			for _, l := range s.Proxy {
				fmt.Fprintf(w, "      %s\n", l)
			}
			if len(s.Needs) == 0 {
				fmt.Fprintln(w, "    needs no onion peeled: runs at the current layers")
			}
			for _, n := range s.Needs {
				fmt.Fprintf(w, "    needs\t%s\t%s=%s\t%s\n", n.Column, n.Onion, n.Layer, n.describe())
			}
		case planRefused:
			fmt.Fprintf(w, "    refused (%s): %s\n", s.Code, s.Message)
			for _, n := range s.Sensitive {
				fmt.Fprintf(w, "    sensitive\t%s\t%s=%s\tnever peeled (now %s)\n", n.Column, n.Onion, n.Layer, n.Current)
			}
		case planError:
			fmt.Fprintf(w, "    cannot be planned: %s\n", s.Message)
		default:
			fmt.Fprintf(w, "    %s\n", s.Note)
		}
	}
	var counts []string
	for _, res := range []string{planPlanned, planRefused, planPlain, planWrite, planNotAnalysed, planError} {
		if n := r.Counts[res]; n > 0 {
			what := res
			if res == planPlain {
				what = "without encrypted tables"
			}
			counts = append(counts, fmt.Sprintf("%d %s", n, what))
		}
	}
	fmt.Fprintf(w, "\nSummary: %s (%s).\n", plural(len(r.Statements), "statement"), strings.Join(counts, ", "))
	if len(r.Onions) == 0 {
		fmt.Fprintln(w, "The workload needs no onion below its strongest layer: the server would learn nothing more.")
	} else {
		fmt.Fprintln(w, "\nOnion layers the workload needs:")
		fmt.Fprintln(w, "COLUMN\tONION\tNOW\tNEEDS\tCHANGE\tTHE SERVER WOULD LEARN\tSTATEMENTS")
		for _, o := range r.Onions {
			change := "none (already at " + o.Needed + ")"
			if o.Peel {
				change = "peel " + o.Current + " -> " + o.Needed
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Column, o.Onion, o.Current, o.Needed, change, o.Learns, statementList(o.Statements))
		}
	}
	if len(r.Sensitive) > 0 {
		fmt.Fprintln(w, "\nSensitive columns (never peeled: the statements needing them are refused):")
		fmt.Fprintln(w, "COLUMN\tONION\tWOULD NEED\tTHE SERVER WOULD HAVE LEARNED\tREFUSED STATEMENTS")
		for _, s := range r.Sensitive {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.Column, s.Onion, s.Layer, learnsWord(onion.Layer(s.Layer)), statementList(s.Statements))
		}
	}
	if len(r.Rekeys) > 0 {
		fmt.Fprintln(w, "\nColumns the proxy would re-key into join groups (JOIN-ADJ), and what the server would learn:")
		fmt.Fprintln(w, "COLUMN\tJOIN GROUP\tSTATEMENT\tTHE SERVER WOULD LEARN")
		for _, x := range r.Rekeys {
			fmt.Fprintf(w, "%s\t%s\t[%d]\t%s\n", x.Column, x.Group, x.Statement, x.Reveals)
		}
	}
	var refused []int
	for _, s := range r.Statements {
		if s.Result == planRefused {
			refused = append(refused, s.Number)
		}
	}
	if len(refused) > 0 {
		fmt.Fprintf(w, "\nRefused: %s (the proxy would answer them with the error shown).\n", statementList(refused))
	}
	fmt.Fprintf(w, "\n%s would be peeled and %s re-keyed by this workload; the catalog is unchanged.\n", plural(r.Peels, "onion"), plural(len(r.Rekeys), "column"))
	return w.Flush()
}

func (n planNeed) describe() string {
	switch n.Action {
	case actionAlready:
		return "already at " + n.Layer
	case actionPeeled:
		return fmt.Sprintf("peeled by [%d] earlier in the workload (now %s)", n.PeeledBy, n.Current)
	}
	return "would be peeled: " + n.Current + " -> " + n.Layer
}

func statementList(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = "[" + strconv.Itoa(n) + "]"
	}
	return strings.Join(s, " ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

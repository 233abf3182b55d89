package rewrite

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/ir"
)

// subqueryLookup knows acc (encrypted columns) and plain_t (no encrypted
// column); other tables are unknown to the proxy.
func subqueryLookup(t *testing.T) TableLookup {
	t.Helper()
	tables := map[string]*catalog.Table{}
	for _, sql := range []string{
		"CREATE TABLE acc (id int, owner text, balance numeric(12,2), note_plain text)",
		"CREATE TABLE plain_t (id int, x_plain text)",
	} {
		stmts, err := Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanCreate(stmts[0], DefaultSchema, testPolicy)
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.Table.Columns {
			p.Table.Columns[i].ID = catalog.NewID()
		}
		tables[p.Table.Name] = p.Table
	}
	return func(schema, name string) *catalog.Table {
		if schema != DefaultSchema {
			return nil
		}
		return tables[name]
	}
}

func parseOne(t *testing.T, sql string) Statement {
	t.Helper()
	stmts, err := Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	return stmts[0]
}

// TestSubqueries checks which subqueries the proxy evaluates ahead of
// their statement: uncorrelated ones over encrypted tables, outermost
// only, with the CTEs they read.
func TestSubqueries(t *testing.T) {
	lookup := subqueryLookup(t)
	kinds := map[SubqueryKind]string{SubqueryScalar: "scalar", SubqueryIn: "in", SubqueryExists: "exists", SubqueryLookup: "lookup"}
	for _, tc := range []struct {
		sql  string
		want []string // "kind: subquery statement"
	}{
		{"SELECT id FROM acc WHERE balance > (SELECT avg(balance) FROM acc)",
			[]string{"scalar: SELECT avg(balance) FROM acc"}},
		{"SELECT id FROM acc WHERE owner IN (SELECT owner FROM acc WHERE note_plain LIKE 'a%')",
			[]string{"in: SELECT owner FROM acc WHERE note_plain LIKE 'a%'"}},
		{"SELECT id FROM acc WHERE NOT EXISTS (SELECT 1 FROM acc WHERE owner = 'x')",
			[]string{"exists: SELECT 1 FROM acc WHERE owner = 'x'"}},
		// Correlated by equality, aggregates NULL over no rows:
		// decorrelated, grouped by the inner side of each equality.
		{"SELECT id FROM acc a WHERE balance > (SELECT 0.5 * avg(b.balance) FROM acc b WHERE b.owner = a.owner)",
			[]string{"lookup: SELECT b.owner, 0.5 * avg(b.balance) FROM acc b GROUP BY b.owner"}},
		{"SELECT id FROM plain_t p WHERE id < (SELECT max(balance) - 1 FROM acc WHERE p.x_plain = owner AND id = p.id AND balance > 0)",
			[]string{"lookup: SELECT owner, id, max(balance) - 1 FROM acc WHERE balance > 0 GROUP BY owner, id"}},
		// The enclosing query's conditions restrict the keys (a magic set).
		{"SELECT id FROM acc a WHERE note_plain = 'x' AND balance > (SELECT avg(b.balance) FROM acc b WHERE b.owner = a.owner)",
			[]string{"lookup: SELECT b.owner, avg(b.balance) FROM acc b WHERE b.owner IN (SELECT a.owner FROM acc a WHERE note_plain = 'x') GROUP BY b.owner"}},
		// A key of a level further out than the enclosing SELECT.
		{"SELECT id FROM acc a WHERE id IN (SELECT p.id FROM plain_t p WHERE p.id < (SELECT max(b.balance) FROM acc b WHERE b.owner = a.owner))", nil},
		// count() is 0 over no rows, not NULL: not decorrelated.
		{"SELECT id FROM acc a WHERE id < (SELECT count(*) FROM acc b WHERE b.owner = a.owner)", nil},
		{"SELECT id FROM acc a WHERE id < (SELECT count(b.id) + 1 FROM acc b WHERE b.owner = a.owner)", nil},
		// A column outside aggregates, a correlation that is not an
		// equality, or a correlated IN: not decorrelated.
		{"SELECT id FROM acc a WHERE balance > (SELECT avg(b.balance) + a.balance FROM acc b WHERE b.owner = a.owner)", nil},
		{"SELECT id FROM acc a WHERE balance > (SELECT avg(b.balance) FROM acc b WHERE b.balance < a.balance)", nil},
		{"SELECT id FROM acc a WHERE owner IN (SELECT b.owner FROM acc b WHERE b.id = a.id)", nil},
		// Unqualified outer reference: x_plain is not a column of acc.
		{"SELECT id FROM plain_t WHERE id IN (SELECT id FROM acc WHERE owner = x_plain)", nil},
		// No encrypted table: the server evaluates it inside the statement.
		{"SELECT id FROM acc WHERE id IN (SELECT id FROM plain_t)", nil},
		// A table the proxy does not know: its columns cannot be resolved.
		{"SELECT id FROM acc WHERE id IN (SELECT id FROM acc, unknown_t WHERE owner = name)", nil},
		// Outermost only; a CTE of the statement goes with the subquery.
		{"WITH c AS (SELECT owner, balance FROM acc) SELECT id FROM acc WHERE balance < (SELECT max(balance) FROM c WHERE owner IN (SELECT owner FROM acc))",
			[]string{"scalar: WITH c AS (SELECT owner, balance FROM acc) SELECT max(balance) FROM c WHERE owner IN (SELECT owner FROM acc)"}},
		// Multi-column IN is not a single-column IN.
		{"SELECT id FROM acc WHERE (id, owner) IN (SELECT id, owner FROM acc)", nil},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			var got []string
			for _, s := range Subqueries(ptr(parseOne(t, tc.sql)), lookup) {
				sql, err := s.Statement.Deparse()
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, kinds[s.Kind]+": "+sql)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestSubstitute(t *testing.T) {
	lookup := subqueryLookup(t)
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		sql    string
		result ir.SubqueryResult
		want   string // deparsed statement, or "ERROR code"
	}{
		{"SELECT id FROM acc WHERE balance > (SELECT avg(balance) FROM acc)",
			ir.SubqueryResult{Rows: [][]*string{{s("12.50")}}, Types: []string{"numeric"}, Secret: true},
			"SELECT id FROM acc WHERE balance > '12.50'::numeric"},
		{"SELECT id FROM acc WHERE balance > (SELECT avg(balance) FROM acc)",
			ir.SubqueryResult{Types: []string{"numeric"}, Secret: true},
			"SELECT id FROM acc WHERE balance > NULL::numeric"},
		{"SELECT id FROM acc WHERE balance > (SELECT balance FROM acc)",
			ir.SubqueryResult{Rows: [][]*string{{s("1")}, {s("2")}}, Types: []string{"numeric"}, Secret: true},
			"ERROR 21000"},
		{"SELECT id FROM acc WHERE owner IN (SELECT owner FROM acc)",
			ir.SubqueryResult{Rows: [][]*string{{s("ann")}, {nil}}, Types: []string{"text"}, Secret: true},
			"SELECT id FROM acc WHERE owner IN ('ann'::text, NULL::text)"},
		{"SELECT id FROM acc WHERE owner NOT IN (SELECT owner FROM acc)",
			ir.SubqueryResult{Types: []string{"text"}, Secret: true},
			"SELECT id FROM acc WHERE NOT false"},
		{"SELECT id FROM acc WHERE EXISTS (SELECT 1 FROM acc)",
			ir.SubqueryResult{Rows: [][]*string{{s("1")}}, Types: []string{"int4"}},
			"SELECT id FROM acc WHERE true"},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			st := parseOne(t, tc.sql)
			subs := Subqueries(&st, lookup)
			if len(subs) != 1 {
				t.Fatalf("found %d subqueries, want 1", len(subs))
			}
			var got string
			if err := subs[0].Substitute(tc.result); err != nil {
				var pe *pgconn.PgError
				if !errors.As(err, &pe) {
					t.Fatalf("Substitute: %v", err)
				}
				got = "ERROR " + pe.Code
			} else {
				sql, err := st.Deparse()
				if err != nil {
					t.Fatal(err)
				}
				// Deparse names the types as written: pg_catalog.numeric.
				got = strings.ReplaceAll(sql, "pg_catalog.", "")
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestSecretConstantsStayEncrypted checks that a subquery's secret
// result reaches the rewritten statement only as a ciphertext: compared
// with an encrypted column it becomes a hole; anywhere else the planner
// refuses the statement.
func TestSecretConstantsStayEncrypted(t *testing.T) {
	lookup := subqueryLookup(t)
	v := "ann"
	for _, tc := range []struct {
		sql    string
		refuse bool
	}{
		{"SELECT id FROM acc WHERE owner = (SELECT max(owner) FROM acc)", false},
		{"SELECT id FROM acc WHERE note_plain = (SELECT max(owner) FROM acc)", true},
		{"SELECT id, (SELECT max(owner) FROM acc) FROM acc", true},
		{"SELECT id FROM plain_t WHERE x_plain IN (SELECT owner FROM acc)", true},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			st := parseOne(t, tc.sql)
			subs := Subqueries(&st, lookup)
			if len(subs) != 1 {
				t.Fatalf("found %d subqueries, want 1", len(subs))
			}
			if err := subs[0].Substitute(ir.SubqueryResult{Rows: [][]*string{{&v}}, Types: []string{"text"}, Secret: true}); err != nil {
				t.Fatal(err)
			}
			plan, err := PlanQuery(st, lookup)
			if tc.refuse {
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != "0A000" {
					t.Fatalf("PlanQuery = %v, want a 0A000 refusal", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("PlanQuery: %v", err)
			}
			vals := make([]*pg_query.Node, len(plan.Holes))
			for i := range vals {
				vals[i] = ParamNode(i + 1)
			}
			sql, err := plan.Render(vals)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(sql, "'ann'") {
				t.Errorf("the secret reached the server in plaintext: %s", sql)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestLookupPlan checks that a decorrelated subquery becomes a lookup
// the proxy evaluates in split execution, keyed by the enclosing
// query's columns, and never reaches the server.
func TestLookupPlan(t *testing.T) {
	lookup := subqueryLookup(t)
	st := parseOne(t, "SELECT id FROM acc a WHERE balance > (SELECT 0.5 * avg(b.balance) FROM acc b WHERE b.owner = a.owner) ORDER BY id")
	subs := Subqueries(&st, lookup)
	if len(subs) != 1 || subs[0].Kind != SubqueryLookup {
		t.Fatalf("Subqueries = %v, want one lookup", subs)
	}
	v, k := "2.5", "ann"
	res := ir.SubqueryResult{Rows: [][]*string{{&k, &v}}, Types: []string{"text", "numeric"}, Secret: true}
	if err := subs[0].Substitute(ir.SubqueryResult{Types: []string{"numeric"}}); err == nil {
		t.Error("Substitute accepted a result without the key columns")
	}
	if err := subs[0].Substitute(res); err != nil {
		t.Fatal(err)
	}
	if _, err := PlanQuery(st.Clone(), lookup); err == nil {
		t.Fatal("PlanQuery accepted a statement with a lookup")
	}
	agg, err := PlanAggregate(st.Clone(), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if !agg.Ungrouped || agg.Where == nil {
		t.Fatalf("plan: ungrouped %v, where %v; want an ungrouped plan with a proxy-checked WHERE", agg.Ungrouped, agg.Where)
	}
	var found *ir.Expr
	var walk func(e *ir.Expr)
	walk = func(e *ir.Expr) {
		if e == nil {
			return
		}
		if e.Kind == ir.ExprLookup {
			found = e
		}
		for _, a := range e.Args {
			walk(a)
		}
	}
	walk(agg.Where)
	if found == nil || found.Lookup == nil || found.Lookup.Keys != 1 || len(found.Args) != 1 || found.Args[0].Kind != ir.ExprInput {
		t.Fatalf("WHERE has no lookup keyed by an input: %+v", found)
	}
	sql, err := agg.Inner.Render(make([]*pg_query.Node, 0))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sql, lookupFunc) || strings.Contains(sql, "2.5") {
		t.Errorf("the server's statement holds the lookup: %s", sql)
	}
}

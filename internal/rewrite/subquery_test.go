package rewrite

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
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
	kinds := map[SubqueryKind]string{SubqueryScalar: "scalar", SubqueryIn: "in", SubqueryExists: "exists"}
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
		// Correlated: a reference to the outer acc.
		{"SELECT id FROM acc a WHERE balance > (SELECT avg(b.balance) FROM acc b WHERE b.owner = a.owner)", nil},
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
			for _, s := range Subqueries(parseOne(t, tc.sql), lookup) {
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
		result SubqueryResult
		want   string // deparsed statement, or "ERROR code"
	}{
		{"SELECT id FROM acc WHERE balance > (SELECT avg(balance) FROM acc)",
			SubqueryResult{Rows: [][]*string{{s("12.50")}}, Type: "numeric", Secret: true},
			"SELECT id FROM acc WHERE balance > '12.50'::numeric"},
		{"SELECT id FROM acc WHERE balance > (SELECT avg(balance) FROM acc)",
			SubqueryResult{Type: "numeric", Secret: true},
			"SELECT id FROM acc WHERE balance > NULL::numeric"},
		{"SELECT id FROM acc WHERE balance > (SELECT balance FROM acc)",
			SubqueryResult{Rows: [][]*string{{s("1")}, {s("2")}}, Type: "numeric", Secret: true},
			"ERROR 21000"},
		{"SELECT id FROM acc WHERE owner IN (SELECT owner FROM acc)",
			SubqueryResult{Rows: [][]*string{{s("ann")}, {nil}}, Type: "text", Secret: true},
			"SELECT id FROM acc WHERE owner IN ('ann'::text, NULL::text)"},
		{"SELECT id FROM acc WHERE owner NOT IN (SELECT owner FROM acc)",
			SubqueryResult{Type: "text", Secret: true},
			"SELECT id FROM acc WHERE NOT false"},
		{"SELECT id FROM acc WHERE EXISTS (SELECT 1 FROM acc)",
			SubqueryResult{Rows: [][]*string{{s("1")}}, Type: "int4"},
			"SELECT id FROM acc WHERE true"},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			st := parseOne(t, tc.sql)
			subs := Subqueries(st, lookup)
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
			subs := Subqueries(st, lookup)
			if len(subs) != 1 {
				t.Fatalf("found %d subqueries, want 1", len(subs))
			}
			if err := subs[0].Substitute(SubqueryResult{Rows: [][]*string{{&v}}, Type: "text", Secret: true}); err != nil {
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

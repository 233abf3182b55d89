package rewrite

import (
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pgonion/pgonion/internal/catalog"
)

// BenchmarkPlanSelect is what the proxy spends planning one statement of
// the simple protocol before any cryptography: parse, plan, render. Each
// sysbench or pgbench -M simple query pays it once.
func BenchmarkPlanSelect(b *testing.B) {
	stmts, err := Parse("CREATE TABLE sbtest1 (id serial PRIMARY KEY, k int NOT NULL DEFAULT 0, c char(120) NOT NULL DEFAULT '', pad char(60) NOT NULL DEFAULT '')")
	if err != nil {
		b.Fatal(err)
	}
	ct, err := PlanCreate(stmts[0], DefaultSchema, testPolicy)
	if err != nil {
		b.Fatal(err)
	}
	for i := range ct.Table.Columns {
		ct.Table.Columns[i].ID = catalog.NewID()
	}
	lookup := func(schema, name string) *catalog.Table {
		if schema == DefaultSchema && name == "sbtest1" {
			return ct.Table
		}
		return nil
	}
	for _, q := range []struct{ name, sql string }{
		{"point", "SELECT c FROM sbtest1 WHERE id = 4711"},
		{"range", "SELECT c FROM sbtest1 WHERE id BETWEEN 4711 AND 4810"},
		{"eq", "SELECT id, pad FROM sbtest1 WHERE k = 5012"},
	} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				stmts, err := Parse(q.sql)
				if err != nil {
					b.Fatal(err)
				}
				sel, err := PlanSelect(stmts[0], lookup, SelectOptions{})
				if err != nil {
					b.Fatal(err)
				}
				p := sel.Server
				vals := make([]*pg_query.Node, len(p.Holes))
				for i := range vals {
					vals[i] = ByteaLiteral([]byte{byte(i)})
				}
				if _, err := p.Render(vals); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInspect is one walk over a statement's parse tree; planning a
// statement walks it several times.
func BenchmarkInspect(b *testing.B) {
	stmts, err := Parse("SELECT c, sum(k) FROM sbtest1 WHERE id BETWEEN 4711 AND 4810 AND pad LIKE 'a%' GROUP BY c ORDER BY c LIMIT 10")
	if err != nil {
		b.Fatal(err)
	}
	m := stmts[0].Tree.ProtoReflect()
	for b.Loop() {
		n := 0
		inspect(m, func(protoreflect.Message) bool { n++; return true })
		if n < 20 {
			b.Fatalf("walked %d messages", n)
		}
	}
}

// BenchmarkRMWRender is the UPDATE of one row a read-modify-write sends
// in the simple protocol, once its new cells are computed.
func BenchmarkRMWRender(b *testing.B) {
	stmts, err := Parse("CREATE TABLE pgbench_accounts (aid int NOT NULL, bid int, abalance int, filler char(84))")
	if err != nil {
		b.Fatal(err)
	}
	ct, err := PlanCreate(stmts[0], DefaultSchema, testPolicy)
	if err != nil {
		b.Fatal(err)
	}
	upd, err := Parse("UPDATE pgbench_accounts SET abalance = abalance * 2 WHERE aid = 17")
	if err != nil {
		b.Fatal(err)
	}
	p, err := PlanUpdateRMW(upd[0], ct.Table, nil)
	if err != nil || p == nil {
		b.Fatalf("plan: %v %v", p, err)
	}
	row := RMWRow{CTID: "(1,2)", XMin: "1234", Cells: []Cells{{}}}
	_, pcs, err := columnLayout(p.Sets[0].Column)
	if err != nil {
		b.Fatal(err)
	}
	for i, pc := range pcs {
		row.Cells[0][pc.Suffix] = ByteaLiteral([]byte{byte(i), 1, 2, 3})
	}
	for b.Loop() {
		if _, err := p.Render([]RMWRow{row}, true); err != nil {
			b.Fatal(err)
		}
	}
}

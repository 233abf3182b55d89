package rewrite

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
)

// dmlTestCatalogTable is the catalog table of dmlTestTable (PlanCreate is
// pure: no server needed).
func dmlTestCatalogTable(t testing.TB) *catalog.Table {
	t.Helper()
	stmts, err := Parse(dmlTestTable)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanCreate(stmts[0], "public", testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	return p.Table
}

// dmlRenderAny plans and renders an INSERT, UPDATE or DELETE with stand-in
// cells; ok is false for other statements and refusals.
func dmlRenderAny(t testing.TB, st Statement, table *catalog.Table) (sql string, ok bool) {
	cells := func(holes []Hole) []Cells {
		out := make([]Cells, len(holes))
		for i := range holes {
			out[i] = Cells{"_eq": ByteaLiteral([]byte{byte(i)}), "_srch": Int8ArrayLiteral([]int64{int64(i)})}
		}
		return out
	}
	var err error
	switch st.Kind {
	case "Insert":
		var p *InsertPlan
		if p, err = PlanInsert(st, table); err == nil {
			sql, err = p.Render(cells(p.Holes), dmlTestInsertSalts(p))
		}
	case "Update":
		var p *UpdatePlan
		if p, err = PlanUpdate(st, table); err == nil {
			if err = FillHoles(p.Where, testHoleValues(p.Where)); err == nil {
				sql, err = p.Render(cells(p.Holes), dmlTestSalt(0xee))
			}
		}
	case "Delete":
		var p *DeletePlan
		if p, err = PlanDelete(st, table); err == nil {
			sql, err = p.Render(testHoleValues(p.Where))
		}
	default:
		return "", false
	}
	if err != nil {
		if _, refused := err.(interface{ SQLState() string }); !refused {
			t.Fatalf("%s: %v", st.SQL, err)
		}
		return "", false
	}
	return sql, true
}

// TestRenderConcurrently renders one plan from many goroutines (run with
// -race): Render must not modify its plan, so every rendering is the same.
func TestRenderConcurrently(t *testing.T) {
	table := dmlTestCatalogTable(t)
	parse := func(sql string) Statement {
		stmts, err := Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		return stmts[0]
	}
	up, err := PlanUpdate(parse("UPDATE acc SET owner = 'a', note_plain = 'b' WHERE id = 1 RETURNING *"), table)
	if err != nil {
		t.Fatal(err)
	}
	ip, err := PlanInsert(parse("INSERT INTO acc (id, owner) VALUES (1, 'o'), (2, $1) ON CONFLICT (id) DO UPDATE SET owner = 'k', n = EXCLUDED.n RETURNING owner"), table)
	if err != nil {
		t.Fatal(err)
	}
	render := func(i int) (string, string) {
		cells := func(holes []Hole) []Cells {
			out := make([]Cells, len(holes))
			for h := range holes {
				out[h] = Cells{"_eq": ByteaLiteral([]byte{byte(i), byte(h)})}
			}
			return out
		}
		u, err := up.Render(cells(up.Holes), dmlTestSalt(byte(i)))
		if err != nil {
			t.Error(err)
		}
		in, err := ip.Render(cells(ip.Holes), []*pg_query.Node{dmlTestSalt(1), dmlTestSalt(2), dmlTestSalt(byte(i))})
		if err != nil {
			t.Error(err)
		}
		return u, in
	}
	var want [8][2]string
	for i := range want {
		want[i][0], want[i][1] = render(i)
	}
	var wg sync.WaitGroup
	for i := range want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if u, in := render(i); u != want[i][0] || in != want[i][1] {
					t.Errorf("rendering %d differs under concurrency:\n%s\n%s", i, u, in)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// FuzzPlanDML: whatever INSERT, UPDATE or DELETE the planners accept, the
// rendered server SQL parses back to one statement of the same kind.
func FuzzPlanDML(f *testing.F) {
	for _, name := range []string{"update.txt", "delete.txt", "conflict.txt"} {
		in, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
			f.Add(line)
		}
	}
	table := dmlTestCatalogTable(f)
	f.Fuzz(func(t *testing.T, sql string) {
		stmts, err := Parse(sql)
		if err != nil {
			return
		}
		for _, st := range stmts {
			// Deparser limits ($0 deparses as ?) are not the planners'.
			if orig, err := st.Deparse(); err != nil {
				continue
			} else if _, err := Parse(orig); err != nil {
				continue
			}
			out, ok := dmlRenderAny(t, st, table)
			if !ok {
				continue
			}
			again, err := Parse(out)
			if err != nil || len(again) != 1 || again[0].Kind != st.Kind {
				t.Fatalf("%q rewrites to %q, which does not parse back: %v", st.SQL, out, err)
			}
		}
	})
}

// testHoleValues are placeholder ciphertexts for comparison holes.
func testHoleValues(holes []CmpHole) []*pg_query.Node {
	vals := make([]*pg_query.Node, len(holes))
	for i, h := range holes {
		if h.Kind == HoleTokens {
			vals[i] = Int8ArrayLiteral([]int64{int64(i)})
		} else {
			vals[i] = ByteaLiteral([]byte{byte(i)})
		}
	}
	return vals
}

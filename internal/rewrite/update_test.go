package rewrite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgtest"
)

// dmlTestTable is the table of the INSERT, UPDATE and DELETE tests: owner
// has eq and search onions, balance eq, ord and add, email a DET Eq onion
// (UNIQUE), n an exact-value copy (n__val).
const dmlTestTable = "CREATE TABLE acc (id int PRIMARY KEY, owner text, balance numeric(12,2), note_plain text, email text UNIQUE, n numeric)"

// dmlTestCiphertext is a stand-in ciphertext: deterministic per column,
// onion and value, so that equal values of a DET column collide like real
// ciphertexts, and short, so golden files stay readable.
func dmlTestCiphertext(column, suffix, value string) []byte {
	sum := sha256.Sum256([]byte(column + "\x00" + suffix + "\x00" + value))
	return sum[:4]
}

// dmlTestCells returns stand-in cells for holes. A hole with a parameter
// gets the client's $n as its Eq cell (the test binds a stand-in
// ciphertext to it, as the engine would bind its own parameter) and
// literals in the other onions; a NULL hole gets no cells.
func dmlTestCells(t *testing.T, holes []Hole) []Cells {
	t.Helper()
	cells := make([]Cells, len(holes))
	for i, h := range holes {
		cells[i] = Cells{}
		if h.Const == nil && h.Param == 0 {
			continue
		}
		value := "$" + strconv.Itoa(h.Param)
		if h.Const != nil {
			value = *h.Const
		}
		_, layout, err := columnLayout(h.Column)
		if err != nil {
			t.Fatal(err)
		}
		for _, pc := range layout {
			ct := dmlTestCiphertext(h.Column.Name, pc.Suffix, value)
			switch {
			case pc.Suffix == SaltSuffix:
			case h.Param > 0 && pc.Suffix == "_eq":
				cells[i][pc.Suffix] = ParamNode(h.Param)
			case pc.Kind == onion.KindSearch:
				cells[i][pc.Suffix] = Int8ArrayLiteral([]int64{int64(ct[0]), -int64(ct[1])})
			default:
				cells[i][pc.Suffix] = ByteaLiteral(ct)
			}
		}
	}
	return cells
}

// dmlTestSalt is a stand-in salt (short, for readable golden files).
// dmlTestSalt is a stand-in salt: 16 bytes b (the physical table checks
// the length).
func dmlTestSalt(b byte) *pg_query.Node { return ByteaLiteral(bytes.Repeat([]byte{b}, 16)) }

// dmlTestArgs returns the arguments of a rendered statement: args for the
// client's parameters, where those of holes are replaced by stand-in
// ciphertexts (their Eq cell, see dmlTestCells).
func dmlTestArgs(holes []Hole, args []any) []any {
	args = slices.Clone(args)
	for _, h := range holes {
		if h.Param > 0 {
			for len(args) < h.Param {
				args = append(args, nil)
			}
			args[h.Param-1] = dmlTestCiphertext(h.Column.Name, "_eq", "$"+strconv.Itoa(h.Param))
		}
	}
	return args
}

// dmlParseArgs reads the "-- args: 1, x" comment of a test line: integers
// or strings.
func dmlParseArgs(line string) []any {
	_, list, ok := strings.Cut(line, "-- args:")
	if !ok {
		return nil
	}
	var args []any
	for _, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		if n, err := strconv.Atoi(a); err == nil {
			args = append(args, n)
		} else {
			args = append(args, a)
		}
	}
	return args
}

func describeHoles(holes []Hole) string {
	var hs []string
	for _, h := range holes {
		hs = append(hs, holeString(h))
	}
	return strings.Join(hs, " ")
}

func describeProjection(p *Projection) string {
	var cols []string
	for _, c := range p.Columns {
		s := fmt.Sprintf("%q <- %d", c.Name, c.Server)
		if c.Column != nil {
			s += " decrypt " + c.Column.Name
		}
		if c.Val >= 0 {
			s += fmt.Sprintf(" val %d", c.Val)
		}
		if c.Salt >= 0 {
			s += fmt.Sprintf(" salt %d", c.Salt)
		}
		cols = append(cols, s)
	}
	return fmt.Sprintf("%s; row salt %d", strings.Join(cols, ", "), p.Salt)
}

// checkProjection checks a projection against the server's result
// columns: encrypted columns come from their onion columns, the row salt
// from pgonion_salt, and the server returns no column the projection
// does not account for.
func checkProjection(t *testing.T, what string, p *Projection, fields []pgconn.FieldDescription) {
	t.Helper()
	used := 0
	for _, c := range p.Columns {
		used = max(used, c.Server+1, c.Val+1, c.Salt+1)
		if c.Column == nil {
			continue
		}
		if got := fields[c.Server].Name; got != c.Name {
			t.Errorf("%s: column %q comes from server column %q", what, c.Name, got)
		}
		if c.Val >= 0 && fields[c.Val].Name != physicalPrefix(c.Column.Name)+"_val" {
			t.Errorf("%s: exact value of %q comes from server column %q", what, c.Name, fields[c.Val].Name)
		}
		if c.Salt >= 0 && fields[c.Salt].Name != SaltOverrideColumn(c.Column.Name) {
			t.Errorf("%s: salt override of %q comes from server column %q", what, c.Name, fields[c.Salt].Name)
		}
	}
	if p.Salt >= 0 {
		used = max(used, p.Salt+1)
		if fields[p.Salt].Name != SaltColumn {
			t.Errorf("%s: row salt comes from server column %q", what, fields[p.Salt].Name)
		}
	}
	if used != len(fields) {
		t.Errorf("%s: the server returns %d columns, the projection uses %d", what, len(fields), used)
	}
}

// dmlGoldenResult is a planned and rendered statement of a golden test.
type dmlGoldenResult struct {
	sql       string
	holes     []Hole
	returning *Projection
}

// runDMLGolden plans each line of testdata/<name>.txt on the table of
// dmlTestTable, holding rows seeded by seed, writes the plans to
// <name>.golden and runs each rewritten statement in a transaction that
// is rolled back, checking its RETURNING projection against the server's
// result columns. A line may end with "-- args: ..." (see dmlParseArgs).
// homAddSQL creates pgonion.hom_add in a test database: the functions of
// migrations/0006_increments.sql without its catalog change.
var homAddSQL = func() string {
	b, err := os.ReadFile(filepath.Join("..", "..", "migrations", "0006_increments.sql"))
	if err != nil {
		panic(err)
	}
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "ALTER TABLE pgonion.columns") {
			keep = append(keep, line)
		}
	}
	return "CREATE SCHEMA IF NOT EXISTS pgonion;\n" + strings.Join(keep, "\n")
}()

func runDMLGolden(t *testing.T, name string, seed []string, plan func(Statement, *catalog.Table) (dmlGoldenResult, error)) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// pgonion.hom_add, for increments (SET c = c + k).
	if _, err := conn.Exec(ctx, homAddSQL); err != nil {
		t.Fatal(err)
	}
	ct := planTable(t, conn, dmlTestTable)
	for _, sql := range seed {
		dmlTestInsert(t, conn, ct.Table, sql)
	}
	in, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		stmts, err := Parse(line)
		if err != nil || len(stmts) != 1 {
			t.Fatalf("%s: %v", line, err)
		}
		fmt.Fprintf(&out, "-- %s\n", line)
		r, err := plan(stmts[0], ct.Table)
		if err != nil {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("%s: %v", line, err)
			}
			fmt.Fprintf(&out, "ERROR %s: %s\n\n", pe.Code, pe.Message)
			continue
		}
		fmt.Fprintf(&out, "%s\n", r.sql)
		for _, h := range r.holes {
			if h.Const != nil && strings.Contains(r.sql, "'"+*h.Const+"'") {
				t.Errorf("%s: the value %q of encrypted column %s is in the server SQL %s", line, *h.Const, h.Column.Name, r.sql)
			}
		}
		if len(r.holes) > 0 {
			fmt.Fprintf(&out, "  holes: %s\n", describeHoles(r.holes))
		}
		if r.returning != nil {
			fmt.Fprintf(&out, "  returning: %s\n", describeProjection(r.returning))
		}
		out.WriteString("\n")
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, r.sql, dmlTestArgs(r.holes, dmlParseArgs(line))...)
		if err == nil {
			if r.returning != nil {
				checkProjection(t, line, r.returning, rows.FieldDescriptions())
			}
			rows.Close()
			err = rows.Err()
		}
		if err != nil {
			t.Errorf("%s: the server rejects %q: %v", line, r.sql, err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
	checkGolden(t, name+".golden", out.String())
}

// dmlTestInsert plans, renders and runs an INSERT with stand-in cells and
// row salts 0x0101, 0x0202, ...
func dmlTestInsert(t *testing.T, conn *pgx.Conn, table *catalog.Table, sql string) pgconn.CommandTag {
	t.Helper()
	stmts, err := Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanInsert(stmts[0], table)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	rendered, err := p.Render(dmlTestCells(t, p.Holes), dmlTestInsertSalts(p))
	if err != nil {
		t.Fatal(err)
	}
	tag, err := conn.Exec(context.Background(), rendered, dmlTestArgs(p.Holes, nil)...)
	if err != nil {
		t.Fatalf("%s: the server rejects %q: %v", sql, rendered, err)
	}
	return tag
}

// dmlTestInsertSalts are the salts of an INSERT's rows (0x0101, 0x0202,
// ...) and, with ConflictSalt, 0xcccc.
func dmlTestInsertSalts(p *InsertPlan) []*pg_query.Node {
	var salts []*pg_query.Node
	for r := range p.Rows {
		salts = append(salts, dmlTestSalt(byte(r+1)))
	}
	if p.ConflictSalt {
		salts = append(salts, dmlTestSalt(0xcc))
	}
	return salts
}

// dmlTestSeed are the rows of the golden and semantic tests.
var dmlTestSeed = []string{
	"INSERT INTO acc VALUES (1, 'ann', 10.5, 'n1', 'ann@x', 1.50)",
	"INSERT INTO acc VALUES (2, 'bob', -3, 'n2', 'bob@x', NULL)",
	"INSERT INTO acc (id, note_plain) VALUES (3, 'n3')",
}

func TestPlanUpdateGolden(t *testing.T) {
	runDMLGolden(t, "update", dmlTestSeed, func(st Statement, table *catalog.Table) (dmlGoldenResult, error) {
		p, err := PlanUpdate(st, table)
		if err != nil {
			return dmlGoldenResult{}, err
		}
		if err := FillHoles(p.Where, testHoleValues(p.Where)); err != nil {
			t.Fatal(err)
		}
		sql, err := p.Render(dmlTestCells(t, p.Holes), dmlTestSalt(0xee))
		if err != nil {
			t.Fatal(err)
		}
		return dmlGoldenResult{sql: sql, holes: p.Holes, returning: p.Returning}, nil
	})
}

// dmlSnapshot returns every physical cell of the table, by id and column.
func dmlSnapshot(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) map[string]any {
	t.Helper()
	rows, err := q.Query(context.Background(), "SELECT id, to_jsonb(acc) FROM acc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for rows.Next() {
		var id int
		var row map[string]any
		if err := rows.Scan(&id, &row); err != nil {
			t.Fatal(err)
		}
		for k, v := range row {
			out[fmt.Sprintf("%d:%s", id, k)] = v
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// dmlChanged lists the cells that differ between two snapshots.
func dmlChanged(before, after map[string]any) string {
	var out []string
	for k, v := range after {
		if w, ok := before[k]; !ok || !reflect.DeepEqual(v, w) {
			out = append(out, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k+"(gone)")
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// TestPlanUpdateEffects runs rewritten UPDATEs and checks that they change
// exactly the physical cells they should, with the values they should.
func TestPlanUpdateEffects(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ct := planTable(t, conn, dmlTestTable)
	for _, sql := range dmlTestSeed {
		dmlTestInsert(t, conn, ct.Table, sql)
	}
	for _, tc := range []struct {
		sql     string
		args    []any
		changed string // the physical cells that change
		rows    int64  // rows updated
	}{
		{"UPDATE acc SET owner = 'zed' WHERE id = 1", nil,
			"1:owner__eq 1:owner__salt 1:owner__srch", 1},
		{"UPDATE acc SET note_plain = 'p', balance = NULL WHERE id = 2", nil,
			"2:balance__add 2:balance__eq 2:balance__ord 2:balance__salt 2:note_plain", 1},
		{"UPDATE acc SET (owner, note_plain) = ('a', upper(note_plain)) WHERE id = 3", nil,
			"3:note_plain 3:owner__eq 3:owner__salt 3:owner__srch", 1},
		{"UPDATE acc SET n = 2.5 WHERE note_plain LIKE 'n%'", nil,
			"1:n__eq 1:n__salt 1:n__val 2:n__eq 2:n__salt 2:n__val 3:n__eq 3:n__salt 3:n__val", 3},
		{"UPDATE acc SET owner = $1, note_plain = $2 WHERE id = $3", []any{nil, "q", 2},
			"2:note_plain 2:owner__eq 2:owner__salt 2:owner__srch", 1},
		{"UPDATE acc SET note_plain = 'only plain' WHERE id > 1", nil,
			"2:note_plain 3:note_plain", 2},
		{"UPDATE acc a SET email = DEFAULT FROM (VALUES (1)) v(x) WHERE a.id = v.x", nil,
			"1:email__eq 1:email__salt", 1},
	} {
		stmts, err := Parse(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanUpdate(stmts[0], ct.Table)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		cells := dmlTestCells(t, p.Holes)
		sql, err := p.Render(cells, dmlTestSalt(0xee))
		if err != nil {
			t.Fatal(err)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before := dmlSnapshot(t, tx)
		tag, err := tx.Exec(ctx, sql, dmlTestArgs(p.Holes, tc.args)...)
		if err != nil {
			t.Fatalf("%s: the server rejects %q: %v", tc.sql, sql, err)
		}
		after := dmlSnapshot(t, tx)
		if got := dmlChanged(before, after); got != tc.changed || tag.RowsAffected() != tc.rows {
			t.Errorf("%s: %d rows, changed %s\nwant %d rows, changed %s", tc.sql, tag.RowsAffected(), got, tc.rows, tc.changed)
		}
		// Each changed onion cell holds the hole's cell, and each salt
		// override the statement's salt (\xeeee) or NULL for no value.
		for k, v := range after {
			id, col, _ := strings.Cut(k, ":")
			if !strings.Contains(tc.changed, k) || !strings.Contains(col, "__") {
				continue
			}
			if strings.HasSuffix(col, SaltSuffix) {
				if v != `\xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee` {
					t.Errorf("%s: row %s: %s = %v, want the statement's salt", tc.sql, id, col, v)
				}
				continue
			}
			if !dmlHoleWrote(t, p.Holes, cells, col, v) {
				t.Errorf("%s: row %s: %s = %v is none of the statement's cells", tc.sql, id, col, v)
			}
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// dmlHoleWrote reports whether the physical cell col = v (as to_jsonb
// shows it) is what a hole's cells put there: the hole's literal, the
// stand-in ciphertext bound to its parameter, or NULL for a NULL hole.
func dmlHoleWrote(t *testing.T, holes []Hole, cells []Cells, col string, v any) bool {
	t.Helper()
	for i, h := range holes {
		prefix := physicalPrefix(h.Column.Name)
		if !strings.HasPrefix(col, prefix) {
			continue
		}
		suffix := strings.TrimPrefix(col, prefix)
		cell := cells[i][suffix]
		if cell == nil {
			return v == nil
		}
		if cell.GetParamRef() != nil {
			return v == fmt.Sprintf(`\x%x`, dmlTestCiphertext(h.Column.Name, "_eq", "$"+strconv.Itoa(h.Param)))
		}
		// The literal's text: '\x...'::bytea or '{...}'::int8[].
		lit := cell.GetTypeCast().Arg.GetAConst().GetSval().GetSval()
		if arr, ok := v.([]any); ok {
			var parts []string
			for _, x := range arr {
				parts = append(parts, fmt.Sprint(x))
			}
			return lit == "{"+strings.Join(parts, ",")+"}"
		}
		return v == lit
	}
	return false
}

// TestUpdateWhereCurrentOf updates the row a cursor over the physical
// table stands on.
func TestUpdateWhereCurrentOf(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ct := planTable(t, conn, dmlTestTable)
	for _, sql := range dmlTestSeed {
		dmlTestInsert(t, conn, ct.Table, sql)
	}
	stmts, err := Parse("UPDATE acc SET owner = 'cur' WHERE CURRENT OF c")
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanUpdate(stmts[0], ct.Table)
	if err != nil {
		t.Fatal(err)
	}
	sql, err := p.Render(dmlTestCells(t, p.Holes), dmlTestSalt(0xee))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var salt []byte
	if _, err := tx.Exec(ctx, "DECLARE c CURSOR FOR SELECT id FROM acc WHERE id = 2 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "FETCH c"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, sql); err != nil {
		t.Fatalf("the server rejects %q: %v", sql, err)
	}
	if err := tx.QueryRow(ctx, "SELECT owner__salt FROM acc WHERE id = 2").Scan(&salt); err != nil || string(salt) != strings.Repeat("\xee", 16) {
		t.Fatalf("owner__salt of the cursor's row = %x, %v", salt, err)
	}
}

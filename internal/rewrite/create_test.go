package rewrite

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgtest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestMain(m *testing.M) { pgtest.Main(m) }

// testPolicy: "id" and "*_plain" are plain, "secret*" sensitive, "*_eqonly"
// encrypted with the eq capability only, everything else encrypted. The
// encrypted columns have FormatCompact, whose cells are all bytea, so
// that the tests can fill holes with short stand-in ciphertexts
// (TestCreateFormatUUID covers the uuid cells of FormatUUID).
func testPolicy(table, column string) ColumnPolicy {
	p := testPolicyLatest(table, column)
	if p.Policy != catalog.Plain {
		p.Format = int(onion.FormatCompact)
	}
	return p
}

// testPolicyLatest is testPolicy with new columns of onion.FormatLatest.
func testPolicyLatest(table, column string) ColumnPolicy {
	switch {
	case column == "id" || strings.HasSuffix(column, "_plain"):
		return ColumnPolicy{Policy: catalog.Plain}
	case strings.HasPrefix(column, "secret"):
		return ColumnPolicy{Policy: catalog.Sensitive}
	case strings.HasSuffix(column, "_eqonly"):
		return ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq"}}
	case column == "owner":
		// Search tokens from the start, as declared (by default they
		// are built on first need).
		return ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq", "search"}}
	case column == "balance" || column == "abalance":
		// Paillier declared: the Add onion is opt-in.
		return ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq", "ord", "add"}}
	case strings.HasSuffix(column, "_sorted"):
		return ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq", "ord", "search"}}
	}
	return ColumnPolicy{Policy: catalog.Encrypted}
}

func describe(p *CreatePlan, err error) string {
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return "ERROR " + pe.Code + ": " + pe.Message
		}
		return "ERROR " + err.Error()
	}
	var b strings.Builder
	b.WriteString(p.SQL + "\n")
	for _, c := range p.Table.Columns {
		var onions []string
		for k, v := range c.Onions {
			onions = append(onions, k+"="+v)
		}
		sort.Strings(onions)
		fmt.Fprintf(&b, "  %d %s %s %s [%s] {%s}%s\n", c.Position, c.Name, c.Type, c.Policy, strings.Join(c.Capabilities, ","), strings.Join(onions, ","), columnNotes(&c))
	}
	for _, c := range p.Table.Checks {
		fmt.Fprintf(&b, "  check %s: %s\n", c.Name, c.Expr)
	}
	for _, n := range p.Notices {
		fmt.Fprintf(&b, "  NOTICE %s\n", n)
	}
	for _, fk := range p.ForeignKeys {
		fmt.Fprintf(&b, "  then %s\n", fk.SQL)
	}
	return strings.TrimRight(b.String(), "\n")
}

// TestPlanCreateGolden rewrites every statement of testdata/create.txt and
// compares with testdata/create.golden (go test -update rewrites it). Each
// rewritten statement must also run on PostgreSQL. New columns have
// onion.FormatLatest, whose fixed-length cells are uuid columns.
func TestPlanCreateGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "create.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA s1; CREATE TABLE other (x int PRIMARY KEY); CREATE TABLE enc (k int PRIMARY KEY); CREATE SEQUENCE seqd_a"); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		stmts, err := Parse(line)
		if err != nil || len(stmts) != 1 {
			t.Fatalf("%s: %v", line, err)
		}
		// other is a plain table (not in the catalog); enc has an
		// encrypted primary key.
		refs := func(schema, table, column string) (bool, bool) {
			switch table {
			case "other":
				return true, true
			case "enc":
				return false, true
			}
			return false, false
		}
		plan, err := PlanCreateWith(stmts[0], "public", testPolicyLatest, refs, nil)
		got := describe(plan, err)
		fmt.Fprintf(&out, "-- %s\n%s\n\n", line, got)
		if err == nil {
			tx, terr := conn.Begin(ctx)
			if terr != nil {
				t.Fatal(terr)
			}
			if _, terr := tx.Exec(ctx, plan.SQL); terr != nil {
				t.Errorf("%s: the server rejects the rewritten statement %q: %v", line, plan.SQL, terr)
			}
			_ = tx.Rollback(ctx)
		}
	}
	checkGolden(t, "create.golden", out.String())
}

// checkGolden compares got with testdata/name, which go test -update
// rewrites.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
}

// TestPlanCreateJoinGroups: a declared join group is recorded in the
// catalog column; misuses are refused naming the column.
func TestPlanCreateJoinGroups(t *testing.T) {
	grouped := func(pols map[string]ColumnPolicy) PolicyFunc {
		return func(table, column string) ColumnPolicy {
			if p, ok := pols[column]; ok {
				return p
			}
			return ColumnPolicy{Policy: catalog.Plain}
		}
	}
	plan := func(sql string, pol PolicyFunc) (*CreatePlan, error) {
		t.Helper()
		stmts, err := Parse(sql)
		if err != nil || len(stmts) != 1 {
			t.Fatalf("%s: %v", sql, err)
		}
		return PlanCreate(stmts[0], "public", pol)
	}
	p, err := plan("CREATE TABLE orders (id int, customer_id int, total numeric(10,2), code text)", grouped(map[string]ColumnPolicy{
		"customer_id": {Policy: catalog.Encrypted, JoinGroup: "customer"},
		"total":       {Policy: catalog.Encrypted, Capabilities: []string{"eq", "ord"}, JoinGroup: "money"},
		"code":        {Policy: catalog.Encrypted},
	}))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"id": "", "customer_id": "customer", "total": "money", "code": ""} {
		if c := p.Table.Column(name); c == nil || c.JoinGroup != want {
			t.Errorf("column %s: %+v, want join group %q", name, c, want)
		}
	}
	if c := p.Table.Column("customer_id"); c.Onions["eq"] != "rnd" {
		t.Errorf("a join group peeled the Eq onion at CREATE TABLE: %+v", c)
	}
	// A key in a join group: its Eq onion starts at DET, as any key's.
	p, err = plan("CREATE TABLE t (customer_id int PRIMARY KEY)", grouped(map[string]ColumnPolicy{
		"customer_id": {Policy: catalog.Encrypted, JoinGroup: "customer"},
	}))
	if err != nil || p.Table.Column("customer_id").JoinGroup != "customer" || p.Table.Column("customer_id").Onions["eq"] != "det" {
		t.Fatalf("join group on a primary key: %v %+v", err, p)
	}

	for _, tc := range []struct {
		name string
		pol  ColumnPolicy
		want string
	}{
		{"plain", ColumnPolicy{Policy: catalog.Plain, JoinGroup: "g"}, "a plain one"},
		{"sensitive", ColumnPolicy{Policy: catalog.Sensitive, JoinGroup: "g"}, "a sensitive one"},
		{"no eq", ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"ord"}, JoinGroup: "g"}, "eq capability"},
		{"uppercase name", ColumnPolicy{Policy: catalog.Encrypted, JoinGroup: "Customer"}, "bad join group name"},
		{"name with a dash", ColumnPolicy{Policy: catalog.Encrypted, JoinGroup: "a-b"}, "bad join group name"},
		{"name with a digit first", ColumnPolicy{Policy: catalog.Encrypted, JoinGroup: "1g"}, "bad join group name"},
		{"long name", ColumnPolicy{Policy: catalog.Encrypted, JoinGroup: strings.Repeat("g", 64)}, "bad join group name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := plan("CREATE TABLE orders (id int, customer_id int)", grouped(map[string]ColumnPolicy{"customer_id": tc.pol}))
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "0A000" || !strings.Contains(pe.Message, "orders.customer_id") || !strings.Contains(pe.Message, tc.want) {
				t.Fatalf("PlanCreate = %v, want a 0A000 refusal naming orders.customer_id and %q", err, tc.want)
			}
		})
	}
	// A plain serial column with a join group is refused too.
	if _, err := plan("CREATE TABLE s (id serial)", grouped(map[string]ColumnPolicy{"id": {Policy: catalog.Plain, JoinGroup: "g"}})); err == nil || !strings.Contains(err.Error(), "s.id") {
		t.Fatalf("serial plain column with a join group: %v", err)
	}
}

// TestServerGeneratedDeclared: a declared encrypted policy is not
// overridden for a column the server generates (it is refused, naming
// why), nor for one referencing a plain column.
func TestServerGeneratedDeclared(t *testing.T) {
	declared := func(table, column string) ColumnPolicy {
		return ColumnPolicy{Policy: catalog.Encrypted, Declared: true}
	}
	for sql, want := range map[string]string{
		"CREATE TABLE t (id serial, x int)":                               "serial on encrypted column t.id",
		"CREATE TABLE t (id int GENERATED BY DEFAULT AS IDENTITY, x int)": "an identity on encrypted column t.id",
		"CREATE TABLE t (id bigint DEFAULT nextval('s'), x int)":          "a sequence default on encrypted column t.id",
	} {
		stmts, err := Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		_, err = PlanCreateWith(stmts[0], "public", declared, func(string, string, string) (bool, bool) { return true, true }, nil)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "0A000" || !strings.Contains(pe.Message, want) {
			t.Errorf("%s: %v, want a refusal with %q", sql, err, want)
		}
	}
}

// TestForeignKeysAfterCreate: a foreign key from an encrypted column,
// written in CREATE TABLE, becomes the ALTER TABLE that adds it once the
// table exists (the engine plans it, putting both sides in one join
// group, or refuses it); a key to the table itself names its primary key.
func TestForeignKeysAfterCreate(t *testing.T) {
	declared := func(table, column string) ColumnPolicy {
		return ColumnPolicy{Policy: catalog.Encrypted, Declared: true}
	}
	for sql, want := range map[string]string{
		"CREATE TABLE t (id int, a int REFERENCES other (x) ON DELETE CASCADE)":                "ALTER TABLE t ADD FOREIGN KEY (a) REFERENCES other (x) ON DELETE CASCADE",
		"CREATE TABLE t (id int PRIMARY KEY, a int, FOREIGN KEY (a) REFERENCES t)":             "ALTER TABLE t ADD FOREIGN KEY (a) REFERENCES t (id)",
		"CREATE TABLE t (id int, a int, CONSTRAINT k FOREIGN KEY (a, id) REFERENCES o (x, y))": "ALTER TABLE t ADD CONSTRAINT k FOREIGN KEY (a, id) REFERENCES o (x, y)",
	} {
		stmts, err := Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanCreateWith(stmts[0], "public", declared, func(string, string, string) (bool, bool) { return true, true }, nil)
		if err != nil || len(p.ForeignKeys) != 1 || p.ForeignKeys[0].SQL != want {
			var got []string
			if p != nil {
				for _, fk := range p.ForeignKeys {
					got = append(got, fk.SQL)
				}
			}
			t.Errorf("%s: %q %v, want %q", sql, got, err, want)
		}
		if strings.Contains(p.SQL, "REFERENCES") {
			t.Errorf("%s: the CREATE keeps the key: %s", sql, p.SQL)
		}
	}
}

// TestPhysicalPrefix: names whose cells fit 63 bytes keep their form;
// longer ones get prefixes that fit with every suffix, differ between
// names sharing a beginning, and cut no UTF-8 character.
func TestPhysicalPrefix(t *testing.T) {
	suffixes := []string{"_eq", "_ord", "_add", "_srch", "_val", SaltSuffix}
	seen := map[string]string{}
	for _, name := range []string{
		"owner",
		strings.Repeat("k", 57),
		strings.Repeat("k", 58),
		strings.Repeat("x", 60) + "aaa",
		strings.Repeat("x", 60) + "bbb",
		strings.Repeat("é", 31),
		strings.Repeat("é", 30) + "e",
		strings.Repeat("x", 200),
	} {
		p := physicalPrefix(name)
		if len(name) <= 57 && p != name+"_" {
			t.Errorf("%q: prefix %q, want the name and an underscore", name, p)
		}
		if !utf8.ValidString(p) {
			t.Errorf("%q: prefix %q is not valid UTF-8", name, p)
		}
		for _, s := range suffixes {
			if len(p+s) > ddlMaxIdentifier {
				t.Errorf("%q: cell %q exceeds %d bytes", name, p+s, ddlMaxIdentifier)
			}
		}
		if other, ok := seen[p]; ok {
			t.Errorf("%q and %q share the prefix %q", name, other, p)
		}
		seen[p] = name
	}
}

// columnNotes is what the golden files show of a column's defaults,
// generation and collation.
func columnNotes(c *catalog.Column) string {
	def := ""
	if c.Default != nil {
		def = fmt.Sprintf(" default %q", *c.Default)
	}
	if c.DefaultExpr != nil {
		def += fmt.Sprintf(" default expression %s", *c.DefaultExpr)
	}
	if c.Generation != nil {
		def += fmt.Sprintf(" generated by the proxy as %s", *c.Generation)
	}
	if c.Collation != "" {
		def += fmt.Sprintf(" collate %q", c.Collation)
	}
	return def
}

// TestCatalogTypeEnum: the catalog's form of an enum type reads back as
// the same type, its name quoted as needed.
func TestCatalogTypeEnum(t *testing.T) {
	for _, typ := range []onion.Type{onion.EnumType("mood", 16390), onion.EnumType(`"my ""mood"""`, 4000000000), onion.EnumType("public.it's", 1)} {
		got, err := parseType(catalogType(typ))
		if err != nil || got != typ {
			t.Errorf("%s: %#v, %v", catalogType(typ), got, err)
		}
	}
}

package rewrite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestPlanQueryGolden rewrites testdata/select.txt against the tables acc
// and person and compares with testdata/select.golden; rewritten
// statements must run (with placeholder ciphertexts in the holes).
func TestPlanQueryGolden(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, minMaxSQL+"CREATE TABLE other_plain (id int, x text)"); err != nil {
		t.Fatal(err)
	}
	tables := map[string]*catalog.Table{}
	for _, sql := range []string{
		"CREATE TABLE acc (id int PRIMARY KEY, owner text, balance numeric(12,2), note_plain text, opened date, code_eqonly int, secret_pin int, amount numeric)",
		"CREATE TABLE person (id int, name text, owner text, born date)",
		"CREATE TABLE emp (id int, name_sorted text, dept_sorted varchar(10), born date, code_plain int)",
		"CREATE TABLE ledger (id int, balance numeric(12,2))",
	} {
		ct := planTable(t, conn, sql)
		for i := range ct.Table.Columns {
			ct.Table.Columns[i].ID = catalog.NewID()
		}
		tables[ct.Table.Name] = ct.Table
	}
	tables["person"].Column("owner").JoinGroup = "owner"
	tables["acc"].Column("owner").JoinGroup = "owner"
	// Incremented on the server: its Add onion alone is current, so SUM
	// reads it.
	tables["ledger"].Column("balance").Incremented = true
	lookup := func(schema, name string) *catalog.Table {
		if schema != DefaultSchema {
			return nil
		}
		return tables[name]
	}
	in, err := os.ReadFile(filepath.Join("testdata", "select.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		stmts, err := Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanQuery(stmts[0], lookup)
		fmt.Fprintf(&out, "-- %s\n", line)
		var rk *RekeyError
		if errors.As(err, &rk) {
			for _, r := range rk.Rekeys {
				group := r.Group
				if strings.HasPrefix(group, "adj_") {
					group = "a new group" // named after the columns' random ids
				}
				fmt.Fprintf(&out, "REKEY %s.%s INTO %s\n", r.Table.Name, r.Column.Name, group)
			}
			fmt.Fprintf(&out, "  reveals %s\n", rk.Reveals)
			err = rk.Refusal()
		}
		if err != nil {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("%s: %v", line, err)
			}
			fmt.Fprintf(&out, "ERROR %s: %s\n", pe.Code, pe.Message)
			if pe.Code == "0A000" {
				fresh, _ := Parse(line)
				if agg, err := PlanAggregate(fresh[0], lookup); err == nil {
					vals := make([]*pg_query.Node, len(agg.Inner.Holes))
					for i := range vals {
						vals[i] = ByteaLiteral([]byte{byte(i)})
					}
					sql, err := agg.Inner.Render(vals)
					for p := agg; p != nil; p = p.Source {
						what := "split execution"
						if p != agg {
							what = "  over a derived table computed first"
						}
						fmt.Fprintf(&out, "  %s: inputs %d, outputs %d, group %d, having %v, order %d, join residual %v (nullable %v)\n", what, p.Inputs, len(p.Outputs), len(p.Group), p.Having != nil, len(p.Order), p.JoinResidual != nil, p.Nullable)
					}
					fmt.Fprintf(&out, "  server: %s %v\n", sql, err)
				}
			}
			out.WriteString("\n")
			continue
		}
		vals := make([]*pg_query.Node, len(p.Holes))
		for i, h := range p.Holes {
			if h.Kind == HoleTokens {
				vals[i] = Int8ArrayLiteral([]int64{int64(i)})
			} else {
				vals[i] = ByteaLiteral([]byte{byte(i)})
			}
		}
		sql, err := p.Render(vals)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%s\n", sql)
		for _, h := range p.Holes {
			v := "NULL"
			switch {
			case h.Param > 0:
				v = fmt.Sprintf("$%d", h.Param)
			case h.Const != nil:
				v = fmt.Sprintf("%q", *h.Const)
			}
			fmt.Fprintf(&out, "  hole %s %s %s %s\n", []string{"det", "ope", "tokens"}[h.Kind], h.Column.Name, h.Op, v)
		}
		for _, n := range p.Needs {
			fmt.Fprintf(&out, "  need %s.%s %s=%s\n", n.Table.Name, n.Column.Name, n.Kind, n.Layer)
		}
		for _, n := range p.Wants {
			fmt.Fprintf(&out, "  want %s.%s %s\n", n.Table.Name, n.Column.Name, n.Kind)
		}
		if p.PlainResults {
			fmt.Fprintf(&out, "  plain results\n")
		}
		for i, c := range p.Columns {
			kind := "plain"
			if c.Column != nil {
				kind = fmt.Sprintf("%s %s.%s val=%d salt=%d rowsalt=%d count=%d", []string{"value", "ord", "sum", "avg"}[c.Decode], c.Table.Name, c.Column.Name, c.Val, c.Salt, c.RowSalt, c.Count)
			}
			hidden := ""
			if i >= p.Visible {
				hidden = " hidden"
			}
			fmt.Fprintf(&out, "  %q <- server %d (%s)%s\n", c.Name, c.Server, kind, hidden)
		}
		for _, r := range p.Residuals {
			if r.Like != nil {
				fmt.Fprintf(&out, "  residual col %d like %+v\n", r.Column, r.Like.Negate)
			} else {
				fmt.Fprintf(&out, "  residual col %d %s hole %d\n", r.Column, r.Compare.Op, r.Compare.Hole)
			}
		}
		if s := p.Sort; s != nil {
			fmt.Fprintf(&out, "  proxy sort run %v keys", s.Run)
			for _, k := range s.Keys {
				fmt.Fprintf(&out, " %s:%d", []string{"value", "cipher", "rank"}[k.Kind], k.Column)
				if k.Desc {
					fmt.Fprint(&out, " desc")
				}
				if k.NullsFirst {
					fmt.Fprint(&out, " nulls-first")
				}
			}
			if s.WithTies {
				fmt.Fprint(&out, " with-ties")
			}
			fmt.Fprintln(&out)
		}
		if p.Limit != (ir.LimitValue{}) || p.Offset != (ir.LimitValue{}) {
			lv := func(v ir.LimitValue) string {
				if v.Const != nil {
					return fmt.Sprint(*v.Const)
				}
				if v.Param == 0 {
					return "none"
				}
				return fmt.Sprintf("$%d", v.Param)
			}
			fmt.Fprintf(&out, "  proxy limit %s offset %s\n", lv(p.Limit), lv(p.Offset))
		}
		out.WriteString("\n")
		rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
		if err == nil {
			rows.Close()
			err = rows.Err()
		}
		if err != nil && !strings.Contains(line, "$") {
			t.Errorf("%s: the server rejects %q: %v", line, sql, err)
		}
	}
	checkGolden(t, "select.golden", out.String())
}

// minMaxSQL creates the pgonion MIN and MAX aggregates over bytea in a
// test database (migrations/0005_ope_min_max.sql).
var minMaxSQL = func() string {
	b, err := os.ReadFile(filepath.Join("..", "..", "migrations", "0005_ope_min_max.sql"))
	if err != nil {
		panic(err)
	}
	return "CREATE SCHEMA IF NOT EXISTS pgonion;\n" + string(b) + ";\n"
}()

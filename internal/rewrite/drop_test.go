package rewrite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestPlanDropGolden plans every statement of testdata/drop.txt with a
// catalog of public.acc, public.pl and s1.acc (the table other is
// unmanaged), records the plan in testdata/drop.golden, and runs each
// planned DROP on the server, where the catalog tables it lists must be
// gone afterwards and the others still there.
func TestPlanDropGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "drop.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	acc, pl := ddlPlan(t, ddlAccSQL), ddlPlan(t, ddlPlSQL)
	s1acc := ddlPlan(t, strings.Replace(ddlAccSQL, "TABLE acc", "TABLE s1.acc", 1))
	cat := map[string]*catalog.Table{"public.acc": acc.Table, "public.pl": pl.Table, "s1.acc": s1acc.Table}
	lookup := func(schema, name string) *catalog.Table { return cat[schema+"."+name] }
	setup := "DROP SCHEMA IF EXISTS s1 CASCADE; DROP TABLE IF EXISTS acc, pl, other CASCADE; CREATE SCHEMA s1; CREATE TABLE other (x int); " +
		acc.SQL + "; " + pl.SQL + "; " + s1acc.SQL + "; CREATE VIEW v AS SELECT id FROM acc"
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		st := ddlParse(t, line)
		plan, err := PlanDrop(st, lookup, "public")
		fmt.Fprintf(&out, "-- %s\n", line)
		if err != nil {
			fmt.Fprintf(&out, "%s\n\n", ddlError(err))
			continue
		}
		if plan == nil {
			out.WriteString("(nil plan: passes through)\n\n")
			continue
		}
		fmt.Fprintf(&out, "%s\n", plan.SQL)
		for _, tb := range plan.Tables {
			fmt.Fprintf(&out, "  catalog: drop %s.%s\n", tb.Schema, tb.Name)
		}
		if _, err := conn.Exec(ctx, setup); err != nil {
			t.Fatal(err)
		}
		failed := false
		if _, err := conn.Exec(ctx, plan.SQL); err != nil {
			// The caller's transaction fails: nothing is dropped, and
			// the catalog must keep every table.
			fmt.Fprintf(&out, "  server: %v\n", err)
			failed = true
		}
		for key, tb := range cat {
			var exists bool
			if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", key).Scan(&exists); err != nil {
				t.Fatal(err)
			}
			listed := false
			for _, d := range plan.Tables {
				listed = listed || d == tb && !failed
			}
			if listed && exists {
				t.Errorf("%s: %s is listed as dropped but still exists", line, key)
			}
			if !listed && !exists {
				t.Errorf("%s: %s was dropped but is not listed", line, key)
			}
		}
		out.WriteString("\n")
	}
	checkGolden(t, "drop.golden", out.String())
}

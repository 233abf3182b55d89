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

	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestPlanSelectGolden rewrites testdata/select.txt against the table acc
// and compares with testdata/select.golden; rewritten statements must run.
func TestPlanSelectGolden(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ct := planTable(t, conn, "CREATE TABLE acc (id int PRIMARY KEY, owner text, balance numeric(12,2), note_plain text)")
	in, err := os.ReadFile(filepath.Join("testdata", "select.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		stmts, err := Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanSelect(stmts[0], ct.Table)
		fmt.Fprintf(&out, "-- %s\n", line)
		if err != nil {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("%s: %v", line, err)
			}
			fmt.Fprintf(&out, "ERROR %s: %s\n\n", pe.Code, pe.Message)
			continue
		}
		fmt.Fprintf(&out, "%s\n", p.SQL)
		for _, c := range p.Columns {
			kind := "plain"
			if c.Column != nil {
				kind = "decrypt " + c.Column.Name
			}
			fmt.Fprintf(&out, "  %q <- server %d (%s)\n", c.Name, c.Server, kind)
		}
		fmt.Fprintf(&out, "  salt: %d\n\n", p.Salt)
		rows, err := conn.Query(ctx, p.SQL)
		if err == nil {
			rows.Close()
			err = rows.Err()
		}
		if err != nil {
			t.Errorf("%s: the server rejects %q: %v", line, p.SQL, err)
		}
	}
	checkGolden(t, "select.golden", out.String())
}

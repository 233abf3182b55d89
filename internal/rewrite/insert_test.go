package rewrite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgtest"
)

// planTable creates the physical table for sql and returns its plan.
func planTable(t *testing.T, conn *pgx.Conn, sql string) *CreatePlan {
	t.Helper()
	stmts, err := Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanCreate(stmts[0], "public", testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), p.SQL); err != nil {
		t.Fatal(err)
	}
	return p
}

func holeString(h Hole) string {
	switch {
	case h.Param > 0:
		return fmt.Sprintf("%d:%s=$%d", h.Row, h.Column.Name, h.Param)
	case h.Const != nil:
		return fmt.Sprintf("%d:%s=%q", h.Row, h.Column.Name, *h.Const)
	}
	return fmt.Sprintf("%d:%s=NULL", h.Row, h.Column.Name)
}

func TestPlanInsert(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ct := planTable(t, conn, "CREATE TABLE acc (id int PRIMARY KEY, owner text, balance numeric(12,2), note_plain text)")
	for _, tc := range []struct {
		sql   string
		holes string // the holes, or "ERROR code: message"
		rows  int    // rows the server must hold afterwards (cumulative)
	}{
		{"INSERT INTO acc VALUES (1, 'ann', 10.5, 'n1')", `0:owner="ann" 0:balance="10.5"`, 1},
		{"INSERT INTO acc (id, balance, owner) VALUES (2, -3, E'b\\'o'), (3, NULL, DEFAULT)", `0:balance="-3" 0:owner="b'o" 1:balance=NULL 1:owner=NULL`, 3},
		{"INSERT INTO acc (owner, id) VALUES ('x'::text, 4)", `0:owner="x"`, 4},
		{"INSERT INTO acc VALUES ($1, $2, $3, $4)", `0:owner=$2 0:balance=$3`, 5},
		{"INSERT INTO acc (id, note_plain) VALUES (6, upper('plain ok'))", ``, 6},
		{"INSERT INTO acc VALUES (7, upper('x'), 1, '')", `ERROR 0A000: expression in INSERT into encrypted column acc.owner: only constants, parameters and NULL are supported`, 6},
		{"INSERT INTO acc SELECT * FROM acc", `ERROR 0A000: INSERT ... SELECT into table acc with encrypted columns is not supported; use INSERT ... VALUES`, 6},
		{"INSERT INTO acc VALUES (8, 'x', 1, '') RETURNING owner", `ERROR 0A000: RETURNING on table acc with encrypted columns is not supported yet`, 6},
		{"INSERT INTO acc VALUES (9, 'x', 1, '', 5)", `ERROR 42601: INSERT has more expressions than target columns`, 6},
	} {
		stmts, err := Parse(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanInsert(stmts[0], ct.Table)
		var got string
		if err != nil {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("%s: %v", tc.sql, err)
			}
			got = "ERROR " + pe.Code + ": " + pe.Message
		} else {
			var hs []string
			for _, h := range p.Holes {
				hs = append(hs, holeString(h))
			}
			got = strings.Join(hs, " ")
		}
		if got != tc.holes {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, tc.holes)
			continue
		}
		if err != nil {
			continue
		}
		// Render with stand-in ciphertexts (the hole's text as bytes) and
		// run it: the physical statement must be valid SQL for the table.
		cells := make([]Cells, len(p.Holes))
		var args []any
		for i, h := range p.Holes {
			cells[i] = Cells{}
			_, layout, err := columnLayout(h.Column)
			if err != nil {
				t.Fatal(err)
			}
			for _, pc := range layout {
				switch {
				case h.Const == nil && h.Param == 0:
				case h.Param > 0 && pc.Suffix == "_eq":
					// Extended protocol: the engine binds the ciphertext
					// as a parameter; here the client's own.
					cells[i][pc.Suffix] = ParamNode(h.Param)
				case pc.Kind == onion.KindSearch:
					cells[i][pc.Suffix] = Int8ArrayLiteral([]int64{1, -2})
				default:
					cells[i][pc.Suffix] = ByteaLiteral([]byte("ct:" + holeString(h)))
				}
			}
		}
		salts := make([]*pg_query.Node, p.Rows)
		for r := range salts {
			salts[r] = ByteaLiteral([]byte{byte(r)})
		}
		sql, err := p.Render(cells, salts)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(tc.sql, "$1") {
			args = []any{5, []byte("ct-owner5"), []byte("ct-1.00"), "n"}
		}
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: the server rejects %q: %v", tc.sql, sql, err)
		}
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM acc").Scan(&n); err != nil || n != tc.rows {
			t.Fatalf("%s: %d rows, %v", tc.sql, n, err)
		}
		if strings.Contains(sql, "'ann'") || strings.Contains(sql, "10.5") {
			t.Fatalf("plaintext of an encrypted column in the server SQL: %s", sql)
		}
	}
}

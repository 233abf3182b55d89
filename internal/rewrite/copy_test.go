package rewrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/pgcopy"
	"github.com/pgonion/pgonion/internal/pgtest"
)

// copyTestTables are the tables of testdata/copy.txt, created through
// PlanCreate with testPolicy.
var copyTestTables = []string{
	"CREATE TABLE acc (id int PRIMARY KEY, owner text NOT NULL, balance numeric(12,2), note_plain text)",
	"CREATE TABLE pgbench_accounts (aid int not null, bid int, abalance int, filler char(84))",
	`CREATE TABLE "Mixed Case" ("Weird col" text, x int, id int)`,
	"CREATE TABLE plainonly (id int, note_plain text)",
}

// describeCopy renders a plan (or error) for the golden file.
func describeCopy(p *CopyPlan, err error) string {
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return "ERROR " + pe.Code + ": " + pe.Message
		}
		return "ERROR " + err.Error()
	}
	if p == nil {
		return "unchanged"
	}
	var b strings.Builder
	b.WriteString(p.SQL + "\n")
	o := p.Options
	fmt.Fprintf(&b, "  format=%s delimiter=%q null=%q header=%v match=%v", o.Format, o.Delimiter, o.Null, o.Header, o.HeaderMatch)
	if o.Format == pgcopy.CSV {
		fmt.Fprintf(&b, " quote=%q escape=%q", o.Quote, o.Escape)
	}
	if o.ForceNotNull != nil || o.ForceNull != nil {
		fmt.Fprintf(&b, " force_not_null=%v force_null=%v", o.ForceNotNull, o.ForceNull)
	}
	fmt.Fprintf(&b, " freeze=%v server_columns=%d binary=%v\n", o.Freeze, p.ServerColumns(), p.Binary)
	for _, f := range p.Fields {
		if f.Column == nil {
			fmt.Fprintf(&b, "  %s plain\n", f.Name)
		} else {
			fmt.Fprintf(&b, "  %s encrypted %s\n", f.Name, strings.Join(f.Suffixes, ","))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// copyTestRows encodes n rows for a plan in the server's text format:
// a salt, stand-in ciphertexts for the cells, values for plain columns.
func copyTestRows(p *CopyPlan, n int) []byte {
	text, w := copyWriters(p)
	for r := 1; r <= n; r++ {
		w.Bytea([]byte{byte(r)})
		for _, f := range p.Fields {
			if f.Column == nil {
				if c := p.Table.Column(f.Name); c != nil && strings.Contains(c.Type, "int") {
					text.Field([]byte(fmt.Sprint(r)))
				} else {
					text.Field([]byte("plain\tvalue\\"))
				}
				continue
			}
			for _, s := range f.Suffixes {
				if s == "_srch" {
					w.Int8Array([]int64{1, -2})
				} else {
					w.Bytea([]byte{0, byte(r)})
				}
			}
		}
		w.EndRow()
	}
	return copyEnd(p, w)
}

// copyWriters returns the writer of p's server rows, and the text
// writer of its plain fields (a plan with plain fields is not Binary).
func copyWriters(p *CopyPlan) (*pgcopy.Writer, pgcopy.CellWriter) {
	text := &pgcopy.Writer{}
	if !p.Binary {
		return text, text
	}
	bw := &pgcopy.BinaryWriter{}
	bw.Reset(pgcopy.BinaryHeader(nil))
	return text, bw
}

// copyEnd returns the stream w wrote, ended.
func copyEnd(p *CopyPlan, w pgcopy.CellWriter) []byte {
	if p.Binary {
		return pgcopy.BinaryTrailer(w.Bytes())
	}
	return w.Bytes()
}

// TestPlanCopyGolden plans every statement of testdata/copy.txt and
// compares with testdata/copy.golden (go test -update rewrites it). Each
// plan's COPY must also run on PostgreSQL against the physical tables,
// fed rows written by pgcopy's writers.
func TestPlanCopyGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "copy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tables := map[string]*catalog.Table{}
	for _, sql := range copyTestTables {
		ct := planTable(t, conn, sql)
		tables[ct.Table.Name] = ct.Table
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		stmts, err := Parse(line)
		if err != nil || len(stmts) != 1 {
			t.Fatalf("%s: %v", line, err)
		}
		rels := Relations(stmts[0])
		if len(rels) == 0 || tables[rels[0].Name] == nil {
			t.Fatalf("%s: no test table", line)
		}
		if cp, err := PlanCopyOut(stmts[0]); cp != nil || err != nil {
			got := ""
			switch {
			case err != nil:
				got = describeCopy(nil, err)
			case cp.Refusal != nil:
				got = fmt.Sprintf("query: %s\n  if it reads encrypted values: %s", cp.Query.SQL, describeCopy(nil, cp.Refusal))
			default:
				got = fmt.Sprintf("query: %s\n  options: %+v", cp.Query.SQL, cp.Options)
			}
			fmt.Fprintf(&out, "-- %s\n%s\n\n", line, got)
			continue
		}
		plan, err := PlanCopy(stmts[0], tables[rels[0].Name])
		got := describeCopy(plan, err)
		if plan != nil {
			got += "\n  server: " + copyRun(t, conn, plan)
		}
		fmt.Fprintf(&out, "-- %s\n%s\n\n", line, got)
	}
	checkGolden(t, "copy.golden", out.String())
}

// copyRun runs a plan's COPY with two rows in a transaction that it rolls
// back (after a TRUNCATE, which FREEZE needs), and describes the outcome.
func copyRun(t *testing.T, conn *pgx.Conn, p *CopyPlan) string {
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "TRUNCATE "+pgx.Identifier{p.Table.Physical}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	tag, err := conn.PgConn().CopyFrom(ctx, bytes.NewReader(copyTestRows(p, 2)), p.SQL)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return "ERROR " + pe.Code + ": " + pe.Message
		}
		t.Fatal(err)
	}
	return tag.String()
}

// copyStream does what the proxy does with a plan: it reads the client's
// data in chunks with a pgcopy.Reader and writes each row for the server
// with a pgcopy.Writer, here with stand-in cells (an encrypted value's
// own bytes, and its length as the search tokens).
func copyStream(t *testing.T, p *CopyPlan, chunks []string) ([]byte, error) {
	t.Helper()
	r, err := pgcopy.NewReader(p.Options, p.Table.Name, p.Columns())
	if err != nil {
		return nil, err
	}
	text, w := copyWriters(p)
	salt := 0
	drain := func() error {
		for {
			row, err := r.Next()
			if row == nil || err != nil {
				if err == io.EOF {
					err = nil
				}
				return err
			}
			salt++
			w.Bytea(bytes.Repeat([]byte{byte(salt)}, 16))
			for i, f := range p.Fields {
				v := row[i]
				if f.Column == nil {
					text.Field(v) // a plan with a plain field is not Binary
					continue
				}
				for _, s := range f.Suffixes {
					switch {
					case v == nil:
						w.Null()
					case s == "_srch":
						w.Int8Array([]int64{int64(len(v))})
					default:
						w.Bytea(v)
					}
				}
			}
			w.EndRow()
		}
	}
	for _, c := range chunks {
		r.Feed([]byte(c))
		if err := drain(); err != nil {
			return nil, err
		}
	}
	r.Close()
	if err := drain(); err != nil {
		return nil, err
	}
	return copyEnd(p, w), nil
}

// TestCopyStream runs client data through a plan, a Reader and a Writer
// into the physical table, and checks where each value landed.
func TestCopyStream(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tables := map[string]*catalog.Table{}
	for _, sql := range copyTestTables {
		ct := planTable(t, conn, sql)
		tables[ct.Table.Name] = ct.Table
	}
	for _, tc := range []struct {
		sql    string
		chunks []string // the client's CopyData messages
		check  string   // query over the physical table
		want   string   // its rows, one line each
	}{
		{
			// What pgbench -i sends: one row per message, then \. alone.
			sql:    "copy pgbench_accounts from stdin with (freeze on)",
			chunks: []string{"1\t1\t0\t\n", "2\t1\t0\t\n", "3\t1\t-5\t\n", "\\.\n"},
			check:  "SELECT convert_from(aid__eq, 'UTF8'), convert_from(abalance__ord, 'UTF8'), filler__eq IS NULL FROM pgbench_accounts ORDER BY 1",
			want:   "1 0 false\n2 0 false\n3 -5 false",
		},
		{
			sql: "COPY acc (note_plain, owner, id) FROM STDIN (FORMAT csv, HEADER, NULL 'N')",
			chunks: []string{"note_plain,owner,id\n\"multi\nline\",\"Ann, \"\"the\"\" first\",1\n",
				"N,\"N\",2\nx,", "Bob,3\n"},
			check: "SELECT id, coalesce(note_plain, 'NULL'), convert_from(owner__eq, 'UTF8'), balance__eq IS NULL FROM acc ORDER BY id",
			want:  "1 multi\nline Ann, \"the\" first true\n2 NULL N true\n3 x Bob true",
		},
		{
			sql:    "COPY acc FROM STDIN",
			chunks: []string{"7\ttab\\there\t\\N\t\\\\N\n8\t\\x41\t12.50\t\n"},
			check:  "SELECT id, convert_from(owner__eq, 'UTF8'), coalesce(convert_from(balance__add, 'UTF8'), 'NULL'), note_plain FROM acc ORDER BY id",
			want:   "7 tab\there NULL \\N\n8 A 12.50 ",
		},
	} {
		stmts, err := Parse(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanCopy(stmts[0], tables[Relations(stmts[0])[0].Name])
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		data, err := copyStream(t, p, tc.chunks)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "TRUNCATE "+pgx.Identifier{p.Table.Physical}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.PgConn().CopyFrom(ctx, bytes.NewReader(data), p.SQL); err != nil {
			t.Fatalf("%s: server: %v\n%q", tc.sql, err, data)
		}
		rows, err := tx.Query(ctx, tc.check)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			var f []string
			for _, v := range vals {
				f = append(f, fmt.Sprint(v))
			}
			lines = append(lines, strings.Join(f, " "))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(lines, "\n"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.sql, got, tc.want)
		}
		_ = tx.Rollback(ctx)
	}
}

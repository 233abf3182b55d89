package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/engine"
)

// TestExecuteRowLimits reads portals in parts, as pgjdbc's fetch size and
// asyncpg's cursors do (Execute with a row limit), over results the proxy
// sorts, filters or aggregates and over one the server orders, and
// compares every answer (rows, PortalSuspended or CommandComplete and its
// tag, errors) with plaintext PostgreSQL's.
func TestExecuteRowLimits(t *testing.T) {
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	plainDB := newEncDB(t)
	enc := p.connect(t, pgx.QueryExecModeCacheStatement)
	plain := plainDB.direct(t)
	const ddl = "CREATE TABLE parts (id int, name text, amount numeric(10,2))"
	for _, c := range []*pgx.Conn{enc, plain} {
		mustExec(t, c, ddl)
		mustExec(t, c, "INSERT INTO parts SELECT i, 'name ' || (i * 7 % 13), i * 3 % 17 + 0.25 FROM generate_series(1, 40) i")
	}
	queries := []string{
		"SELECT id, name FROM parts ORDER BY name, id",                              // sorted by the proxy
		"SELECT id, amount FROM parts WHERE amount + 1 > 9 ORDER BY id",             // filtered by the proxy
		"SELECT name, count(*), sum(amount) FROM parts GROUP BY name ORDER BY name", // aggregated
		"SELECT sum(amount) FROM parts",
		"SELECT id, name FROM parts ORDER BY id", // ordered by the server
		"SELECT id FROM parts WHERE false",
	}
	cases := []struct {
		name    string
		limits  []uint32
		perSync bool // a Sync after each Execute, in a transaction block
		closeAt int  // Close the portal after this many Executes (0: never)
	}{
		{name: "parts", limits: []uint32{7, 7, 0}},
		{name: "exact", limits: []uint32{40, 1}},
		{name: "small", limits: []uint32{1, 2, 3, 5, 8, 13, 21}},
		{name: "large", limits: []uint32{1000}},
		{name: "synced", limits: []uint32{6, 6, 6, 100, 4}, perSync: true},
		{name: "closed", limits: []uint32{5, 5}, perSync: true, closeAt: 1},
	}
	for _, q := range queries {
		for _, tc := range cases {
			t.Run(tc.name+"/"+q, func(t *testing.T) {
				want := limitTranscript(t, plainDB.direct(t), q, tc.limits, tc.perSync, tc.closeAt)
				got := limitTranscript(t, p.connect(t, pgx.QueryExecModeCacheStatement), q, tc.limits, tc.perSync, tc.closeAt)
				if got != want {
					t.Errorf("through the proxy:\n%s\ndirectly:\n%s", got, want)
				}
			})
		}
	}
}

// limitTranscript runs sql on c as a portal read with Executes of the
// given row limits and returns what the server answered, one line a
// message. With perSync, the portal is named, the Executes are in a
// transaction block, and each is followed by a Sync; closeAt closes the
// portal after that many Executes.
func limitTranscript(t *testing.T, c *pgx.Conn, sql string, limits []uint32, perSync bool, closeAt int) string {
	t.Helper()
	hc, err := c.PgConn().Hijack()
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Conn.Close()
	fe := hc.Frontend
	var out strings.Builder
	// read records the answers up to ReadyForQuery.
	read := func() {
		for {
			m, err := fe.Receive()
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			switch m := m.(type) {
			case *pgproto3.DataRow:
				for i, v := range m.Values {
					if i > 0 {
						out.WriteByte('|')
					}
					if v == nil {
						out.WriteString("NULL")
					}
					out.Write(v)
				}
				out.WriteByte('\n')
			case *pgproto3.PortalSuspended:
				out.WriteString("suspended\n")
			case *pgproto3.CommandComplete:
				fmt.Fprintf(&out, "complete %s\n", m.CommandTag)
			case *pgproto3.ErrorResponse:
				fmt.Fprintf(&out, "error %s\n", m.Code)
			case *pgproto3.ReadyForQuery:
				fmt.Fprintf(&out, "ready %c\n", m.TxStatus)
				return
			}
		}
	}
	send := func(msgs ...pgproto3.FrontendMessage) {
		for _, m := range msgs {
			fe.Send(m)
		}
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	portal := ""
	if perSync {
		portal = "part"
		send(&pgproto3.Query{String: "BEGIN"})
		read()
	}
	send(&pgproto3.Parse{Query: sql}, &pgproto3.Bind{DestinationPortal: portal, ResultFormatCodes: []int16{0}}, &pgproto3.Describe{ObjectType: 'P', Name: portal})
	for i, n := range limits {
		if closeAt > 0 && i == closeAt {
			fe.Send(&pgproto3.Close{ObjectType: 'P', Name: portal})
		}
		fe.Send(&pgproto3.Execute{Portal: portal, MaxRows: n})
		if perSync {
			send(&pgproto3.Sync{})
			read()
		}
	}
	if !perSync {
		send(&pgproto3.Sync{})
		read()
	} else {
		send(&pgproto3.Query{String: "ROLLBACK"})
		read()
	}
	return out.String()
}

// TestExecuteRowLimitsHeldMemory: the rows the session keeps for a
// limited Execute count against --max-held-memory, as a sort's do: past
// it the statement fails with 53200 and the session goes on. Without a
// row limit the same rows stream and nothing is kept.
func TestExecuteRowLimitsHeldMemory(t *testing.T) {
	db := newEncDB(t)
	p := startProxyWith(t, db, engine.Config{MaxHeldBytes: 1024})
	c := p.connect(t, pgx.QueryExecModeCacheStatement)
	mustExec(t, c, "CREATE TABLE kept (id int, note text)")
	mustExec(t, c, "INSERT INTO kept SELECT i, repeat('x', 50) FROM generate_series(1, 100) i")
	const q = "SELECT id, note FROM kept WHERE note LIKE '%x%'" // filtered by the proxy, not sorted
	got := limitTranscript(t, p.connect(t, pgx.QueryExecModeCacheStatement), q, []uint32{5}, false, 0)
	if !strings.Contains(got, "error 53200") || strings.Contains(got, "suspended") {
		t.Errorf("a limited Execute keeping 100 rows of 50 bytes under a 1 kB limit:\n%s", got)
	}
	got = limitTranscript(t, p.connect(t, pgx.QueryExecModeCacheStatement), q, []uint32{0}, false, 0)
	if !strings.Contains(got, "complete SELECT 100") {
		t.Errorf("the same rows without a row limit:\n%s", got)
	}
	var n int
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM kept").Scan(&n); err != nil || n != 100 {
		t.Errorf("the session after: %d, %v", n, err)
	}
}

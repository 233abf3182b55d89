package shape

import (
	"slices"
	"strings"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

func TestOf(t *testing.T) {
	for _, c := range []struct {
		sql    string
		want   string // "" when Of gives up
		oids   []uint32
		values []string
	}{
		{"SELECT abalance FROM pgbench_accounts WHERE aid = 4711;", "SELECT abalance FROM pgbench_accounts WHERE aid = $1;", []uint32{23}, []string{"4711"}},
		{"UPDATE pgbench_accounts SET abalance = abalance + -1234 WHERE aid = 5", "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2", []uint32{23, 23}, []string{"-1234", "5"}},
		{"INSERT INTO t (a, b, c) VALUES (1, 'it''s', 2.5)", "INSERT INTO t (a, b, c) VALUES ($1, $2, 2.5)", []uint32{23, 0}, []string{"1", "it's"}},
		{"SELECT c FROM sbtest1 WHERE id BETWEEN 10 AND 5000000000", "SELECT c FROM sbtest1 WHERE id BETWEEN $1 AND 5000000000", []uint32{23}, []string{"10"}},
		{"SELECT x FROM t WHERE y = -2147483648 AND z = 99999999999999999999 AND w = 1e5", "SELECT x FROM t WHERE y = $1 AND z = 99999999999999999999 AND w = 1e5", []uint32{23}, []string{"-2147483648"}},
		{"SELECT a FROM t WHERE a-1 > a - 2 OR (a)-3 = -4", "SELECT a FROM t WHERE a-$1 > a - $2 OR (a)-$3 = $4", []uint32{23, 23, 23, 23}, []string{"1", "2", "3", "-4"}},
		{"SELECT DISTINCT ON (1) a, b FROM t JOIN u ON u.x = 2 WHERE c = 3", "SELECT DISTINCT ON (1) a, b FROM t JOIN u ON u.x = $1 WHERE c = $2", []uint32{23, 23}, []string{"2", "3"}},
		{"SELECT a FROM t WHERE a = 1 * 2 OR 3 + a > 4 OR 5 = 6 OR 7 = a", "SELECT a FROM t WHERE a = 1 * 2 OR 3 + a > $1 OR $2 = $3 OR $4 = a", []uint32{23, 23, 23, 23}, []string{"4", "5", "6", "7"}},
		{"SELECT -1, 'x' AS v FROM t WHERE b = 'y'", "SELECT -1, 'x' AS v FROM t WHERE b = $1", []uint32{0}, []string{"y"}},
		{"SELECT a FROM t ORDER BY 1 LIMIT 10", "SELECT a FROM t ORDER BY 1 LIMIT 10", nil, nil},
		{"SELECT a, count(*) FROM t WHERE b > 3 GROUP BY 1 HAVING count(*) > 2", "SELECT a, count(*) FROM t WHERE b > $1 GROUP BY 1 HAVING count(*) > $2", []uint32{23, 23}, []string{"3", "2"}},
		{"SELECT a FROM t WHERE a > (SELECT max(a) FROM u WHERE b = 5 ORDER BY 1) AND c = 7", "SELECT a FROM t WHERE a > (SELECT max(a) FROM u WHERE b = $1 ORDER BY 1) AND c = $2", []uint32{23, 23}, []string{"5", "7"}},
		{"SELECT a FROM t WHERE CAST(a AS varchar(20)) = 'x' AND a::numeric(10,2) > 5", "SELECT a FROM t WHERE CAST(a AS varchar(20)) = $1 AND a::numeric(10,2) > $2", []uint32{0, 23}, []string{"x", "5"}},
		{"SELECT a FROM t WHERE s = ANY(ARRAY['a', 'b']) AND a[1] = 2 AND f(3, 'z') > 4", "SELECT a FROM t WHERE s = ANY(ARRAY['a', 'b']) AND a[1] = $1 AND f($2, $3) > $4", []uint32{23, 23, 0, 23}, []string{"2", "3", "z", "4"}},
		{"SELECT a FROM t WHERE d > date '2020-01-01' AND i < interval '1 day'", "SELECT a FROM t WHERE d > date '2020-01-01' AND i < interval '1 day'", nil, nil},
		{"SELECT a FROM t WHERE d > '2020-01-01'::date", "SELECT a FROM t WHERE d > '2020-01-01'::date", nil, nil},
		{`SELECT "a""b" FROM "T" WHERE "x" IN (1, 2, 3)`, `SELECT "a""b" FROM "T" WHERE "x" IN ($1, $2, $3)`, []uint32{23, 23, 23}, []string{"1", "2", "3"}},
		{"SELECT a FROM t", "SELECT a FROM t", nil, nil},
		{"WITH w AS (SELECT 1 AS x) SELECT x FROM w WHERE x <> 2", "WITH w AS (SELECT 1 AS x) SELECT x FROM w WHERE x <> $1", []uint32{23}, []string{"2"}},
		{"UPDATE t SET a = a + 1 WHERE b = 2 RETURNING a + 3", "UPDATE t SET a = a + $1 WHERE b = $2 RETURNING a + 3", []uint32{23, 23}, []string{"1", "2"}},
		{"INSERT INTO t SELECT 1, b FROM u WHERE c = 2 ON CONFLICT (a) DO UPDATE SET d = 3", "INSERT INTO t SELECT 1, b FROM u WHERE c = $1 ON CONFLICT (a) DO UPDATE SET d = $2", []uint32{23, 23}, []string{"2", "3"}},
		{"DELETE FROM t WHERE s LIKE 'a%' OR s IS NULL", "DELETE FROM t WHERE s LIKE $1 OR s IS NULL", []uint32{0}, []string{"a%"}},
		{"select a from t where b = .5 and c = -0 and d = 007 limit 10", "select a from t where b = .5 and c = $1 and d = $2 limit 10", []uint32{23, 23}, []string{"0", "7"}},

		// Given up on.
		{"SELECT 1; SELECT 2", "", nil, nil},
		{"SELECT 1 -- comment", "", nil, nil},
		{"SELECT /* c */ 1", "", nil, nil},
		{"SELECT E'a\\nb'", "", nil, nil},
		{"SELECT 'a\\b'", "", nil, nil},
		{"SELECT $1", "", nil, nil},
		{"SELECT $$x$$", "", nil, nil},
		{"SELECT x<-5 FROM t", "", nil, nil},
		{"SELECT a FROM t WHERE b = 'a'\n'b'", "", nil, nil},
		{"SELECT 1 INTO t2", "", nil, nil},
		{"SELECT sum(a) OVER (ORDER BY b ROWS 2 PRECEDING) FROM t", "", nil, nil},
		{"CREATE TABLE t (a int)", "", nil, nil},
		{"SET x = 5", "", nil, nil},
		{"SELECT 0x1F", "", nil, nil},
		{"SELECT 'unterminated", "", nil, nil},
		{"SELECT (1", "", nil, nil},
	} {
		sh, ok := Of(c.sql)
		if c.want == "" {
			if ok {
				t.Errorf("Of(%q) = %q, want it given up on", c.sql, sh.SQL)
			}
			continue
		}
		if !ok {
			t.Errorf("Of(%q) gave up", c.sql)
			continue
		}
		var values []string
		for _, v := range sh.Values {
			values = append(values, string(v))
		}
		if sh.SQL != c.want || !slices.Equal(sh.OIDs, c.oids) || !slices.Equal(values, c.values) {
			t.Errorf("Of(%q) = %q %v %q, want %q %v %q", c.sql, sh.SQL, sh.OIDs, values, c.want, c.oids, c.values)
		}
		if got := fill(t, sh); got != c.sql {
			t.Errorf("Of(%q): its tokens put back give %q", c.sql, got)
		}
	}
}

// fill puts sh's tokens back in place of its parameters.
func fill(t testing.TB, sh Shape) string {
	refs, ok := Refs(sh.SQL)
	if !ok {
		t.Fatalf("Refs(%q) gave up", sh.SQL)
	}
	var b strings.Builder
	at := 0
	for _, r := range refs {
		b.WriteString(sh.SQL[at:r.Start])
		b.WriteString(sh.Tokens[r.N-1])
		at = r.End
	}
	return b.String() + sh.SQL[at:]
}

func TestRefs(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want []int
	}{
		{"SELECT $1, '$2', E'\\'$3', \"$4\", $5::bytea[] FROM t WHERE a->>'$6' = $7", []int{1, 5, 7}},
		{"SELECT x FROM t WHERE a = $12", []int{12}},
	} {
		refs, ok := Refs(c.sql)
		if !ok {
			t.Errorf("Refs(%q) gave up", c.sql)
			continue
		}
		var got []int
		for _, r := range refs {
			got = append(got, r.N)
			if c.sql[r.Start] != '$' {
				t.Errorf("Refs(%q): %d does not start at a $", c.sql, r.N)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Refs(%q) = %v, want %v", c.sql, got, c.want)
		}
	}
}

// FuzzOf checks that a shape puts back together into its statement, has
// one value and type per parameter, and parses wherever the statement
// does.
func FuzzOf(f *testing.F) {
	for _, s := range []string{
		"SELECT abalance FROM pgbench_accounts WHERE aid = 4711",
		"UPDATE t SET a = a + -5, b = 'x''y' WHERE c BETWEEN 1.5 AND 2e3",
		"INSERT INTO t VALUES (1, 'a', -2.5, NULL) RETURNING id",
		"SELECT a::numeric(10,2) FROM t ORDER BY 1 LIMIT 5",
		"WITH w AS (SELECT 1) SELECT * FROM w, t WHERE t.a IN (1, -2, '3')",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		sh, ok := Of(sql)
		if !ok {
			return
		}
		if len(sh.OIDs) != len(sh.Values) || len(sh.Tokens) != len(sh.Values) {
			t.Fatalf("Of(%q): %d types, %d values, %d tokens", sql, len(sh.OIDs), len(sh.Values), len(sh.Tokens))
		}
		if got := fill(t, sh); got != sql {
			t.Fatalf("Of(%q): its tokens put back give %q", sql, got)
		}
		if _, err := pg_query.Parse(sql); err == nil {
			if _, err := pg_query.Parse(sh.SQL); err != nil {
				t.Fatalf("Of(%q) = %q, which does not parse: %v", sql, sh.SQL, err)
			}
		}
	})
}

// BenchmarkOf shapes the statements of pgbench's tpcb-like transaction,
// as -M simple sends them, and references the parameters of a rewritten
// one.
//
//	go test -run '^$' -bench . -benchmem ./internal/shape
func BenchmarkOf(b *testing.B) {
	statements := []string{
		"UPDATE pgbench_accounts SET abalance = abalance + -3141 WHERE aid = 59265;",
		"SELECT abalance FROM pgbench_accounts WHERE aid = 59265;",
		"UPDATE pgbench_tellers SET tbalance = tbalance + -3141 WHERE tid = 7;",
		"UPDATE pgbench_branches SET bbalance = bbalance + -3141 WHERE bid = 1;",
		"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (7, 1, 59265, -3141, CURRENT_TIMESTAMP);",
	}
	b.Run("Of", func(b *testing.B) {
		for b.Loop() {
			for _, sql := range statements {
				if _, ok := Of(sql); !ok {
					b.Fatalf("Of(%q) gave up", sql)
				}
			}
		}
	})
	b.Run("Refs", func(b *testing.B) {
		const sql = "INSERT INTO pgbench_history (tid, tid__eq, tid__ord, bid, bid__eq, bid__ord, aid__eq, aid__ord, delta__eq, delta__ord, mtime) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CURRENT_TIMESTAMP)"
		for b.Loop() {
			if _, ok := Refs(sql); !ok {
				b.Fatal("Refs gave up")
			}
		}
	})
}

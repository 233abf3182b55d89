package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestGeneratedDifferential generates random queries over the corpus
// tables (every type, every onion, sensitive, eq-only, join-group and
// plain columns) in the spirit of SQLancer, runs each on plaintext
// PostgreSQL and through the proxy over the encrypted copy, in the simple
// protocol and prepared, and requires for each: the same rows (as
// multisets, or in order where ORDER BY fixes it), or the same error
// class, or a refusal (0A000); never a wrong answer, and the session
// answers SELECT 1 afterwards. The string constants compared with
// encrypted columns must not appear in the server's log.
//
// It is seeded and bounded: PGONION_DIFF_SEED, PGONION_DIFF_QUERIES and
// PGONION_DIFF_SECONDS override the seed (default: fixed), the number of
// queries and the time limit. A failure prints the seed and the query;
// queries that found bugs go to testdata/queries.sql.
func TestGeneratedDifferential(t *testing.T) {
	ctx := context.Background()
	seed := envInt(t, "PGONION_DIFF_SEED", 19)
	queries := envInt(t, "PGONION_DIFF_QUERIES", 2000)
	limit := time.Duration(envInt(t, "PGONION_DIFF_SECONDS", 90)) * time.Second

	db := newEncDB(t)
	logAll(t, db.direct(t))
	p := startProxy(t, db, corpusPolicy)
	enc := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	plainDSN := pgtest.DSN(t)
	plain, err := pgx.Connect(ctx, plainDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close(context.Background()) })
	// The plaintext database's failing statements would put the same
	// constants in the shared server log.
	mustExec(t, plain, "ALTER DATABASE "+pgx.Identifier{plain.Config().Database}.Sanitize()+" SET log_min_error_statement = panic")
	plain.Close(ctx)
	if plain, err = pgx.Connect(ctx, plainDSN); err != nil {
		t.Fatal(err)
	}
	for _, ddl := range corpusDDL {
		mustExec(t, enc, ddl)
		mustExec(t, plain, ddl)
	}
	for _, ins := range corpusRows() {
		mustExec(t, enc, ins)
		mustExec(t, plain, ins)
	}
	g := newQueryGen(t, plain, seed)
	read := serverLog(t)

	start := time.Now()
	var compared, refused, errored, runs int
	for i := range queries {
		if time.Since(start) > limit {
			t.Logf("stopped after %d queries (time bound %v)", i, limit)
			break
		}
		q := g.query()
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			runs++
			want, werr := runCorpusQuery(ctx, plain, mode, q.sql, q.params)
			got, gerr := runCorpusQuery(ctx, enc, mode, q.sql, q.params)
			switch {
			case gerr != nil && pgCode(gerr) == "0A000":
				refused++
			case werr != nil || gerr != nil:
				if pgCode(gerr) != pgCode(werr) || (werr == nil) != (gerr == nil) {
					t.Errorf("seed %d query %d [%v]: %s\n  proxy: %v\n  direct: %v", seed, i, mode, q.sql, gerr, werr)
				}
				errored++
			default:
				if d := compareResults(&q, got, want); d != "" {
					t.Errorf("seed %d query %d [%v]: wrong answer: %s\n  %s\n    proxy  %s\n    direct %s", seed, i, mode, q.sql, d, firstRows(got), firstRows(want))
				}
				compared++
			}
			if gerr != nil {
				var one int
				if err := enc.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
					t.Fatalf("seed %d query %d [%v]: the session did not survive %v: %v\n  %s", seed, i, mode, gerr, err, q.sql)
				}
			}
			if enc.IsClosed() {
				t.Fatalf("seed %d query %d: the proxy closed the session\n  %s", seed, i, q.sql)
			}
		}
		if t.Failed() && len(g.failures) == 0 {
			g.failures = append(g.failures, q.sql)
		}
	}
	t.Logf("seed %d: %d runs in %v: %d compared, %d refused (0A000), %d failing alike", seed, runs, time.Since(start).Round(time.Millisecond), compared, refused, errored)
	if compared < runs/3 {
		t.Errorf("only %d of %d runs compared rows: the generator mostly produces refusals", compared, runs)
	}
	log := read()
	for _, s := range slices.Sorted(func(yield func(string) bool) {
	secrets:
		for s := range g.secrets {
			for pub := range g.public {
				// The same text, in any case, may be in the log as a
				// plain column's constant.
				if strings.Contains("'"+strings.ToLower(pub)+"'", strings.ToLower(s)) {
					continue secrets
				}
			}
			if !yield(s) {
				return
			}
		}
	}) {
		if containsDelimited([]byte(strings.ToLower(string(log))), []byte(strings.ToLower(s))) {
			line := ""
			for _, l := range strings.Split(string(log), "\n") {
				if strings.Contains(strings.ToLower(l), strings.ToLower(s)) {
					line = l
					break
				}
			}
			t.Errorf("a constant compared with an encrypted column reached the server log: %q in %s", s, line)
		}
	}
}

func envInt(t *testing.T, name string, def int) int {
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}
	return def
}

// genColumn is a column of t1 the generator compares.
type genColumn struct {
	name      string
	family    string // int, num, text, date, ts, tz, bool, bytea
	encrypted bool
	values    []string // SQL literals of values in the data
}

// queryGen generates queries over t1 (and t2 for joins).
type queryGen struct {
	r        *rand.Rand
	cols     []genColumn
	secrets  map[string]bool // string constants compared with encrypted columns
	public   map[string]bool // string constants compared with plain columns
	failures []string
}

func newQueryGen(t *testing.T, plain *pgx.Conn, seed int) *queryGen {
	g := &queryGen{r: rand.New(rand.NewPCG(uint64(seed), 0x5eed)), secrets: map[string]bool{}, public: map[string]bool{}}
	defs := []struct{ name, family string }{
		{"id", "int"}, {"pn", "int"}, {"grp", "text"},
		{"si", "int"}, {"i", "int"}, {"b", "int"}, {"n", "num"}, {"un", "num"},
		{"tx", "text"}, {"vc", "text"}, {"ch", "text"}, {"d", "date"}, {"ts", "ts"}, {"tz", "tz"},
		{"flag", "bool"}, {"bin", "bytea"}, {"eq_i", "int"}, {"eq_t", "text"}, {"secret", "int"}, {"k", "int"},
	}
	plainCols := map[string]bool{"id": true, "grp": true, "pn": true}
	for _, d := range defs {
		rows, err := plain.Query(context.Background(), fmt.Sprintf("SELECT DISTINCT quote_literal(%s) FROM t1 WHERE %s IS NOT NULL ORDER BY 1 LIMIT 40", d.name, d.name))
		if err != nil {
			t.Fatal(err)
		}
		vals, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		g.cols = append(g.cols, genColumn{name: d.name, family: d.family, encrypted: !plainCols[d.name], values: vals})
	}
	return g
}

func (g *queryGen) pick(n int) int { return g.r.IntN(n) }

// intColumn returns an int4 column of t1.
func (g *queryGen) intColumn() string { return []string{"i", "eq_i", "k", "pn", "secret"}[g.pick(5)] }

func (g *queryGen) col() genColumn { return g.cols[g.pick(len(g.cols))] }

// constFor returns a literal for a comparison with c: a value of the
// data most of the time, else an edge value of its family.
func (g *queryGen) constFor(c genColumn) string {
	var lit string
	if len(c.values) > 0 && g.pick(4) > 0 {
		lit = c.values[g.pick(len(c.values))]
	} else {
		edges := map[string][]string{
			"int":   {"0", "-1", "2147483647", "-32768", "9223372036854775807", "42", "3000000000"},
			"num":   {"0", "1.5", "-0.01", "9999999999.99", "'NaN'", "1e3"},
			"text":  {"''", "'zz'", "'a'", "'hello'", "'über'"},
			"date":  {"'2001-01-01'", "'infinity'", "'-infinity'", "'2003-06-15'"},
			"ts":    {"'2011-05-05 10:00'", "'infinity'", "'2000-01-01 00:00:00'"},
			"tz":    {"'2012-01-01 00:00:00+00'", "'infinity'", "'2015-03-01 12:00:00-08'"},
			"bool":  {"true", "false"},
			"bytea": {`'\x'`, `'\xdeadbeef'`, `'\x00'`},
		}[c.family]
		lit = edges[g.pick(len(edges))]
	}
	if strings.HasPrefix(lit, "'") && len(lit) >= 7 && c.family == "text" {
		s := strings.ReplaceAll(lit[1:len(lit)-1], "''", "'")
		if c.encrypted {
			g.secrets[s] = true
		} else {
			g.public[s] = true // may be in the log as a plain column's constant
		}
	}
	return lit
}

func (g *queryGen) comparison(depth int) string {
	c := g.col()
	switch k := g.pick(20); {
	case k < 7:
		ops := []string{"=", "<>", "<", "<=", ">", ">="}
		return fmt.Sprintf("%s %s %s", c.name, ops[g.pick(len(ops))], g.constFor(c))
	case k < 9:
		// Two columns of one family.
		for range 10 {
			o := g.col()
			if o.family == c.family && o.name != c.name {
				ops := []string{"=", "<>", "<"}
				return fmt.Sprintf("%s %s %s", c.name, ops[g.pick(len(ops))], o.name)
			}
		}
		return c.name + " IS NULL"
	case k < 11:
		not := []string{"", "NOT "}[g.pick(2)]
		return fmt.Sprintf("%s IS %sNULL", c.name, not)
	case k < 13:
		not := []string{"", "NOT "}[g.pick(2)]
		return fmt.Sprintf("%s %sIN (%s, %s, %s)", c.name, not, g.constFor(c), g.constFor(c), g.constFor(c))
	case k < 14:
		not := []string{"", "NOT "}[g.pick(2)]
		return fmt.Sprintf("%s %sBETWEEN %s AND %s", c.name, not, g.constFor(c), g.constFor(c))
	case k < 17:
		return g.like()
	case k < 18:
		// A constant in a CTE, a LATERAL subquery or IN (SELECT ...):
		// it must not reach the server in plaintext either.
		return g.indirect(c)
	case k < 19 && (c.family == "date" || c.family == "int") && g.pick(2) == 0:
		// Constant arithmetic the proxy folds (date + bigint is an error).
		if c.family == "date" {
			adds := []string{"1", "30::int4", "2::bigint", "-7"}
			return fmt.Sprintf("%s %s DATE '2003-01-01' + %s", c.name, []string{"=", "<", ">="}[g.pick(3)], adds[g.pick(len(adds))])
		}
		return fmt.Sprintf("%s %s %s + %d", c.name, []string{"=", "<", ">="}[g.pick(3)], g.constFor(c), g.pick(5))
	case k < 19:
		// A length cast on a constant.
		if c.family == "text" {
			lit := g.constFor(c)
			return fmt.Sprintf("%s = %s::varchar(%d)", c.name, lit, 1+g.pick(6))
		}
		return c.name + " IS NOT NULL"
	}
	if depth > 0 {
		return g.pred(depth - 1)
	}
	return "true"
}

func (g *queryGen) like() string {
	var texts []genColumn
	for _, c := range g.cols {
		if c.family == "text" {
			texts = append(texts, c)
		}
	}
	c := texts[g.pick(len(texts))]
	word := corpusWords[g.pick(len(corpusWords))]
	runes := []rune(word)
	i := g.pick(len(runes))
	j := i + g.pick(len(runes)-i+1)
	piece := string(runes[i:j])
	pats := []string{piece + "%", "%" + piece + "%", "%" + piece, piece, "_" + piece + "%"}
	pat := pats[g.pick(len(pats))]
	esc := ""
	if g.pick(4) == 0 {
		pat = strings.ReplaceAll(pat, "#", "##")
		esc = " ESCAPE '#'"
		if g.pick(2) == 0 {
			esc = " ESCAPE '#'::text"
		}
	}
	op := []string{"LIKE", "NOT LIKE", "ILIKE", "NOT ILIKE"}[g.pick(4)]
	if c.encrypted && len(piece) >= 5 {
		g.secrets[piece] = true
	} else if !c.encrypted {
		g.public[pat] = true // the whole pattern is in the log
	}
	return fmt.Sprintf("%s %s '%s'%s", c.name, op, strings.ReplaceAll(pat, "'", "''"), esc)
}

func (g *queryGen) indirect(c genColumn) string {
	lit := g.constFor(c)
	switch g.pick(3) {
	case 0:
		return fmt.Sprintf("%s IN (SELECT %s)", c.name, lit)
	case 1:
		return fmt.Sprintf("EXISTS (SELECT 1 FROM (SELECT %s AS v) s WHERE s.v = t1.%s)", lit, c.name)
	}
	return fmt.Sprintf("%s = ANY (ARRAY[%s, %s])", c.name, lit, g.constFor(c))
}

func (g *queryGen) pred(depth int) string {
	if depth == 0 {
		return g.comparison(0)
	}
	switch g.pick(6) {
	case 0:
		return "NOT (" + g.pred(depth-1) + ")"
	case 1:
		return "(" + g.pred(depth-1) + " AND " + g.pred(depth-1) + ")"
	case 2:
		return "(" + g.pred(depth-1) + " OR " + g.pred(depth-1) + ")"
	}
	return g.comparison(depth - 1)
}

// query returns one generated query with how its rows compare.
func (g *queryGen) query() corpusQuery {
	sel := []string{"id"}
	for range g.pick(3) {
		sel = append(sel, g.col().name)
	}
	where := g.pred(g.pick(3))
	q := corpusQuery{}
	switch k := g.pick(15); {
	case k == 14:
		// A window function over a random OVER clause.
		q.sql = fmt.Sprintf("SELECT id, %s FROM t1 WHERE %s ORDER BY id", g.window(), where)
		q.ordered = true
	case k == 10:
		// A parameter of another integer type than the column's: an
		// int8 beyond int4 equals no int4 value.
		c := g.intColumn()
		vals := []any{int64(5000000000), int64(-3000000000), int64(42), int64(0), int64(9223372036854775807)}
		q.sql = fmt.Sprintf("SELECT id FROM t1 WHERE %s %s $1::int8", c, []string{"=", "<>", "<", ">="}[g.pick(4)])
		q.params = []any{vals[g.pick(len(vals))]}
	case k == 11:
		// Aggregates over encrypted columns.
		q.sql = fmt.Sprintf("SELECT grp, count(*), sum(i), min(d), max(n), count(DISTINCT si) FROM t1 WHERE %s GROUP BY grp", where)
	case k == 12:
		// Ordered by an encrypted column, ties broken by id.
		c := g.col()
		q.sql = fmt.Sprintf("SELECT id, %s FROM t1 WHERE %s ORDER BY %s %s, id LIMIT %d", c.name, where, c.name,
			[]string{"", "DESC", "NULLS FIRST", "DESC NULLS LAST"}[g.pick(4)], 1+g.pick(30))
		q.ordered = true
	case k == 13:
		// A join on the join group's column.
		q.sql = fmt.Sprintf("SELECT t1.id, t2.id FROM t1 JOIN t2 ON t1.k = t2.k WHERE %s", strings.ReplaceAll(where, "t1.", ""))
	case k < 6:
		q.sql = fmt.Sprintf("SELECT %s FROM t1 WHERE %s", strings.Join(sel, ", "), where)
		if g.pick(3) == 0 {
			q.sql += " ORDER BY id"
			q.ordered = true
			if g.pick(2) == 0 {
				q.sql += fmt.Sprintf(" LIMIT %d", 1+g.pick(20))
			}
		}
	case k < 8:
		// A CTE or LATERAL constant joined to the table.
		c := g.col()
		lit := g.constFor(c)
		if g.pick(2) == 0 {
			q.sql = fmt.Sprintf("WITH c AS (SELECT %s AS v) SELECT t1.id FROM t1, c WHERE t1.%s = c.v AND %s", lit, c.name, where)
		} else {
			q.sql = fmt.Sprintf("SELECT t1.id FROM t1, LATERAL (SELECT %s AS v) c WHERE t1.%s = c.v AND %s", lit, c.name, where)
		}
	default:
		c := g.col()
		q.sql = fmt.Sprintf("SELECT %s, count(*) FROM t1 WHERE %s GROUP BY %s", c.name, where, c.name)
	}
	q.empty = true // the generator does not know
	return q
}

// window returns a window function over t1's columns with a random OVER
// clause: partitions, an order, a frame and an exclusion. Where the
// value could depend on how the server orders peers (row_number, lag,
// ROWS frames, min of numerics equal at different scales), the order
// ends with id, so that no two rows are peers.
func (g *queryGen) window() string {
	c := g.col()
	orderSensitive := false
	var fn string
	switch k := g.pick(16); {
	case k < 4:
		fn = []string{"rank()", "dense_rank()", "percent_rank()", "cume_dist()"}[k]
	case k == 4:
		fn, orderSensitive = "row_number()", true
	case k == 5:
		fn, orderSensitive = fmt.Sprintf("ntile(%d)", 1+g.pick(12)), true
	case k == 6:
		fn, orderSensitive = fmt.Sprintf("%s(%s, %d, %s)", []string{"lag", "lead"}[g.pick(2)], c.name, g.pick(4)-1, c.name), true
	case k == 7:
		fn, orderSensitive = fmt.Sprintf("%s(%s)", []string{"lag", "lead", "first_value", "last_value"}[g.pick(4)], c.name), true
	case k == 8:
		fn, orderSensitive = fmt.Sprintf("nth_value(%s, %d)", c.name, 1+g.pick(4)), true
	case k == 9:
		fn = "count(*)"
	case k == 10:
		fn = fmt.Sprintf("count(%s)", c.name)
	case k < 13 && c.family != "bool" && c.family != "bytea":
		fn = fmt.Sprintf("%s(%s)", []string{"min", "max"}[g.pick(2)], c.name)
		orderSensitive = c.family == "num"
	default:
		x := []string{"i", "si", "b", "n", "un", "pn"}[g.pick(6)]
		fn = fmt.Sprintf("%s(%s)", []string{"sum", "avg"}[g.pick(2)], x)
	}
	var over []string
	if g.pick(3) == 0 {
		over = append(over, "PARTITION BY "+[]string{"grp", "flag", "eq_t", "d"}[g.pick(4)])
	}
	o := g.col()
	for o.family == "bytea" || o.name == "secret" {
		o = g.col()
	}
	order := ""
	if orderSensitive || g.pick(4) > 0 {
		order = "ORDER BY " + o.name + []string{"", " DESC", " NULLS FIRST", " DESC NULLS LAST"}[g.pick(4)]
	}
	frame := ""
	if order != "" && g.pick(3) > 0 {
		mode := []string{"ROWS", "GROUPS", "RANGE"}[g.pick(3)]
		orderSensitive = orderSensitive || mode == "ROWS"
		bounds := []string{"UNBOUNDED PRECEDING", "%d PRECEDING", "CURRENT ROW", "%d FOLLOWING", "UNBOUNDED FOLLOWING"}
		lo := g.pick(4)
		hi := max(lo, 1+g.pick(4))
		if mode == "RANGE" && ((o.family != "int" && o.family != "num") || orderSensitive) {
			// Offsets need one ORDER BY key, a number here.
			lo, hi = []int{0, 2}[g.pick(2)], []int{2, 4}[g.pick(2)]
		}
		b := func(i int) string {
			switch {
			case !strings.Contains(bounds[i], "%d"):
				return bounds[i]
			case mode == "RANGE" && o.family == "num":
				return strings.Replace(bounds[i], "%d", []string{"0", "0.5", "100", "1e9", "'Infinity'"}[g.pick(5)], 1)
			case mode == "RANGE":
				return strings.Replace(bounds[i], "%d", []string{"0", "1", "1000", "100000", "9223372036854775807"}[g.pick(5)], 1)
			}
			return fmt.Sprintf(bounds[i], g.pick(4))
		}
		frame = fmt.Sprintf(" %s BETWEEN %s AND %s%s", mode, b(lo), b(hi),
			[]string{"", "", " EXCLUDE CURRENT ROW", " EXCLUDE GROUP", " EXCLUDE TIES", " EXCLUDE NO OTHERS"}[g.pick(6)])
	}
	if orderSensitive {
		if order == "" {
			order = "ORDER BY id"
		} else {
			order += ", id"
		}
	}
	over = append(over, order+frame)
	return fmt.Sprintf("%s OVER (%s)", fn, strings.TrimSpace(strings.Join(over, " ")))
}

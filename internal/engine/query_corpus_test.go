package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/pgtest"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// The query corpus (testdata/queries.sql) is a differential test of
// SELECT: every query runs directly on plaintext PostgreSQL and through the
// proxy over the same rows in encrypted tables, in the simple protocol and
// as a prepared statement, and the results must be identical: column names,
// types and formats, and every value byte for byte (text in the simple
// protocol, the binary or text format pgx picks when prepared).
//
// Corpus format: one query per line; blank lines and lines starting with
// "--" are comments. A trailing " -- " starts annotations separated by ';':
//
//	ordered          rows must come in the same order (only where ORDER
//	                 BY makes the order total)
//	orderkey: 2,3    the listed output columns (1-based) must come in the
//	                 same order; the rows are compared as multisets
//	empty            the query returns no rows (otherwise it must return
//	                 some, so that constants that match nothing are caught)
//	params: 5, 'a'   the values of $1, $2, ...: integers, 'strings' (sent
//	                 as text) or NULL
//	error            the query fails directly; the proxy must fail with the
//	                 same SQLSTATE
//	refuse: t1.c     the proxy must refuse with SQLSTATE 0A000 and a message
//	                 containing t1.c; the query must succeed directly
//	simple: reason   answered in the simple protocol only (the proxy
//	                 evaluates its subqueries first); prepared, the proxy
//	                 must refuse it with 0A000
//	known: reason    a known proxy bug: run, logged, not failed
//	typmod: reason   a known difference in the reported type modifiers
//	                 (logged, not failed); everything else is compared

// corpusPolicy: t1 has a column of every supported type with every
// capability the type has (text columns with their Ord onion declared),
// plus eq-only, sensitive and plain columns; t2.name has the default
// capabilities of text (no Ord onion); t2.qty
// and t2.k2 have no add onion; t1.k and t2.k share join group k,
// t2.code and t3.code join group code.
func corpusPolicy(table, column string) rewrite.ColumnPolicy {
	enc := rewrite.ColumnPolicy{Policy: catalog.Encrypted}
	switch strings.TrimPrefix(table, "public.") + "." + column {
	case "t1.id", "t1.grp", "t1.pn", "t2.id", "t3.id", "t3.label":
		return rewrite.ColumnPolicy{Policy: catalog.Plain}
	case "t1.eq_i", "t1.eq_t":
		enc.Capabilities = []string{"eq"}
	case "t1.secret":
		enc.Policy = catalog.Sensitive
	case "t1.k", "t2.k":
		enc.Capabilities, enc.JoinGroup = []string{"eq", "ord"}, "k"
	case "t2.qty", "t2.k2":
		enc.Capabilities = []string{"eq", "ord"}
	case "t1.tx", "t1.vc", "t1.ch":
		// Text columns get their (prefix) Ord onion only when declared.
		enc.Capabilities = []string{"eq", "ord", "search"}
	case "t2.code", "t3.code":
		enc.JoinGroup = "code"
	}
	return enc
}

var corpusDDL = []string{
	`CREATE TABLE t1 (id integer PRIMARY KEY, grp text, pn integer,
		si smallint, i integer, b bigint, n numeric(12,2), un numeric,
		tx text, vc varchar(20), ch character(5),
		d date, ts timestamp, tz timestamptz, flag boolean, bin bytea,
		eq_i integer, eq_t text, secret integer, k integer)`,
	`CREATE TABLE t2 (id integer PRIMARY KEY, k integer, name text, amt numeric(12,2), qty integer, d date, code varchar(20), k2 integer)`,
	`CREATE TABLE t3 (id integer PRIMARY KEY, code varchar(20), label text, rank smallint)`,
	// t4: LIKE patterns as values (wrong answers found in issue 19).
	`CREATE TABLE t4 (id integer, name text)`,
	`INSERT INTO t4 VALUES (1, 'a%'), (2, 'a#x'), (3, 'b'), (4, 'a\'), (5, NULL), (6, 'A%')`,
}

// corpusWords are the text values: duplicates, the empty string, LIKE
// metacharacters, a quote, a backslash, non-ASCII letters.
var corpusWords = []string{"alpha", "beta", "gamma", "Gamma", "delta_x", "50% off", `back\slash`, "über", "日本語",
	"naïve café", "O'Brien", "hello world", "hello_world", "HELLO", "abc", "abcd", "xyz", "a_b%c", "ÜBER"}

// corpusRows returns the INSERT statements of the corpus data, the same
// for every run (fixed seed).
func corpusRows() []string {
	r := rand.New(rand.NewPCG(20240611, 7))
	pick := func(vals ...string) string { return vals[r.IntN(len(vals))] }
	// maybe returns NULL with probability pNull, a pool value with
	// probability pPool, else gen().
	maybe := func(pNull, pPool float64, pool []string, gen func() string) string {
		x := r.Float64()
		switch {
		case x < pNull:
			return "NULL"
		case x < pNull+pPool:
			return pool[r.IntN(len(pool))]
		}
		return gen()
	}
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	word := func() string {
		if r.IntN(10) < 6 {
			return corpusWords[r.IntN(len(corpusWords))]
		}
		return corpusWords[r.IntN(len(corpusWords))] + " " + corpusWords[r.IntN(len(corpusWords))]
	}
	truncate := func(s string, n int) string {
		for utf8.RuneCountInString(s) > n {
			_, size := utf8.DecodeLastRuneInString(s)
			s = s[:len(s)-size]
		}
		return s
	}
	intn := func(lo, hi int64) func() string {
		return func() string { return strconv.FormatInt(lo+r.Int64N(hi-lo+1), 10) }
	}
	num2 := func(max int64) func() string {
		return func() string {
			v := r.Int64N(2*max*100+1) - max*100
			sign := ""
			if v < 0 {
				sign, v = "-", -v
			}
			return fmt.Sprintf("%s%d.%02d", sign, v/100, v%100)
		}
	}
	date := func(base string, days int) func() string {
		t0, _ := time.Parse("2006-01-02", base)
		return func() string { return q(t0.AddDate(0, 0, r.IntN(days)).Format("2006-01-02")) }
	}
	ts := func() string {
		t0 := time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(1000*24*3600)) * time.Second)
		if r.IntN(3) == 0 {
			t0 = t0.Add(time.Duration(r.IntN(1000000)) * time.Microsecond)
		}
		return q(t0.Format("2006-01-02 15:04:05.999999"))
	}
	tz := func() string {
		t0 := time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(2000*24*3600)) * time.Second)
		return q(t0.Format("2006-01-02 15:04:05") + pick("+00", "-08", "+05:30", "+14"))
	}
	hexBytes := func() string {
		b := make([]byte, 1+r.IntN(4))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return fmt.Sprintf(`'\x%x'`, b)
	}

	var stmts []string
	batch := func(table string, rows []string) {
		for len(rows) > 0 {
			n := min(len(rows), 25)
			stmts = append(stmts, "INSERT INTO "+table+" VALUES "+strings.Join(rows[:n], ", "))
			rows = rows[n:]
		}
	}

	var rows []string
	for id := 1; id <= 300; id++ {
		n := maybe(0.1, 0.35, []string{"0.00", "1.50", "-1.50", "10.05", "99.99", "-0.01", "9999999999.99", "-9999999999.99", "42", "1.005", "2.5"}, num2(100000))
		if id == 7 || id == 8 {
			n = "'NaN'"
		}
		f := []string{
			strconv.Itoa(id),
			maybe(0.05, 0.95, []string{"'a'", "'b'", "'c'", "'d'"}, nil),
			maybe(0.1, 0, nil, intn(0, 20)),
			maybe(0.1, 0.4, []string{"0", "1", "-1", "5", "7", "42", "100", "-100", "32767", "-32768"}, intn(-1000, 1000)),
			maybe(0.1, 0.4, []string{"0", "1", "-1", "5", "10", "42", "1000", "-1000", "2147483647", "-2147483648"}, intn(-100000, 100000)),
			maybe(0.1, 0.4, []string{"0", "1", "-1", "42", "10000000000", "-10000000000", "9223372036854775807", "-9223372036854775808"}, intn(-1e15, 1e15)),
			n,
			maybe(0.1, 0.6, []string{"1", "1.0", "1.00", "-0.5", "-0.50", "0", "0.000001", "3.14159265358979323846", "1e20",
				"12345678901234567890.123456789", "'NaN'", "'Infinity'", "'-Infinity'"}, func() string {
				return strconv.FormatFloat((r.Float64()-0.5)*1000, 'f', r.IntN(6), 64)
			}),
			maybe(0.1, 0.05, []string{"''"}, func() string { return q(word()) }),
			maybe(0.1, 0, nil, func() string { return q(truncate(word(), 20)) }),
			maybe(0.1, 0.9, []string{"'ab'", "'abc'", "'ab  '", "'ä'", "''", "'x_y'", "'a%b'", "'hello'", "'HeLLo'", "'z'"}, nil),
			maybe(0.1, 0.12, []string{"'0001-01-01'", "'1970-01-01'", "'2000-02-29'", "'2001-01-01'", "'9999-12-31'", "'infinity'", "'-infinity'",
				"'0044-03-15 BC'", "'5874897-12-31'"}, date("2000-01-01", 2000)),
			maybe(0.1, 0.1, []string{"'infinity'", "'-infinity'", "'4713-11-24 00:00:00 BC'", "'294276-12-31 23:59:59.999999'",
				"'2000-01-01 00:00:00'", "'1999-12-31 23:59:59.999999'"}, ts),
			maybe(0.1, 0.1, []string{"'infinity'", "'-infinity'", "'2000-01-01 00:00:00+00'", "'2021-06-01 12:00:00+05:30'"}, tz),
			maybe(0.15, 0.85, []string{"true", "false"}, nil),
			maybe(0.1, 0.5, []string{`'\x'`, `'\x00'`, `'\xdeadbeef'`, `'\x0102'`, `'\xff'`}, hexBytes),
			maybe(0.1, 0, nil, intn(0, 30)),
			maybe(0.1, 0.9, []string{"'alpha'", "'beta'", "'gamma'", "'Gamma'", "''", "'über'"}, nil),
			maybe(0.2, 0, nil, intn(1000, 9999)),
			maybe(0.1, 0, nil, intn(0, 50)),
		}
		rows = append(rows, "("+strings.Join(f, ", ")+")")
	}
	batch("t1", rows)

	rows = nil
	for id := 1; id <= 200; id++ {
		f := []string{
			strconv.Itoa(id),
			maybe(0.1, 0, nil, intn(0, 60)),
			maybe(0.1, 0, nil, func() string { return q(word()) }),
			maybe(0.1, 0.2, []string{"0.00", "1.50", "-1.50", "9999999999.99"}, num2(5000)),
			maybe(0.1, 0, nil, intn(-100, 100)),
			maybe(0.1, 0.1, []string{"'2001-01-01'", "'infinity'"}, date("2000-01-01", 2000)),
			maybe(0.1, 0, nil, func() string { return fmt.Sprintf("'C%02d'", 1+r.IntN(30)) }),
			maybe(0.1, 0, nil, intn(0, 50)),
		}
		rows = append(rows, "("+strings.Join(f, ", ")+")")
	}
	batch("t2", rows)

	rows = nil
	for id := 1; id <= 40; id++ {
		f := []string{
			strconv.Itoa(id),
			maybe(0.1, 0, nil, func() string { return fmt.Sprintf("'C%02d'", 1+r.IntN(45)) }),
			fmt.Sprintf("'L%d'", id%7),
			maybe(0.1, 0, nil, intn(1, 10)),
		}
		rows = append(rows, "("+strings.Join(f, ", ")+")")
	}
	batch("t3", rows)
	return stmts
}

// corpusQuery is one line of testdata/queries.sql.
type corpusQuery struct {
	line     int
	sql      string
	ordered  bool
	orderKey []int // 0-based output columns
	empty    bool
	isError  bool
	refuse   string // the column the refusal must name; "" when not refused
	simple   string // why it is answered in the simple protocol only
	known    string
	typmod   string
	params   []any
}

func loadCorpus(t *testing.T, path string) []corpusQuery {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusQuery
	for i, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "--") {
			continue
		}
		q := corpusQuery{line: i + 1, sql: line}
		if j := strings.Index(line, " -- "); j >= 0 {
			q.sql = strings.TrimSpace(line[:j])
			for _, ann := range strings.Split(line[j+4:], ";") {
				ann = strings.TrimSpace(ann)
				key, val, _ := strings.Cut(ann, ":")
				val = strings.TrimSpace(val)
				switch key {
				case "ordered":
					q.ordered = true
				case "orderkey":
					for _, s := range strings.Split(val, ",") {
						n, err := strconv.Atoi(strings.TrimSpace(s))
						if err != nil || n < 1 {
							t.Fatalf("queries.sql:%d: bad orderkey %q", q.line, val)
						}
						q.orderKey = append(q.orderKey, n-1)
					}
				case "empty":
					q.empty = true
				case "error":
					q.isError = true
				case "refuse":
					if val == "" {
						t.Fatalf("queries.sql:%d: refuse needs the column the message names", q.line)
					}
					q.refuse = val
				case "known":
					q.known = val
				case "simple":
					q.simple = val
				case "typmod":
					q.typmod = val
				case "params":
					q.params = parseParams(t, q.line, val)
				default:
					t.Fatalf("queries.sql:%d: unknown annotation %q", q.line, ann)
				}
			}
		}
		out = append(out, q)
	}
	return out
}

// parseParams splits "5, 'a,b', NULL" into 5, "a,b", nil.
func parseParams(t *testing.T, line int, s string) []any {
	var out []any
	for s = strings.TrimSpace(s); s != ""; {
		var tok string
		if s[0] == '\'' {
			end := 1
			var b strings.Builder
			for ; end < len(s); end++ {
				if s[end] == '\'' {
					if end+1 < len(s) && s[end+1] == '\'' {
						b.WriteByte('\'')
						end++
						continue
					}
					break
				}
				b.WriteByte(s[end])
			}
			if end >= len(s) {
				t.Fatalf("queries.sql:%d: unterminated string in params", line)
			}
			out = append(out, b.String())
			s = strings.TrimSpace(s[end+1:])
		} else {
			tok, s, _ = strings.Cut(s, ",")
			tok = strings.TrimSpace(tok)
			if strings.EqualFold(tok, "NULL") {
				out = append(out, nil)
			} else if n, err := strconv.ParseInt(tok, 10, 64); err == nil {
				out = append(out, n)
			} else {
				t.Fatalf("queries.sql:%d: bad parameter %q (quote non-integers)", line, tok)
			}
			s = strings.TrimSpace(s)
			continue
		}
		if s != "" {
			if s[0] != ',' {
				t.Fatalf("queries.sql:%d: want ',' after a string parameter", line)
			}
			s = strings.TrimSpace(s[1:])
		}
	}
	return out
}

// corpusResult is what a query returned.
type corpusResult struct {
	fields  []string // name, type OID, format
	typmods []int32
	raw     [][][]byte
	shown   []string // the rows as pgx decodes them, for messages
}

func runCorpusQuery(ctx context.Context, c *pgx.Conn, mode pgx.QueryExecMode, sql string, params []any) (*corpusResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	rows, err := c.Query(ctx, sql, append([]any{mode}, params...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	res := &corpusResult{}
	for _, fd := range rows.FieldDescriptions() {
		res.fields = append(res.fields, fmt.Sprintf("%s oid=%d fmt=%d", fd.Name, fd.DataTypeOID, fd.Format))
		res.typmods = append(res.typmods, fd.TypeModifier)
	}
	for rows.Next() {
		var row [][]byte
		for _, v := range rows.RawValues() {
			if v == nil {
				row = append(row, nil)
			} else {
				row = append(row, append([]byte{}, v...))
			}
		}
		res.raw = append(res.raw, row)
		vals, err := rows.Values()
		if err != nil {
			res.shown = append(res.shown, fmt.Sprintf("(undecodable: %v)", err))
		} else {
			res.shown = append(res.shown, fmt.Sprintf("%v", vals))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// rowKey encodes a row (or some of its columns) unambiguously.
func rowKey(row [][]byte, cols []int) string {
	var b bytes.Buffer
	add := func(v []byte) {
		if v == nil {
			b.WriteString("N;")
			return
		}
		fmt.Fprintf(&b, "%d:%s;", len(v), v)
	}
	if cols == nil {
		for _, v := range row {
			add(v)
		}
	} else {
		for _, c := range cols {
			if c < len(row) {
				add(row[c])
			}
		}
	}
	return b.String()
}

// compareResults returns "" when got matches want under q's ordering.
func compareResults(q *corpusQuery, got, want *corpusResult) string {
	if !slices.Equal(got.fields, want.fields) {
		return fmt.Sprintf("columns differ:\n  proxy  %q\n  direct %q", got.fields, want.fields)
	}
	if q.typmod == "" && !slices.Equal(got.typmods, want.typmods) {
		return fmt.Sprintf("type modifiers differ: proxy %v, direct %v", got.typmods, want.typmods)
	}
	keys := func(r *corpusResult, cols []int) []string {
		var out []string
		for _, row := range r.raw {
			out = append(out, rowKey(row, cols))
		}
		return out
	}
	gk, wk := keys(got, nil), keys(want, nil)
	if len(gk) != len(wk) {
		return fmt.Sprintf("%d rows through the proxy, %d directly", len(gk), len(wk))
	}
	if q.ordered {
		if i := firstDiff(gk, wk); i >= 0 {
			return fmt.Sprintf("rows differ (in order) first at row %d: proxy %s, direct %s", i, got.shown[i], want.shown[i])
		}
		return ""
	}
	if q.orderKey != nil {
		for _, c := range q.orderKey {
			if c >= len(got.fields) {
				return fmt.Sprintf("orderkey column %d out of range", c+1)
			}
		}
		if i := firstDiff(keys(got, q.orderKey), keys(want, q.orderKey)); i >= 0 {
			return fmt.Sprintf("sort keys differ first at row %d: proxy %s, direct %s", i, got.shown[i], want.shown[i])
		}
	}
	gs, ws := slices.Sorted(slices.Values(gk)), slices.Sorted(slices.Values(wk))
	if i := firstDiff(gs, ws); i >= 0 {
		return fmt.Sprintf("rows differ (as multisets): proxy has %s, direct has %s", showKey(gs[i]), showKey(ws[i]))
	}
	return ""
}

func firstDiff(a, b []string) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func showKey(k string) string {
	if len(k) > 300 {
		return fmt.Sprintf("%q...", k[:300])
	}
	return fmt.Sprintf("%q", k)
}

func firstRows(r *corpusResult) string {
	if r == nil {
		return "(no result)"
	}
	n := min(len(r.shown), 5)
	s := strings.Join(r.shown[:n], "\n      ")
	if len(r.shown) > n {
		s += fmt.Sprintf("\n      ... (%d rows)", len(r.shown))
	}
	return s
}

// checkCorpusRun returns what is wrong with one run of q ("" if nothing):
// got and gerr came through the proxy, want and werr directly.
func checkCorpusRun(q *corpusQuery, got *corpusResult, gerr error, want *corpusResult, werr error) string {
	switch {
	case q.refuse != "":
		var pe *pgconn.PgError
		switch {
		case werr != nil:
			return fmt.Sprintf("fails directly: %v", werr)
		case gerr == nil:
			return fmt.Sprintf("answered through the proxy, want a refusal naming %s:\n    proxy  %s", q.refuse, firstRows(got))
		case !errors.As(gerr, &pe) || pe.Code != "0A000":
			return fmt.Sprintf("failed through the proxy with %v, want SQLSTATE 0A000", gerr)
		case !strings.Contains(pe.Message, q.refuse):
			return fmt.Sprintf("refusal %q does not name %s", pe.Message, q.refuse)
		}
		return ""
	case q.isError:
		switch {
		case werr == nil:
			return "succeeds directly, but it is annotated error"
		case gerr == nil:
			return fmt.Sprintf("fails directly (%v) but succeeds through the proxy:\n    proxy  %s", werr, firstRows(got))
		case pgCode(gerr) != pgCode(werr):
			return fmt.Sprintf("fails with SQLSTATE %q through the proxy (%v), %q directly (%v)", pgCode(gerr), gerr, pgCode(werr), werr)
		}
		return ""
	case werr != nil:
		return fmt.Sprintf("fails directly: %v (through the proxy: %v)", werr, gerr)
	case gerr != nil:
		return fmt.Sprintf("fails through the proxy: %v", gerr)
	case len(want.raw) == 0 && !q.empty:
		return "returns no rows directly but is not annotated empty"
	case len(want.raw) > 0 && q.empty:
		return fmt.Sprintf("returns %d rows directly but is annotated empty", len(want.raw))
	}
	if d := compareResults(q, got, want); d != "" {
		return fmt.Sprintf("%s\n    proxy  %s\n    direct %s", d, firstRows(got), firstRows(want))
	}
	return ""
}

// corpusWorld loads the corpus tables through a proxy (enc) and, in
// plaintext, into another database (plain).
func corpusWorld(t *testing.T) (db *encDB, p *proxy, enc, plain *pgx.Conn) {
	t.Helper()
	db = newEncDB(t)
	p = startProxy(t, db, corpusPolicy)
	enc = p.connect(t, pgx.QueryExecModeSimpleProtocol)
	plain, err := pgx.Connect(context.Background(), pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close(context.Background()) })
	for _, ddl := range corpusDDL {
		mustExec(t, enc, ddl)
		mustExec(t, plain, ddl)
	}
	for _, ins := range corpusRows() {
		mustExec(t, enc, ins)
		mustExec(t, plain, ins)
	}
	return db, p, enc, plain
}

func TestQueryCorpus(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	corpus := loadCorpus(t, "testdata/queries.sql")

	db, p, enc, plain := corpusWorld(t)
	for _, tbl := range []string{"t1", "t2", "t3"} {
		var a, b int
		if err := enc.QueryRow(ctx, "SELECT count(*) FROM "+tbl).Scan(&a); err != nil {
			t.Fatal(err)
		}
		if err := plain.QueryRow(ctx, "SELECT count(*) FROM "+tbl).Scan(&b); err != nil {
			t.Fatal(err)
		}
		if a != b || a == 0 {
			t.Fatalf("%s: %d rows through the proxy, %d directly", tbl, a, b)
		}
	}
	// The proxy's tables really are encrypted: the server has only the
	// onions of encrypted columns (e.g. tx__eq), the plain columns as they are.
	var physical []string
	rows, err := db.direct(t).Query(ctx, "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 't1'")
	if err != nil {
		t.Fatal(err)
	}
	physical, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(physical, "grp") || slices.Contains(physical, "tx") || slices.Contains(physical, "si") || !slices.Contains(physical, "tx__eq") {
		t.Fatalf("t1 on the server has columns %v: want grp plain and tx, si encrypted", physical)
	}
	t.Logf("loaded the data in %v", time.Since(start).Round(time.Millisecond))

	modes := []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement}
	var compared, passed, refused, errored, known, typmodKnown, failed, runs int
	// PGONION_CORPUS_MATCH runs only the queries containing it (for
	// debugging; the counts below then fail).
	match := os.Getenv("PGONION_CORPUS_MATCH")
	for i := range corpus {
		q := &corpus[i]
		if match != "" && !strings.Contains(q.sql, match) {
			continue
		}
		where := fmt.Sprintf("queries.sql:%d: %s", q.line, q.sql)
		var problems, typmodDiffs []string
		for _, mode := range modes {
			runs++
			want, werr := runCorpusQuery(ctx, plain, mode, q.sql, q.params)
			got, gerr := runCorpusQuery(ctx, enc, mode, q.sql, q.params)
			problem := checkCorpusRun(q, got, gerr, want, werr)
			if q.simple != "" && mode != pgx.QueryExecModeSimpleProtocol {
				var pe *pgconn.PgError
				problem = ""
				if !errors.As(gerr, &pe) || pe.Code != "0A000" || !strings.Contains(pe.Message, "simple query protocol") {
					problem = fmt.Sprintf("answered (%v) in the extended protocol, want the refusal of subqueries the proxy evaluates first", gerr)
				}
			}
			if gerr != nil {
				// Sessions survive errors: the same connection answers next.
				var one int
				if err := enc.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
					problem += fmt.Sprintf(" (and SELECT 1 on the same session then failed: %v)", err)
				}
			}
			if enc.IsClosed() {
				problem += " (and the proxy closed the connection)"
				enc = p.connect(t, pgx.QueryExecModeSimpleProtocol)
			}
			if problem != "" {
				problems = append(problems, fmt.Sprintf("[%v] %s", mode, problem))
			} else if got != nil && want != nil && !slices.Equal(got.typmods, want.typmods) {
				typmodDiffs = append(typmodDiffs, fmt.Sprintf("[%v] proxy %v, direct %v", mode, got.typmods, want.typmods))
			}
		}
		switch {
		case q.known != "" && len(problems) > 0:
			known++
			t.Logf("%s: known (%s):\n  %s", where, q.known, strings.Join(problems, "\n  "))
		case q.known != "":
			failed++
			t.Errorf("%s: annotated known (%s) but passes: drop the annotation", where, q.known)
		case len(problems) > 0:
			failed++
			t.Errorf("%s:\n  %s", where, strings.Join(problems, "\n  "))
		case q.typmod != "" && len(typmodDiffs) == 0:
			failed++
			t.Errorf("%s: annotated typmod (%s) but the type modifiers agree: drop the annotation", where, q.typmod)
		case q.refuse != "":
			refused++
		case q.isError:
			errored++
		default:
			passed++
			if len(typmodDiffs) > 0 {
				typmodKnown++
				t.Logf("%s: known type modifier difference (%s): %s", where, q.typmod, strings.Join(typmodDiffs, "; "))
			}
		}
		if q.refuse == "" && !q.isError && q.known == "" {
			compared++
		}
	}
	t.Logf("%d queries, %d runs (simple protocol and prepared): %d compared, %d identical (%d of them apart from known type modifiers), "+
		"%d refused as expected, %d failing identically, %d known failures, %d failed; %v",
		len(corpus), runs, compared, passed, typmodKnown, refused, errored, known, failed, time.Since(start).Round(time.Millisecond))
	if compared < 300 {
		t.Errorf("only %d queries compared, want at least 300", compared)
	}
	refusals := 0
	for _, q := range corpus {
		if q.refuse != "" {
			refusals++
		}
	}
	if refusals < 30 {
		t.Errorf("only %d queries annotated refuse, want at least 30", refusals)
	}
}

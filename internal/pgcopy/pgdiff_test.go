package pgcopy

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// The differential tests give the same COPY data to PostgreSQL directly,
// and to a Reader whose rows a Writer re-encodes in the default text
// format for PostgreSQL; both must store the same rows, or both fail.

var (
	diffSeed  = flag.Uint64("diff.seed", 1, "seed of TestDifferentialRandom")
	diffCount = flag.Int("diff.count", 3000, "inputs of TestDifferentialRandom")
)

var diffColumns = []string{"a", "b", "c"}

// diffDB is a database with tables direct and viaproxy, both (n serial,
// a text, b text, c text).
type diffDB struct {
	t    *testing.T
	conn *pgconn.PgConn
}

func newDiffDB(t *testing.T) *diffDB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	db := &diffDB{t: t, conn: conn}
	db.exec("CREATE TABLE direct (n serial, a text, b text, c text); CREATE TABLE viaproxy (n serial, a text, b text, c text)")
	return db
}

func (db *diffDB) exec(sql string) {
	db.t.Helper()
	if _, err := db.conn.Exec(context.Background(), sql).ReadAll(); err != nil {
		db.t.Fatalf("%s: %v", sql, err)
	}
}

// copyIn runs COPY table (first ncols columns) FROM STDIN opts with data
// and returns the rows stored, or the error.
func (db *diffDB) copyIn(table string, ncols int, opts string, data []byte) outcome {
	db.t.Helper()
	ctx := context.Background()
	db.exec("TRUNCATE " + table + " RESTART IDENTITY")
	cols := strings.Join(diffColumns[:ncols], ", ")
	sql := fmt.Sprintf("COPY %s (%s) FROM STDIN %s", table, cols, opts)
	if _, err := db.conn.CopyFrom(ctx, bytes.NewReader(data), sql); err != nil {
		return outcome{err: errString(err)}
	}
	res := db.conn.ExecParams(ctx, fmt.Sprintf("SELECT %s FROM %s ORDER BY n", cols, table), nil, nil, nil, nil).Read()
	if res.Err != nil {
		db.t.Fatal(res.Err)
	}
	out := outcome{rows: [][]*string{}}
	for _, row := range res.Rows {
		var rr []*string
		for _, f := range row {
			if f == nil {
				rr = append(rr, nil)
			} else {
				s := string(f)
				rr = append(rr, &s)
			}
		}
		out.rows = append(out.rows, rr)
	}
	return out
}

// encode writes rows in text format with a Writer.
func encode(rows [][]*string) []byte {
	var w Writer
	for _, r := range rows {
		for _, f := range r {
			if f == nil {
				w.Field(nil)
			} else {
				w.Field([]byte(*f))
			}
		}
		w.EndRow()
	}
	return w.Bytes()
}

// compare runs one input both ways and reports differences, in the rows
// stored or in the error (SQLSTATE and message). It returns the outcome
// of PostgreSQL.
func (db *diffDB) compare(ncols int, opts string, data []byte) outcome {
	db.t.Helper()
	want := db.copyIn("direct", ncols, opts, data)
	var got outcome
	o, err := parseOpts(opts)
	if err != nil {
		got = outcome{err: errString(err)}
	} else {
		got = readAll(o, diffColumns[:ncols], data)
		if got.err == "" {
			got = db.copyIn("viaproxy", ncols, "", encode(got.rows))
			if got.err != "" {
				db.t.Errorf("COPY (%s) %s %q: the server rejects the re-encoded rows: %s", diffColumns[:ncols], opts, data, got.err)
				return want
			}
		}
	}
	if got.String() != want.String() {
		db.t.Errorf("COPY (%s) %s %q:\n     got %s\npostgres %s", strings.Join(diffColumns[:ncols], ","), opts, data, got, want)
	}
	return want
}

// diffCase is one input of the differential corpus.
type diffCase struct {
	opts  string
	ncols int // 0 means 3
	data  string
}

var diffCorpus = []diffCase{
	// text format: basics, NULL forms, escapes
	{"", 0, "1\t2\t3\n"},
	{"", 0, "1\t2\t3"},
	{"", 0, ""},
	{"", 0, "\n"},
	{"", 1, "\n"},
	{"", 1, "\n\n"},
	{"", 1, "x"},
	{"", 0, "\\N\t\t\\\\N\n"},
	{"", 0, "\\N\\N\t\\n\t\\NN\n"},
	{"", 0, "a\\tb\tc\\\\d\te\\nf\n"},
	{"", 0, "\\b\\f\\n\\r\\t\\v\t\\a\\q\\.\\ \\'\t\\\"\\\\\n"},
	{"", 0, "x\\\ty\tz\tw\n"},
	{"", 0, "a\\\nb\tc\td\n"},
	{"", 0, "a\\\rb\tc\td\n"},
	{"", 0, "a\\\r\nb\tc\td\n"},
	{"", 0, "\\101\\1011\\7\\77\t\\08\\19\t\\x41\\x4\\x4g\\xg\\x\n"},
	{"", 0, "\\x7f\\x7F\\x20\t\\040\t\\x\\\n"},
	{"", 0, "\\xc3\\xa9\t\\303\\251\t\\xe6\\x97\\xa5\n"},
	{"", 0, "\\xc3\tb\tc\n"},
	{"", 0, "\\377\tb\tc\n"},
	{"", 0, "\\777\tb\tc\n"},
	{"", 0, "\\0\tb\tc\n"},
	{"", 0, "\\x00\tb\tc\n"},
	{"", 0, "\\x0\tb\tc\n"},
	{"", 0, "\xc3\\xa9\tb\tc\n"},
	{"", 0, "h\xc3\xa9llo\t\xe6\x97\xa5\xe6\x9c\xac\t\xf0\x9f\x98\x80\n"},
	{"", 0, "\xff\tb\tc\n"},
	{"", 0, "\xe6\x97\tb\tc\n"},
	{"", 0, "a\tb\t\xe6\x97"},
	{"", 0, "a\x00b\tc\td\n"},
	{"", 0, "\xed\xa0\x80\tb\tc\n"},
	{"", 0, "\xc0\xaf\tb\tc\n"},
	{"", 0, "\x01\x02\x7f\x1b\tb\tc\n"},
	// field counts
	{"", 0, "1\t2\n"},
	{"", 0, "1\n"},
	{"", 0, "1\t2\t3\t4\n"},
	{"", 0, "1\t2\t3\t\n"},
	{"", 0, "1\t2\t3\n1\t2\n"},
	{"", 2, "\t\n"},
	// line endings
	{"", 0, "1\t2\t3\r\n4\t5\t6\r\n"},
	{"", 0, "1\t2\t3\r4\t5\t6\r"},
	{"", 0, "1\t2\t3\r4\t5\t6"},
	{"", 0, "1\t2\t3\r\n4\t5\t6\n"},
	{"", 0, "1\t2\t3\n4\t5\t6\r\n"},
	{"", 0, "1\t2\t3\r4\t5\t6\n"},
	{"", 0, "1\t2\t3\r4\t5\t6\r\n"},
	{"", 0, "1\t2\t3\r\n4\t5\t6\r"},
	{"", 1, "\r\n\r\n"},
	{"", 1, "\r\r"},
	{"", 1, "\r"},
	{"", 1, "a\rb\n"},
	// end-of-data marker
	{"", 0, "1\t2\t3\n\\.\n"},
	{"", 0, "1\t2\t3\n\\.\nignored\t\xff\n"},
	{"", 0, "1\t2\t3\n\\.\n4\t5\t6\n"},
	{"", 0, "1\t2\t3\n\\."},
	{"", 0, "1\t2\t3\n\\.x\n"},
	{"", 0, "1\t2\t3\n\\.\\.\n"},
	{"", 0, "1\t2\t3\\.\n4\t5\t6\n"},
	{"", 0, "1\t2\\.\n"},
	{"", 0, "1\t2\t\\.\n"},
	{"", 0, "1\t2\t3\\\\.\n"},
	{"", 0, "\\.\n"},
	{"", 0, "\\.\r\n"},
	{"", 0, "\\.\r"},
	{"", 0, "\\.\r\r"},
	{"", 0, "\\."},
	{"", 0, "\\"},
	{"", 0, "1\t2\t3\\"},
	{"", 0, "1\t2\tx\\"},
	{"", 0, "1\t2\t3\r\n\\.\r\n"},
	{"", 0, "1\t2\t3\r\n\\.\n"},
	{"", 0, "1\t2\t3\r\n\\.\r"},
	{"", 0, "1\t2\t3\r\n\\.\rx"},
	{"", 0, "1\t2\t3\r\n\\."},
	{"", 0, "1\t2\t3\n\\.\r\n"},
	{"", 0, "1\t2\t3\r\\.\r"},
	{"", 0, "1\t2\t3\r\\.\n"},
	{"", 0, "1\t2\t3\n\\.\n\\.\n"},
	// options of text format
	{"(DELIMITER '|', NULL 'NULL')", 0, "a|NULL|\\N\n"},
	{"(DELIMITER '|')", 0, "a\\|b|c\td|\\\n"},
	{"(DELIMITER ',')", 0, "a,b,c\n"},
	{"(DELIMITER ' ')", 0, "a b  \n"},
	{"(NULL '')", 0, "\t\t\n"},
	{"(NULL '')", 0, "\t\\N\tx\n"},
	{"(NULL 'x\\')", 0, "x\\\tx\tx\\"},
	{"(NULL 'x\\')", 0, "x\\\tx\tx\\\n"},
	{"(NULL '\\x41')", 0, "\\x41\tA\t\\x41\\x41\n"},
	{"(NULL '\\xff')", 0, "\\xff\ta\tb\n"},
	{"(NULL '\\xff')", 0, "\\xfe\ta\tb\n"},
	{"(NULL 'é')", 0, "é\te\t\\N\n"},
	{"(DELIMITER E'\\x01')", 0, "a\x01b\x01c\n"},
	{"(DELIMITER E'\\x7f')", 0, "a\x7fb\x7fc\n"},
	{"WITH DELIMITER AS ';' NULL AS '-'", 0, "a;-;\\N\n"},
	// header
	{"(HEADER)", 0, "a\tb\tc\n1\t2\t3\n"},
	{"(HEADER)", 0, "anything at all\n1\t2\t3\n"},
	{"(HEADER)", 0, "only a header"},
	{"(HEADER)", 0, ""},
	{"(HEADER)", 0, "\\.\n1\t2\t3\n"},
	{"(HEADER)", 0, "x\\.\n1\t2\t3\n"},
	{"(HEADER)", 0, "\xff\n1\t2\t3\n"},
	{"(HEADER)", 0, "h\r\n1\t2\t3\n"},
	{"(HEADER MATCH)", 0, "a\tb\tc\n1\t2\t3\n"},
	{"(HEADER MATCH)", 0, "a\tb\n1\t2\t3\n"},
	{"(HEADER MATCH)", 0, "a\tB\tc\n1\t2\t3\n"},
	{"(HEADER MATCH)", 0, "a\t\\N\tc\n1\t2\t3\n"},
	{"(HEADER MATCH)", 0, "\\x61\tb\tc\n"},
	{"(HEADER MATCH)", 0, ""},
	{"(HEADER MATCH)", 1, ""},
	{"(HEADER false)", 0, "1\t2\t3\n"},
	// csv
	{"CSV", 0, "1,2,3\n"},
	{"CSV", 0, "\"a,b\",\"c\"\"d\",\n"},
	{"CSV", 0, "\"\",,\"\"\n"},
	{"CSV", 0, ",,\n"},
	{"CSV", 0, "\"a\nb\",c,d\n"},
	{"CSV", 0, "\"a\r\nb\",c,d\r\n1,2,3\r\n"},
	{"CSV", 0, "\"a\rb\",c,d\n"},
	{"CSV", 0, "\"a\nb\",c,d\r\n"},
	{"CSV", 0, "a\"b,c\"d,e\n"},
	{"CSV", 0, "a\"b\"c,d,e\n"},
	{"CSV", 0, "\"abc\n"},
	{"CSV", 0, "\"abc"},
	{"CSV", 0, "a,b,\"c"},
	{"CSV", 0, "a,b,\"c\"\""},
	{"CSV", 0, "\"a\"\"\",b,c\n"},
	{"CSV", 0, "\"\"\"\",b,c\n"},
	{"CSV", 0, "a\rb,c,d\n"},
	{"CSV", 0, "a,b,c\nd\re,f\n"},
	{"CSV", 0, "a,b,c\r\nd,e,f\n"},
	{"CSV", 0, "a,b,c\nd,e,f\r\n"},
	{"CSV", 0, "\\N,\\.,\\\n"},
	{"CSV", 0, "\\.\n"},
	{"CSV", 0, "1,2,3\n\\.\n4,5,6\n"},
	{"CSV", 0, "1,2,3\n\\.x,5,6\n"},
	{"CSV", 0, "1,2,3\n\\.,5,6\n"},
	{"CSV", 0, "1,2,3\n\\."},
	{"CSV", 1, "1\n\\."},
	{"CSV", 1, "\"\\.\"\n"},
	{"CSV", 1, "\\.\n"},
	{"CSV", 1, "x\\.\n"},
	{"CSV", 0, "1,2,3\r\n\\.\n"},
	{"CSV", 0, "1,2,3\r\n\\.\r\n"},
	{"CSV", 0, "1,2,3\n\\.\r\n"},
	{"CSV", 0, "1,2,3\n\"\n\\.\n\",5,6\n"},
	{"CSV", 0, "1,2,3\n\"a\n\\.\n"},
	{"CSV", 0, "é,\"日本\",😀\n"},
	{"CSV", 0, "\xff,b,c\n"},
	{"CSV", 0, "\"\xff\",b,c\n"},
	{"CSV", 0, "1,2\n"},
	{"CSV", 0, "1,2,3,4\n"},
	{"CSV", 0, "1,2,\"3,4\"\n"},
	{"CSV", 0, " a , b , c \n"},
	{"CSV", 0, "\"a\" ,b,c\n"},
	{"CSV", 0, "\"a\"\"b\"\"\"\"\",b,c\n"},
	{"CSV HEADER", 0, "a,b,c\n1,2,3\n"},
	{"CSV HEADER", 0, "\"multi\nline\",header\n1,2,3\n"},
	{"(FORMAT csv, HEADER match)", 0, "a,\"b\",c\n1,2,3\n"},
	{"(FORMAT csv, HEADER match)", 0, "a,,c\n1,2,3\n"},
	{"(FORMAT csv, HEADER match, NULL 'b')", 0, "a,b,c\n1,2,3\n"},
	{"(FORMAT csv, HEADER match, NULL 'b')", 0, "a,\"b\",c\n1,2,3\n"},
	{"CSV NULL 'NULL'", 0, "NULL,\"NULL\",\n"},
	{"CSV NULL 'NULL' FORCE NOT NULL b", 0, "NULL,NULL,NULL\n"},
	{"(FORMAT csv, NULL 'NULL', FORCE_NULL (a, c))", 0, "\"NULL\",\"NULL\",NULL\n"},
	{"(FORMAT csv, FORCE_NULL (a), FORCE_NOT_NULL (a))", 0, "\"\",,x\n,\"\",\n"},
	{"(FORMAT csv, FORCE_NOT_NULL (b, c))", 0, ",,\n"},
	{"(FORMAT csv, FORCE_NOT_NULL (c))", 2, ",\n"},
	{"(FORMAT csv, FORCE_NULL (a,b,c))", 0, "\"\",\"\",\"x\"\n"},
	{"CSV ESCAPE '\\'", 0, "\"a\\\"b\",\"c\\\\d\",\"e\\f\"\n"},
	{"CSV ESCAPE '\\'", 0, "\"a\\\",b,c\n"},
	{"CSV ESCAPE '\\'", 0, "a\\\"b,c\"d,e\n"},
	{"CSV ESCAPE '\\'", 0, "\\.\n"},
	{"CSV ESCAPE '\\'", 0, "\"x\\\n\\.\n\",b,c\n"},
	{"CSV QUOTE ''''", 0, "'a,b','c''d',\"e\"\n"},
	{"CSV QUOTE '''' ESCAPE '\"'", 0, "'a\"'b','c''d',\"\n"},
	{"CSV QUOTE '\\'", 0, "\\.\n"},
	{"CSV QUOTE '\\'", 0, "\\a,b\\,c\n"},
	{"CSV QUOTE '\\'", 0, "1,2,3\n\\.\n"},
	{"CSV QUOTE '\\'", 0, "1,2,3\n\\.x\\,5,6\n"},
	{"CSV DELIMITER '\t'", 0, "a\t\"b\tc\"\t\n"},
	{"CSV DELIMITER ';'", 0, "a;\"b;c\";\"\"\n"},
	{"CSV DELIMITER '.'", 0, "a.b.c\n\\.\n"},
	{"CSV DELIMITER '\\'", 0, "a\\b\\c\n"},
	{"CSV DELIMITER '\\'", 0, "\\.\n"},
	{"CSV DELIMITER '\\'", 0, "\\\\\n"},
	{"(FORMAT csv, DELIMITER '\\', NULL '')", 1, "\\.\n"},
	{"CSV DELIMITER 'x' NULL 'y'", 0, "axyxz\n"},
	{"(FORMAT csv, FREEZE false, ENCODING 'utf8')", 0, "1,2,3\n"},
	{"(FORMAT text, FREEZE false, ENCODING 'UTF-8')", 0, "1\t2\t3\n"},
}

// TestDifferential runs the corpus both ways.
func TestDifferential(t *testing.T) {
	db := newDiffDB(t)
	for _, c := range diffCorpus {
		n := c.ncols
		if n == 0 {
			n = 3
		}
		db.compare(n, c.opts, []byte(c.data))
	}
}

// TestSplitAnywhere feeds every corpus input split at each byte boundary,
// and byte by byte: the outcome must not depend on where chunks end.
func TestSplitAnywhere(t *testing.T) {
	for _, c := range diffCorpus {
		n := c.ncols
		if n == 0 {
			n = 3
		}
		o, err := parseOpts(c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.opts, err)
		}
		data := []byte(c.data)
		whole := readAll(o, diffColumns[:n], data).String()
		for k := 0; k <= len(data); k++ {
			if got := readAll(o, diffColumns[:n], data, k).String(); got != whole {
				t.Errorf("%s %q split at %d:\n got %s\nwant %s", c.opts, c.data, k, got, whole)
			}
		}
		ones := make([]int, len(data))
		for i := range ones {
			ones[i] = 1
		}
		if got := readAll(o, diffColumns[:n], data, ones...).String(); got != whole {
			t.Errorf("%s %q byte by byte:\n got %s\nwant %s", c.opts, c.data, got, whole)
		}
	}
}

// TestDifferentialRandom compares random inputs over an alphabet of the
// bytes that matter, under several option sets (go test -diff.seed N
// -diff.count M explores further).
func TestDifferentialRandom(t *testing.T) {
	n := *diffCount
	if testing.Short() {
		n /= 10
	}
	db := newDiffDB(t)
	optSets := []string{
		"", "(NULL '')", "(DELIMITER ',', NULL 'x')", "(HEADER)", "(HEADER MATCH)",
		"CSV", "CSV NULL 'N'", "CSV ESCAPE '\\'", "CSV QUOTE '''' ESCAPE '\\'", "CSV QUOTE '\\'",
		"(FORMAT csv, FORCE_NULL (a), FORCE_NOT_NULL (b))", "CSV HEADER", "CSV DELIMITER '\\'",
	}
	alphabet := []string{"a", "b", "c", "N", "x", "4", "0", "7", ".", ",", "\t", "\\", "\\", "\"", "'",
		"\r", "\n", "\n", "\r\n", "\\.", "\\N", "\xc3\xa9", "\xc3", "\xff", "\x00", " "}
	rng := rand.New(rand.NewPCG(*diffSeed, 2))
	for range n {
		opts := optSets[rng.IntN(len(optSets))]
		var b strings.Builder
		for k := rng.IntN(24); k > 0; k-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		ncols := 1 + rng.IntN(3)
		data := []byte(b.String())
		db.compare(ncols, opts, data)
		if t.Failed() {
			return // the first differences say enough
		}
	}
}

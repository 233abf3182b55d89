package engine_test

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestCopyOut: COPY ... TO STDOUT over encrypted columns answers with
// the bytes PostgreSQL writes for the same plaintext table, in text and
// csv with their options, for a table, a column list and queries (split
// execution and a proxy-side filter included); what cannot be answered
// is refused.
func TestCopyOut(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE co (id int PRIMARY KEY, name text, n numeric(10,2), day date, at timestamptz, f float8, ok boolean, tag varchar(8))`)
	d.both("SET TIME ZONE 'UTC'")
	for _, r := range []string{
		`1, 'plain', 1.50, '2024-02-29', '2024-02-29 10:00:00+00', 1.5, true, 'a'`,
		`2, E'tab\there\nnewline\\back', -2.25, '1999-12-31', '1999-12-31 23:59:59.5+00', -0.0, false, 'b,c'`,
		`3, 'quote "x", comma', NULL, NULL, NULL, NULL, NULL, NULL`,
		`4, '', 0, '0044-03-15 BC', 'infinity', 'NaN', true, 'NULL'`,
		`5, E'\\.', 12345678.90, '2000-01-01', '2000-01-01 00:00:00+00', 1e300, false, 'ÄÖü'`,
		`6, 'ünï ✓ x', 3, '2021-06-01', '2021-06-01 12:34:56.789+00', 2.5, true, ''`,
	} {
		d.both("INSERT INTO co VALUES (" + r + ")")
	}
	ctx := context.Background()
	copyTo := func(c interface {
		CopyTo(context.Context, *bytes.Buffer, string) (string, error)
	}, sql string) (string, string, error) {
		var b bytes.Buffer
		tag, err := c.CopyTo(ctx, &b, sql)
		return b.String(), tag, err
	}
	for _, q := range []string{
		"COPY co TO STDOUT",
		"COPY co (tag, name, id) TO STDOUT WITH (FORMAT csv, HEADER, FORCE_QUOTE (name))",
		"COPY co TO STDOUT WITH (FORMAT csv, DELIMITER ';', NULL 'NULL', QUOTE '''', ESCAPE '\\', FORCE_QUOTE *)",
		"COPY co TO STDOUT WITH (DELIMITER '|', NULL '', HEADER)",
		"COPY co TO STDOUT WITH CSV",
		"COPY (SELECT name FROM co ORDER BY id) TO STDOUT WITH CSV",
		"COPY (SELECT id, name FROM co WHERE name LIKE '%x%' ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)",
		"COPY (SELECT ok, count(*), sum(n) AS total FROM co GROUP BY ok ORDER BY ok) TO STDOUT",
		"COPY (SELECT upper(name), n * 2 FROM co WHERE n > 0 ORDER BY id) TO STDOUT",
		"COPY co (id) TO STDOUT",
		"COPY (SELECT name FROM co WHERE id = 0) TO STDOUT",
	} {
		got, gtag, gerr := copyTo(pgConnCopy{d.c}, q)
		want, wtag, werr := copyTo(pgConnCopy{d.plain}, q)
		if !strings.Contains(q, "ORDER BY") {
			// A table's rows come in its heap's order, which peels
			// and rewrites change: compared as sets (the header first).
			header := strings.Contains(q, "HEADER")
			got, want = sortedLines(got, header), sortedLines(want, header)
		}
		if gerr != nil || werr != nil || got != want || gtag != wtag {
			t.Errorf("%s\nthrough the proxy (%s, %v):\n%q\nplaintext (%s, %v):\n%q", q, gtag, gerr, got, wtag, werr, want)
		}
	}
	for _, q := range []string{
		"COPY co TO '/tmp/co.out'",
		"COPY co TO STDOUT WITH (FORMAT binary)",
		"COPY (DELETE FROM co RETURNING name) TO STDOUT",
	} {
		if _, _, err := copyTo(pgConnCopy{d.c}, q); pgCode(err) != "0A000" {
			t.Errorf("%s: %v, want 0A000", q, err)
		}
	}
	// Errors in the options are the server's.
	for _, q := range []string{
		"COPY co TO STDOUT WITH (FORMAT csv, FORCE_NOT_NULL (name))",
		"COPY co TO STDOUT WITH (FORMAT csv, FORCE_QUOTE (nosuch))",
		"COPY co TO STDOUT WITH (FORCE_QUOTE (name))",
		"COPY co (id) TO STDOUT WITH (FORMAT csv, FORCE_QUOTE (name))",
		"COPY (SELECT id FROM co) TO STDOUT WITH (FORMAT csv, FORCE_QUOTE (name))",
	} {
		_, _, gerr := copyTo(pgConnCopy{d.c}, q)
		_, _, werr := copyTo(pgConnCopy{d.plain}, q)
		if pgCode(gerr) != pgCode(werr) || werr == nil {
			t.Errorf("%s: through the proxy %v, plaintext %v", q, gerr, werr)
		}
	}
}

// pgConnCopy runs COPY ... TO STDOUT on a connection (the simple
// protocol, as psql's \copy does).
type pgConnCopy struct{ c *pgx.Conn }

func (p pgConnCopy) CopyTo(ctx context.Context, w *bytes.Buffer, sql string) (string, error) {
	tag, err := p.c.PgConn().CopyTo(ctx, w, sql)
	return tag.String(), err
}

// sortedLines is s with its lines sorted, after the header's.
func sortedLines(s string, header bool) string {
	lines := strings.SplitAfter(s, "\n")
	if header && len(lines) > 0 {
		sort.Strings(lines[1:])
	} else {
		sort.Strings(lines)
	}
	return strings.Join(lines, "")
}

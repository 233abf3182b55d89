package pgcopy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestReader documents the Reader's decoding with explicit expectations
// (the differential tests prove them against PostgreSQL).
func TestReader(t *testing.T) {
	for _, tc := range []struct {
		opts  string
		ncols int
		in    string
		want  string // outcome.String()
	}{
		{"", 2, "a\\tb\t\\N\n", `["a\tb" NULL]`},
		{"", 2, "\\\\N\t\n", `["\\N" ""]`},
		{"", 1, "\\101\\x42\\q\\\n", `["ABq\n"]`},
		{"", 1, "a\\\nb\n", `["a\nb"]`},
		{"", 2, "1\t2\r\n3\t4\r\n", `["1" "2"]["3" "4"]`},
		{"", 2, "1\t2\n3\t4\\.\nignored\n", `["1" "2"]["3" "4"]`},
		{"", 2, "1\t2", `["1" "2"]`},
		{"", 2, "1\n", `ERROR 22P04: missing data for column "b"`},
		{"", 2, "1\t2\t3\n", `ERROR 22P04: extra data after last expected column`},
		{"", 1, "a\r\nb\n", `ERROR 22P04: literal newline found in data`},
		{"", 1, "\\xff\n", `ERROR 22021: invalid byte sequence for encoding "UTF8": 0xff`},
		{"", 0, "\n\n", `[][]`},
		{"", 0, "x\n", `ERROR 22P04: extra data after last expected column`},
		{"CSV", 3, "\"\",,\"a\"\"b\"\n", `["" NULL "a\"b"]`},
		{"CSV", 2, "\"a\nb\",c\n", `["a\nb" "c"]`},
		{"CSV", 1, "\\.\n\"x\"\n", ``},
		{"CSV", 1, "\"abc\n", `ERROR 22P04: unterminated CSV quoted field`},
		{"CSV HEADER", 2, "x,y\n1,2\n", `["1" "2"]`},
		{"(FORMAT csv, HEADER match)", 2, "a,c\n1,2\n", `ERROR 22P04: column name mismatch in header line field 2: got "c", expected "b"`},
		{"(FORMAT csv, FORCE_NOT_NULL (a), FORCE_NULL (b))", 2, ",\"\"\n", `["" NULL]`},
	} {
		cols := diffColumns[:tc.ncols]
		if got := readAll(mustOpts(t, tc.opts), cols, []byte(tc.in)).String(); got != tc.want {
			t.Errorf("%s %q:\n got %s\nwant %s", tc.opts, tc.in, got, tc.want)
		}
	}
}

// TestReaderLines checks the line numbers in errors and Line, which count
// physical lines, the header and quoted line breaks included.
func TestReaderLines(t *testing.T) {
	r, err := NewReader(mustOpts(t, "CSV HEADER"), "t", []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	r.Feed([]byte("a,b\n1,\"x\ny\"\n2,3\n4\n"))
	for _, want := range []int64{3, 4} {
		row, err := r.Next()
		if err != nil || row == nil {
			t.Fatalf("Next: %v %v", row, err)
		}
		if r.Line() != want {
			t.Errorf("Line() = %d, want %d", r.Line(), want)
		}
	}
	_, err = r.Next()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Where != "COPY t, line 5" || pe.Code != "22P04" {
		t.Fatalf("got %v (where %q), want a 22P04 error on line 5", err, pe.Where)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Errorf("the error is not final: %v", err2)
	}
}

// TestReaderMaxRowSize checks that a row longer than the limit is an
// error, whether it is complete or still arriving.
func TestReaderMaxRowSize(t *testing.T) {
	for _, complete := range []bool{false, true} {
		r, err := NewReader(mustOpts(t, ""), "t", []string{"a"})
		if err != nil {
			t.Fatal(err)
		}
		r.SetMaxRowSize(10)
		r.Feed([]byte("0123456789\n"))
		if row, err := r.Next(); err != nil || string(row[0]) != "0123456789" {
			t.Fatalf("a row of the maximal size: %q %v", row, err)
		}
		long := "0123456789a"
		if complete {
			long += "\n"
		}
		r.Feed([]byte(long))
		row, err := r.Next()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "54000" {
			t.Errorf("complete=%v: got %q %v, want a 54000 error", complete, row, err)
		}
	}
}

// TestReaderEnd checks what follows the end: input after \. is ignored,
// and Next keeps returning io.EOF.
func TestReaderEnd(t *testing.T) {
	r, err := NewReader(mustOpts(t, ""), "t", []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	r.Feed([]byte("x\n\\.\n"))
	if row, err := r.Next(); err != nil || string(row[0]) != "x" {
		t.Fatalf("got %q %v", row, err)
	}
	r.Feed([]byte("\xff garbage\n"))
	for range 2 {
		if row, err := r.Next(); err != io.EOF {
			t.Fatalf("got %q %v, want io.EOF", row, err)
		}
	}
}

// TestReaderForceColumns checks that FORCE_NOT_NULL and FORCE_NULL name
// columns of the COPY.
func TestReaderForceColumns(t *testing.T) {
	_, err := NewReader(mustOpts(t, "CSV FORCE NOT NULL z"), "t", []string{"a"})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42P10" || pe.Message != `FORCE_NOT_NULL column "z" not referenced by COPY` {
		t.Errorf("got %v", err)
	}
}

func BenchmarkReaderText(b *testing.B) {
	// pgbench_accounts rows.
	var in bytes.Buffer
	for i := range 10000 {
		fmt.Fprintf(&in, "%d\t%d\t%d\t\n", i+1, i/100000+1, 0)
	}
	benchmarkReader(b, "", 4, in.Bytes())
}

func BenchmarkReaderCSV(b *testing.B) {
	var in bytes.Buffer
	for i := range 10000 {
		fmt.Fprintf(&in, "%d,\"name %d, \"\"quoted\"\"\",%s\n", i, i, strings.Repeat("x", 40))
	}
	benchmarkReader(b, "CSV", 3, in.Bytes())
}

func benchmarkReader(b *testing.B, opts string, ncols int, in []byte) {
	o := mustOpts(b, opts)
	cols := []string{"a", "b", "c", "d"}[:ncols]
	b.SetBytes(int64(len(in)))
	var w Writer
	for b.Loop() {
		r, _ := NewReader(o, "t", cols)
		w.Reset(w.Bytes()[:0])
		for chunk := range slices.Chunk(in, 8192) {
			r.Feed(chunk)
			for {
				row, err := r.Next()
				if err != nil {
					b.Fatal(err)
				}
				if row == nil {
					break
				}
				for _, f := range row {
					w.Field(f)
				}
				w.EndRow()
			}
		}
	}
}

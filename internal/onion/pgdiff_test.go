package onion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// diffType is one column type of the differential tests.
type diffType struct {
	sql    string // the type in SQL
	t      Type
	corpus []string
	zones  []string // session time zones to run under (UTC when empty)
}

func diffTypes() []diffType {
	dt := append(append([]string{}, dateCorpus...), timestampCorpus...)
	return []diffType{
		{sql: "smallint", t: Type{Base: SmallInt}, corpus: intCorpus},
		{sql: "integer", t: Type{Base: Integer}, corpus: intCorpus},
		{sql: "bigint", t: Type{Base: BigInt}, corpus: intCorpus},
		{sql: "numeric", t: Type{Base: Numeric}, corpus: numericCorpus},
		{sql: "numeric(10,2)", t: Type{Base: Numeric, Precision: 10, Scale: 2}, corpus: numericCorpus},
		{sql: "numeric(5,-2)", t: Type{Base: Numeric, Precision: 5, Scale: -2}, corpus: numericCorpus},
		{sql: "numeric(3,5)", t: Type{Base: Numeric, Precision: 3, Scale: 5}, corpus: numericCorpus},
		{sql: "numeric(1,0)", t: Type{Base: Numeric, Precision: 1, Scale: 0}, corpus: numericCorpus},
		{sql: "numeric(18,4)", t: Type{Base: Numeric, Precision: 18, Scale: 4}, corpus: numericCorpus},
		{sql: "numeric(20)", t: Type{Base: Numeric, Precision: 20}, corpus: numericCorpus},
		{sql: "numeric(1000,1000)", t: Type{Base: Numeric, Precision: 1000, Scale: 1000}, corpus: numericCorpus},
		{sql: "text", t: Type{Base: Text}, corpus: textCorpus},
		{sql: "varchar", t: Type{Base: Varchar}, corpus: textCorpus},
		{sql: "varchar(5)", t: Type{Base: Varchar, Length: 5}, corpus: textCorpus},
		{sql: "char(3)", t: Type{Base: Char, Length: 3}, corpus: textCorpus},
		{sql: "char", t: Type{Base: Char, Length: 1}, corpus: textCorpus},
		{sql: "bpchar", t: Type{Base: Char}, corpus: textCorpus},
		{sql: "boolean", t: Type{Base: Boolean}, corpus: boolCorpus},
		{sql: "bytea", t: Type{Base: Bytea}, corpus: byteaCorpus},
		{sql: "uuid", t: Type{Base: UUID}, corpus: uuidCorpus},
		{sql: "float8", t: Type{Base: Float8}, corpus: float8Corpus},
		{sql: "float4", t: Type{Base: Float4}, corpus: float4Corpus},
		{sql: "int4[]", t: Type{Base: Array, Elem: Integer}, corpus: arrayCorpus},
		{sql: "int8[]", t: Type{Base: Array, Elem: BigInt}, corpus: arrayCorpus},
		{sql: "text[]", t: Type{Base: Array, Elem: Text}, corpus: arrayCorpus},
		{sql: "varchar(3)[]", t: Type{Base: Array, Elem: Varchar, Length: 3}, corpus: arrayCorpus},
		{sql: "char(3)[]", t: Type{Base: Array, Elem: Char, Length: 3}, corpus: arrayCorpus},
		{sql: "numeric(10,2)[]", t: Type{Base: Array, Elem: Numeric, Precision: 10, Scale: 2}, corpus: arrayCorpus},
		{sql: "numeric[]", t: Type{Base: Array, Elem: Numeric}, corpus: arrayCorpus},
		{sql: "float8[]", t: Type{Base: Array, Elem: Float8}, corpus: arrayCorpus},
		{sql: "float4[]", t: Type{Base: Array, Elem: Float4}, corpus: arrayCorpus},
		{sql: "bytea[]", t: Type{Base: Array, Elem: Bytea}, corpus: arrayCorpus},
		{sql: "boolean[]", t: Type{Base: Array, Elem: Boolean}, corpus: arrayCorpus},
		{sql: "jsonb[]", t: Type{Base: Array, Elem: JSONB}, corpus: arrayCorpus},
		{sql: "inet[]", t: Type{Base: Array, Elem: Inet}, corpus: arrayCorpus},
		{sql: "interval[]", t: Type{Base: Array, Elem: Interval}, corpus: arrayCorpus},
		{sql: "time[]", t: Type{Base: Array, Elem: Time}, corpus: arrayCorpus},
		{sql: "date[]", t: Type{Base: Array, Elem: Date}, corpus: arrayCorpus},
		{sql: "timestamptz[]", t: Type{Base: Array, Elem: Timestamptz}, corpus: arrayCorpus, zones: []string{"UTC", "Europe/Berlin"}},
		{sql: "time", t: Type{Base: Time}, corpus: timeCorpus},
		{sql: "timetz", t: Type{Base: TimeTZ}, corpus: timetzCorpus, zones: []string{"UTC", "Asia/Kolkata", "America/Chicago"}},
		{sql: "timetz[]", t: Type{Base: Array, Elem: TimeTZ}, corpus: arrayCorpus},
		{sql: "inet", t: Type{Base: Inet}, corpus: inetCorpus},
		{sql: "cidr", t: Type{Base: Cidr}, corpus: cidrCorpus},
		{sql: "interval", t: Type{Base: Interval}, corpus: intervalCorpus},
		{sql: "jsonb", t: Type{Base: JSONB}, corpus: jsonbCorpus},
		{sql: "json", t: Type{Base: JSON}, corpus: jsonbCorpus},
		{sql: "date", t: Type{Base: Date}, corpus: dt},
		{sql: "timestamp", t: Type{Base: Timestamp}, corpus: dt, zones: []string{"UTC", "Europe/Berlin"}},
		{sql: "timestamptz", t: Type{Base: Timestamptz}, corpus: dt, zones: tzCorpusZones},
	}
}

func connect(t *testing.T) *pgconn.PgConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func exec(t *testing.T, conn *pgconn.PgConn, sql string) {
	t.Helper()
	if err := conn.Exec(context.Background(), sql).Close(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// serverResult is what PostgreSQL did with one input.
type serverResult struct {
	text, bin []byte
	err       *pgconn.PgError
}

// insertText stores input (a text-format parameter) into table tbl's column
// v and returns v in text and in binary format, or the server's error.
func insertText(t *testing.T, conn *pgconn.PgConn, tbl string, input []byte) serverResult {
	t.Helper()
	rr := conn.ExecParams(context.Background(), "INSERT INTO "+tbl+" (v) VALUES ($1) RETURNING v, v",
		[][]byte{input}, nil, nil, []int16{0, 1})
	return readResult(t, rr)
}

func readResult(t *testing.T, rr *pgconn.ResultReader) serverResult {
	t.Helper()
	var r serverResult
	for rr.NextRow() {
		r.text = append([]byte{}, rr.Values()[0]...)
		r.bin = append([]byte{}, rr.Values()[1]...)
	}
	_, err := rr.Close()
	if err != nil {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("unexpected error: %v", err)
		}
		r.err = pe
	}
	return r
}

// compareOutcome compares the server's outcome with this package's and
// returns a description of the difference, or "".
func compareOutcome(srv serverResult, text, bin []byte, err error) string {
	switch {
	case srv.err == nil && err == nil:
		if !bytes.Equal(srv.text, text) {
			return fmt.Sprintf("text output: server %q, onion %q", srv.text, text)
		}
		if !bytes.Equal(srv.bin, bin) {
			return fmt.Sprintf("binary output: server %x, onion %x", srv.bin, bin)
		}
		return ""
	case err != nil && IsRefusal(err):
		return "" // refused on purpose: allowed whatever the server did
	case srv.err == nil:
		return fmt.Sprintf("server accepted (%q), onion: %v", srv.text, err)
	case err == nil:
		return fmt.Sprintf("server: %s %s, onion accepted %q", srv.err.Code, srv.err.Message, text)
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return fmt.Sprintf("onion error is not a PgError: %v", err)
	}
	if pe.Code != srv.err.Code || pe.Message != srv.err.Message || pe.Detail != srv.err.Detail || pe.Hint != srv.err.Hint {
		return fmt.Sprintf("errors differ:\n\tserver %s %q detail %q hint %q\n\tonion  %s %q detail %q hint %q",
			srv.err.Code, srv.err.Message, srv.err.Detail, srv.err.Hint, pe.Code, pe.Message, pe.Detail, pe.Hint)
	}
	return ""
}

// TestDifferentialText compares ParseText + AppendText/AppendBinary with
// zonesOrUTC returns the session time zones to test d in.
func (d diffType) zonesOrUTC() []string {
	if len(d.zones) == 0 {
		return []string{"UTC"}
	}
	return d.zones
}

// setZone sets the session TimeZone and returns the matching Env.
func setZone(t *testing.T, conn *pgconn.PgConn, zone string) Env {
	t.Helper()
	exec(t, conn, "SET TimeZone = '"+zone+"'")
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	return Env{TimeZone: loc}
}

// PostgreSQL storing the same text-format parameter into a column of each
// type, and reading it back in text and binary format.
func TestDifferentialText(t *testing.T) {
	conn := connect(t)
	for i, d := range diffTypes() {
		tbl := fmt.Sprintf("t%d", i)
		exec(t, conn, fmt.Sprintf("CREATE TEMP TABLE %s (v %s)", tbl, d.sql))
		for _, zone := range d.zonesOrUTC() {
			t.Run(d.sql+"/"+zone, func(t *testing.T) {
				env := setZone(t, conn, zone)
				refused := 0
				for _, in := range d.corpus {
					srv := insertText(t, conn, tbl, []byte(in))
					v, err := d.t.ParseText([]byte(in), env)
					var text, bin []byte
					if err == nil {
						text = d.t.AppendText(nil, v, env)
						bin = d.t.AppendBinary(nil, v)
					} else if IsRefusal(err) {
						refused++
						if srv.err == nil {
							t.Logf("refused %q (server: %q)", in, srv.text)
						}
					}
					if diff := compareOutcome(srv, text, bin, err); diff != "" {
						t.Errorf("%s %q: %s", d.sql, trunc(in), diff)
					}
				}
				t.Logf("%d inputs, %d refused", len(d.corpus), refused)
			})
		}
	}
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

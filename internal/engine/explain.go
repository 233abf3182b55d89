package engine

import (
	"bytes"
	"encoding/json"
	"encoding/xml"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// planExplain plans EXPLAIN of a statement over encrypted columns: the
// statement is planned as it would run (its comparison values encrypted
// at Bind, subqueries evaluated first, ...) and the server explains the
// statement the proxy would send it: a plan of the physical statement,
// over the onion columns. EXPLAIN ANALYZE runs that statement, as
// PostgreSQL runs the explained one.
//
// When the proxy computes part of a SELECT (split execution), the server
// explains its part, and the rows say so: the proxy's nodes come first
// (rewrite.ExplainSplit), the server part's plan under them.
func (s *session) planExplain(st rewrite.Statement, ext *extended) (*stmtPlan, error) {
	inner, _, err := rewrite.Explained(st)
	if err != nil {
		return nil, err
	}
	p, err := s.plan(inner, ext)
	if err != nil || p == nil {
		return nil, err // nil: nothing encrypted, the EXPLAIN passes through
	}
	if p.copyIn != nil || len(p.before) > 0 {
		return nil, rewrite.Refusal("EXPLAIN of %s over encrypted columns is not supported: the proxy runs it as several statements", statementName(inner))
	}
	sql, err := rewrite.ExplainOf(st, p.sql)
	if err != nil {
		return nil, err
	}
	out := &stmtPlan{sql: sql}
	var label func() wire.ResultRewriter
	if p.split != nil {
		format, analyze := rewrite.ExplainOptions(st)
		lines, indent := rewrite.ExplainSplit(p.split)
		if analyze {
			lines = append([]string{"Note: EXPLAIN ANALYZE runs and times the server part only"}, lines...)
		}
		label = func() wire.ResultRewriter { return &explainLabel{lines: lines, indent: indent, format: format} }
		out.results = label()
	}
	if ext != nil {
		// The plan's rows are the server's: nothing to decrypt.
		ext.results, ext.resultFmts = nil, nil
		if label != nil {
			ext.results = func([]int16) wire.ResultRewriter { return label() }
		}
	}
	return out, nil
}

// explainLabel puts the proxy's part of a split execution before the
// server part's plan in EXPLAIN's rows: in the text format as lines of
// their own, the server's indented under them; in the other formats as
// an entry "pgonion Split Execution" of the query's, before its Plan.
type explainLabel struct {
	lines  []string
	indent string
	format string // text, json, yaml or xml
	sent   bool
	held   []*pgproto3.DataRow
}

func (l *explainLabel) RowDescription(*pgproto3.RowDescription) error { return nil }

func (l *explainLabel) DataRow(row *pgproto3.DataRow) error {
	if len(row.Values) != 1 || row.Values[0] == nil {
		return nil
	}
	if l.format != "text" {
		doc, err := l.document(row.Values[0])
		if err != nil {
			return err
		}
		row.Values = [][]byte{doc}
		return nil
	}
	line := append([]byte(l.indent), row.Values[0]...)
	if l.sent {
		row.Values = [][]byte{line}
		return nil
	}
	l.sent = true
	for _, s := range l.lines {
		l.held = append(l.held, &pgproto3.DataRow{Values: [][]byte{[]byte(s)}})
	}
	l.held = append(l.held, &pgproto3.DataRow{Values: [][]byte{line}})
	return wire.ErrSkipRow
}

// Release sends the proxy's lines and the server's first line.
func (l *explainLabel) Release(bool) ([]*pgproto3.DataRow, error) {
	out := l.held
	l.held = nil
	return out, nil
}

// document adds the proxy's lines to an EXPLAIN document in JSON, YAML
// or XML, as the first entry of its (first) query.
func (l *explainLabel) document(doc []byte) ([]byte, error) {
	var at int
	var entry []byte
	switch l.format {
	case "json":
		at = bytes.IndexByte(doc, '{') + 1
		list, err := json.Marshal(l.lines)
		if err != nil {
			return nil, err
		}
		entry = append(append([]byte("\n    \"pgonion Split Execution\": "), list...), ',')
	case "yaml":
		if i := bytes.Index(doc, []byte("- ")); i >= 0 {
			at = i + 2
		}
		entry = []byte("pgonion Split Execution: \n")
		for _, s := range l.lines {
			q, err := json.Marshal(s) // a YAML double-quoted scalar
			if err != nil {
				return nil, err
			}
			entry = append(append(append(entry, "    - "...), q...), '\n')
		}
		entry = append(entry, "  "...)
	case "xml":
		const query = "<Query>"
		if i := bytes.Index(doc, []byte(query)); i >= 0 {
			at = i + len(query)
		}
		var b bytes.Buffer
		b.WriteString("\n    <pgonion-Split-Execution>")
		for _, s := range l.lines {
			b.WriteString("\n      <Line>")
			if err := xml.EscapeText(&b, []byte(s)); err != nil {
				return nil, err
			}
			b.WriteString("</Line>")
		}
		b.WriteString("\n    </pgonion-Split-Execution>")
		entry = b.Bytes()
	}
	if at <= 0 {
		return doc, nil // not the document EXPLAIN writes: left as it is
	}
	out := append(append([]byte{}, doc[:at]...), entry...)
	return append(out, doc[at:]...), nil
}

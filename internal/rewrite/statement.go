// Package rewrite turns the SQL a client sends into the SQL the server runs
// over encrypted columns, plus the work the proxy does around it. It is pure:
// no network, no files, no clocks, so it can be tested with golden files and
// fuzzed.
//
// Statements are parsed with the real PostgreSQL parser (pg_query_go, which
// embeds PostgreSQL's own grammar), so the proxy and the server agree on
// what a statement means.
package rewrite

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/pganalyze/pg_query_go/v6/parser"
	"google.golang.org/protobuf/proto"
)

// Statement is one parsed statement of a query string.
type Statement struct {
	// SQL is the statement's own text, without the separating semicolon.
	SQL string
	// Kind is the parse node's name without the "Stmt" suffix, e.g.
	// "Select", "Insert", "Copy", "VariableSet", "Transaction".
	Kind string
	// Tree is the parse tree.
	Tree *pg_query.RawStmt

	version int32      // of the parse tree format, needed to deparse it
	lookups *lookupSet // decorrelated subqueries (Subqueries), shared by clones
}

// Clone returns a copy of the statement whose tree can be rewritten
// without changing s's (the planners rewrite trees in place).
func (s Statement) Clone() Statement {
	s.Tree = proto.Clone(s.Tree).(*pg_query.RawStmt)
	return s
}

// SyntaxError is a statement the PostgreSQL grammar rejects.
type SyntaxError struct {
	Message  string
	Position int // 1-based character position, 0 if unknown
}

func (e *SyntaxError) Error() string {
	if e.Position > 0 {
		return fmt.Sprintf("syntax error at position %d: %s", e.Position, e.Message)
	}
	return "syntax error: " + e.Message
}

// Parse splits sql into statements and parses each.
func Parse(sql string) ([]Statement, error) {
	tree, err := pg_query.Parse(sql)
	if err != nil {
		se := &SyntaxError{Message: err.Error()}
		var pe *parser.Error
		if errors.As(err, &pe) {
			se.Message, se.Position = pe.Message, pe.Cursorpos
		}
		return nil, se
	}
	out := make([]Statement, 0, len(tree.Stmts))
	for _, raw := range tree.Stmts {
		start := int(raw.StmtLocation)
		end := len(sql)
		if raw.StmtLen > 0 {
			end = start + int(raw.StmtLen)
		}
		text := strings.TrimSpace(sql[start:end])
		out = append(out, Statement{SQL: text, Kind: kindOf(raw.Stmt), Tree: raw, version: tree.Version})
	}
	return out, nil
}

// Deparse returns the SQL text of the statement's (possibly modified) tree.
func (s Statement) Deparse() (string, error) {
	return pg_query.Deparse(&pg_query.ParseResult{Version: s.version, Stmts: []*pg_query.RawStmt{{Stmt: s.Tree.Stmt}}})
}

// DeparseNode returns the SQL text of statement node n, parsed with the
// same parser version as s.
func (s Statement) DeparseNode(n *pg_query.Node) (string, error) { return deparseNode(n, s.version) }

// kindOf names a statement node: *pg_query.Node_SelectStmt -> "Select".
func kindOf(n *pg_query.Node) string {
	if n == nil || n.Node == nil {
		return ""
	}
	name := reflect.TypeOf(n.Node).Elem().Name() // e.g. "Node_SelectStmt"
	name = strings.TrimPrefix(name, "Node_")
	return strings.TrimSuffix(name, "Stmt")
}

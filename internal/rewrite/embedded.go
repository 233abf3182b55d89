package rewrite

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// Embedded is SQL a statement carries as text, which the server will run
// but the proxy cannot rewrite: the body of a DO block or of a function or
// procedure, or the query argument of a function that runs SQL text.
type Embedded struct {
	// Construct names where the text is, for messages: "DO block",
	// "CREATE FUNCTION body", "query_to_xml argument".
	Construct string
	// Text is the SQL or procedural code, or "" when it is not a
	// constant (a query built at run time).
	Text string
	// Language is the body's language ("plpgsql", "sql", ...), "sql" for
	// a function argument.
	Language string
}

// sqlRunningFunctions run their SQL text argument (the first, unless said
// otherwise): the server would run it as written.
var sqlRunningFunctions = map[string]int{
	"query_to_xml": 0, "query_to_xmlschema": 0, "query_to_xml_and_xmlschema": 0,
	"dblink": -1, "dblink_exec": -1, "dblink_open": -1, "dblink_send_query": -1,
	"dblink_get_result": -1, "dblink_build_sql_insert": -1, "dblink_build_sql_update": -1, "dblink_build_sql_delete": -1,
}

// SQLRunningFunctionNames are the functions whose names in embedded code
// mean that it may run SQL the proxy cannot see.
func SQLRunningFunctionNames() []string {
	out := make([]string, 0, len(sqlRunningFunctions))
	for n := range sqlRunningFunctions {
		out = append(out, n)
	}
	return out
}

// EmbeddedSQL returns the SQL texts st carries for the server to run.
func EmbeddedSQL(st Statement) []Embedded {
	var out []Embedded
	inspect(st.Tree.Stmt.ProtoReflect(), func(m protoreflect.Message) bool {
		switch x := m.Interface().(type) {
		case *pg_query.DoStmt:
			e := Embedded{Construct: "DO block", Language: "plpgsql"}
			for _, a := range x.Args {
				de := a.GetDefElem()
				switch de.GetDefname() {
				case "as":
					e.Text = de.Arg.GetString_().GetSval()
				case "language":
					e.Language = strings.ToLower(de.Arg.GetString_().GetSval())
				}
			}
			out = append(out, e)
		case *pg_query.CreateFunctionStmt:
			what := "CREATE FUNCTION body"
			if x.IsProcedure {
				what = "CREATE PROCEDURE body"
			}
			e := Embedded{Construct: what, Language: "sql"}
			for _, o := range x.Options {
				de := o.GetDefElem()
				switch de.GetDefname() {
				case "as":
					var parts []string
					for _, it := range de.Arg.GetList().GetItems() {
						parts = append(parts, it.GetString_().GetSval())
					}
					e.Text = strings.Join(parts, "\n")
				case "language":
					e.Language = strings.ToLower(de.Arg.GetString_().GetSval())
				}
			}
			if x.SqlBody == nil {
				// A BEGIN ATOMIC or RETURN body is parsed with the
				// statement: its tables are the statement's relations.
				out = append(out, e)
			}
		case *pg_query.FuncCall:
			name := funcName(x)
			pos, ok := sqlRunningFunctions[name]
			if !ok {
				return true
			}
			e := Embedded{Construct: name + " argument", Language: "sql"}
			if pos < 0 {
				pos = len(x.Args) - 1 // dblink's query is its last argument
			}
			if pos >= 0 && pos < len(x.Args) {
				arg := x.Args[pos]
				for arg.GetTypeCast() != nil {
					arg = arg.GetTypeCast().Arg
				}
				if s, ok := arg.GetAConst().GetVal().(*pg_query.A_Const_Sval); ok {
					e.Text = s.Sval.Sval
				}
			}
			out = append(out, e)
		}
		return true
	})
	return out
}

// MentionsWord reports whether text contains word (ASCII case-folded) as a
// whole identifier-like word, which is how a table name appears in code
// or in a string that code runs: not part of a longer identifier.
func MentionsWord(text, word string) bool {
	if word == "" {
		return false
	}
	t, w := strings.ToLower(text), strings.ToLower(word)
	isWord := func(c byte) bool {
		return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 0x80
	}
	for i := 0; ; {
		k := strings.Index(t[i:], w)
		if k < 0 {
			return false
		}
		at, end := i+k, i+k+len(w)
		if (at == 0 || !isWord(t[at-1])) && (end == len(t) || !isWord(t[end])) {
			return true
		}
		i = at + 1
	}
}

// ConstantRelation reports whether st holds, below its top level, a
// relation of constants: a subquery, CTE or LATERAL item without FROM
// (SELECT 'alice' AS v) or a VALUES list, with a constant in it. A query
// on encrypted tables that compares such a value with an encrypted column
// would have the server see the constant in plaintext, so the proxy does
// not send one (as it refuses name IN (SELECT 'alice')).
func ConstantRelation(st Statement) bool {
	found := false
	top := st.Tree.Stmt.GetSelectStmt()
	if ins := st.Tree.Stmt.GetInsertStmt(); ins != nil {
		top = ins.SelectStmt.GetSelectStmt() // an INSERT's own VALUES are encrypted by its planner
	}
	inspect(st.Tree.Stmt.ProtoReflect(), func(m protoreflect.Message) bool {
		if found {
			return false
		}
		sel, ok := m.Interface().(*pg_query.SelectStmt)
		if !ok || sel == top || len(sel.FromClause) > 0 {
			return true
		}
		inspect(sel.ProtoReflect(), func(m protoreflect.Message) bool {
			if found {
				return false
			}
			switch x := m.Interface().(type) {
			case *pg_query.SelectStmt:
				return x == sel || len(x.FromClause) == 0
			case *pg_query.A_Const:
				found = !x.Isnull
				return false
			}
			return true
		})
		return true
	})
	return found
}

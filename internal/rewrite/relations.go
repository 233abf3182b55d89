package rewrite

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
)

// DefaultSchema is where unqualified table names are looked up: the proxy
// assumes the default search_path.
const DefaultSchema = "public"

// Relation is a table a statement names.
type Relation struct {
	Schema string // DefaultSchema when the statement does not qualify it
	Name   string
}

// Relations returns every table name (RangeVar) of the statement, in
// order of appearance, including those of subqueries, CTE references and
// DDL targets. A CTE named like a table is reported too: callers treat it
// as the table, which errs on the side of rewriting or refusing.
func Relations(st Statement) []Relation {
	var out []Relation
	walkRangeVars(st.Tree.Stmt.ProtoReflect(), func(rv *pg_query.RangeVar) {
		r := Relation{Schema: rv.Schemaname, Name: rv.Relname}
		if r.Schema == "" {
			r.Schema = DefaultSchema
		}
		out = append(out, r)
	})
	return out
}

func walkRangeVars(m protoreflect.Message, f func(*pg_query.RangeVar)) {
	inspect(m, func(m protoreflect.Message) bool {
		if rv, ok := m.Interface().(*pg_query.RangeVar); ok {
			f(rv)
			return false
		}
		return true
	})
}

// ParamRefs returns the numbers of the parameters ($n) the statement
// references, in order of appearance (with repetitions).
func ParamRefs(st Statement) []int {
	var out []int
	inspect(st.Tree.Stmt.ProtoReflect(), func(m protoreflect.Message) bool {
		if p, ok := m.Interface().(*pg_query.ParamRef); ok {
			out = append(out, int(p.Number))
			return false
		}
		return true
	})
	return out
}

// ColumnType returns the type of a catalog column.
func ColumnType(c *catalog.Column) (onion.Type, error) { return parseType(c.Type) }

// PhysicalColumns returns the server-side columns of an encrypted catalog
// column: one per onion, the exact-value copy of lossy types, and the salt
// override.
func PhysicalColumns(c *catalog.Column) ([]onion.PhysicalColumn, error) {
	_, layout, err := columnLayout(c)
	return layout, err
}

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

// DisplayType is a column's type as PostgreSQL names it (an enum by its
// name, where the catalog also records its OID).
func DisplayType(c *catalog.Column) string {
	if t, err := ColumnType(c); err == nil && c.Policy != catalog.Plain {
		return t.String()
	}
	return c.Type
}

// PhysicalColumns returns the server-side columns of an encrypted catalog
// column: one per onion, the exact-value copy of lossy types, and the salt
// override.
func PhysicalColumns(c *catalog.Column) ([]onion.PhysicalColumn, error) {
	_, layout, err := columnLayout(c)
	return layout, err
}

// ForeignRef is what a FOREIGN KEY constraint references: a table and its
// columns (none: its primary key).
type ForeignRef struct {
	Table   Relation
	Columns []string // referenced (none: the primary key)
	From    []string // referencing, of the altered table
}

// AlterForeignKeys reports whether st is an ALTER TABLE whose only
// relations besides the table it alters are the tables its FOREIGN KEY
// constraints reference, and returns that table and those references.
func AlterForeignKeys(st Statement) (target Relation, refs []ForeignRef, ok bool) {
	at := st.Tree.GetStmt().GetAlterTableStmt()
	if at == nil || at.Relation == nil {
		return target, nil, false
	}
	rel := func(rv *pg_query.RangeVar) Relation {
		r := Relation{Schema: rv.Schemaname, Name: rv.Relname}
		if r.Schema == "" {
			r.Schema = DefaultSchema
		}
		return r
	}
	target = rel(at.Relation)
	pk := map[*pg_query.RangeVar]bool{}
	for _, n := range at.Cmds {
		c := n.GetAlterTableCmd().GetDef().GetConstraint()
		if c.GetContype() == pg_query.ConstrType_CONSTR_FOREIGN && c.Pktable != nil {
			pk[c.Pktable] = true
			refs = append(refs, ForeignRef{Table: rel(c.Pktable), Columns: stringList(c.PkAttrs), From: stringList(c.FkAttrs)})
		}
	}
	if len(refs) == 0 {
		return target, nil, false
	}
	ok = true
	walkRangeVars(at.ProtoReflect(), func(rv *pg_query.RangeVar) {
		if rv != at.Relation && !pk[rv] {
			ok = false
		}
	})
	return target, refs, ok
}

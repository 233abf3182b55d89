package rewrite

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The logical schema clients see. For each table with encrypted columns
// the proxy keeps an empty twin with the client's definition (logical
// columns, types, defaults, constraints, indexes) in a schema of its own
// per user schema (TwinSchema): CREATE TABLE creates it with the table,
// and ALTER TABLE, CREATE INDEX, renames and DROP TABLE are applied to
// it too, in the same transaction (TwinStatement). Catalog queries read
// the catalogs that describe columns, keys and indexes through views
// that show the twin's rows under the table's OID (LogicalCatalog,
// migration 0022), whether they name the table by OID or by name, and
// the twin's schema is taken out of the answers (TwinNames). A twin that
// a statement could not be applied to is dropped: the client then sees
// the physical table, never a stale definition.

// TwinSchemaPrefix begins the name of the schema of the twins of a user
// schema's tables.
const TwinSchemaPrefix = "pgonion_l_"

// TwinSchema names the schema of the twins of schema's tables; ok is
// false when the name would not fit in 63 bytes.
func TwinSchema(schema string) (string, bool) {
	name := TwinSchemaPrefix + schema
	return name, len(name) <= 63
}

// TwinStatement returns the form of st (CREATE TABLE, ALTER TABLE, a
// rename, CREATE INDEX) that applies to the twins: its table is the
// twin, a foreign key references the referenced table's twin when
// hasTwin says it has one and is left out otherwise. ok is false for a
// statement the twins cannot follow (CREATE TABLE ... LIKE, INHERITS,
// PARTITION, TEMPORARY; other statements).
func TwinStatement(st Statement, hasTwin func(schema, table string) bool) (sql string, ok bool) {
	st = st.Clone()
	retarget := func(rv *pg_query.RangeVar) bool {
		if rv == nil {
			return false
		}
		schema := rv.Schemaname
		if schema == "" {
			schema = DefaultSchema
		}
		twin, ok := TwinSchema(schema)
		rv.Schemaname, rv.Catalogname = twin, ""
		return ok
	}
	// foreign keeps a foreign key when it can point at a twin.
	foreign := func(c *pg_query.Constraint) bool {
		if c.GetContype() != pg_query.ConstrType_CONSTR_FOREIGN {
			return true
		}
		schema := c.Pktable.GetSchemaname()
		if schema == "" {
			schema = DefaultSchema
		}
		if !hasTwin(schema, c.Pktable.GetRelname()) {
			return false
		}
		return retarget(c.Pktable)
	}
	// keep filters a column's constraints with foreign.
	keep := func(cons []*pg_query.Node) []*pg_query.Node {
		var out []*pg_query.Node
		for _, c := range cons {
			if foreign(c.GetConstraint()) {
				out = append(out, c)
			}
		}
		return out
	}
	switch n := st.Tree.Stmt.Node.(type) {
	case *pg_query.Node_CreateStmt:
		cs := n.CreateStmt
		if len(cs.InhRelations) > 0 || cs.Partspec != nil || cs.Partbound != nil || cs.OfTypename != nil ||
			cs.Relation.GetRelpersistence() == "t" || !retarget(cs.Relation) {
			return "", false
		}
		var elts []*pg_query.Node
		for _, e := range cs.TableElts {
			switch {
			case e.GetTableLikeClause() != nil:
				return "", false
			case e.GetConstraint() != nil:
				if !foreign(e.GetConstraint()) {
					continue
				}
			case e.GetColumnDef() != nil:
				e.GetColumnDef().Constraints = keep(e.GetColumnDef().Constraints)
			}
			elts = append(elts, e)
		}
		cs.TableElts = elts
	case *pg_query.Node_AlterTableStmt:
		at := n.AlterTableStmt
		if at.Objtype != pg_query.ObjectType_OBJECT_TABLE || !retarget(at.Relation) {
			return "", false
		}
		var cmds []*pg_query.Node
		for _, c := range at.Cmds {
			cmd := c.GetAlterTableCmd()
			if def := cmd.GetDef(); def != nil {
				if con := def.GetConstraint(); con != nil && !foreign(con) {
					continue
				}
				if cd := def.GetColumnDef(); cd != nil {
					cd.Constraints = keep(cd.Constraints)
				}
			}
			cmds = append(cmds, c)
		}
		if len(cmds) == 0 {
			return "", true // nothing for the twin
		}
		at.Cmds = cmds
	case *pg_query.Node_RenameStmt:
		rs := n.RenameStmt
		if rs.RenameType != pg_query.ObjectType_OBJECT_TABLE && rs.RenameType != pg_query.ObjectType_OBJECT_COLUMN &&
			rs.RenameType != pg_query.ObjectType_OBJECT_TABCONSTRAINT || !retarget(rs.Relation) {
			return "", false
		}
	case *pg_query.Node_IndexStmt:
		is := n.IndexStmt
		if !retarget(is.Relation) {
			return "", false
		}
		is.Concurrent = false
	default:
		return "", false
	}
	out, err := st.Deparse()
	if err != nil {
		return "", false
	}
	return out, true
}

// TwinNames takes the twins' schemas out of a catalog answer's text:
// "pgonion_l_public.t" becomes "t" (public is on the search path the
// proxy assumes), "pgonion_l_s.t" becomes "s.t"; in an index definition
// (pg_get_indexdef, which always qualifies) "public.t".
func TwinNames(s string) string {
	if !strings.Contains(s, TwinSchemaPrefix) {
		return s
	}
	if strings.HasPrefix(s, "CREATE ") {
		// pg_get_indexdef qualifies the table whatever the search
		// path: "ON public.t".
		return strings.ReplaceAll(s, TwinSchemaPrefix, "")
	}
	s = strings.ReplaceAll(s, TwinSchemaPrefix+DefaultSchema+".", "")
	return strings.ReplaceAll(s, TwinSchemaPrefix, "")
}

// CatalogQuery reports whether st is a SELECT that reads only the
// system catalogs (pg_catalog, information_schema).
func CatalogQuery(st Statement) bool {
	if st.Kind != "Select" {
		return false
	}
	rels := Relations(st)
	if len(rels) == 0 {
		return false
	}
	for _, r := range rels {
		if r.Schema != "pg_catalog" && r.Schema != "information_schema" && !strings.HasPrefix(r.Name, "pg_") {
			return false
		}
	}
	return true
}

// logicalViews are the proxy's views of the catalogs that describe a
// table's columns, defaults, constraints and indexes (migration 0022):
// each shows, for a table with a twin, the twin's rows under the table's
// OID.
var logicalViews = map[Relation]string{
	{Schema: "pg_catalog", Name: "pg_attribute"}:                    "l_pg_attribute",
	{Schema: "pg_catalog", Name: "pg_attrdef"}:                      "l_pg_attrdef",
	{Schema: "pg_catalog", Name: "pg_constraint"}:                   "l_pg_constraint",
	{Schema: "pg_catalog", Name: "pg_index"}:                        "l_pg_index",
	{Schema: "pg_catalog", Name: "pg_depend"}:                       "l_pg_depend",
	{Schema: "pg_catalog", Name: "pg_description"}:                  "l_pg_description",
	{Schema: "information_schema", Name: "columns"}:                 "l_columns",
	{Schema: "information_schema", Name: "table_constraints"}:       "l_table_constraints",
	{Schema: "information_schema", Name: "key_column_usage"}:        "l_key_column_usage",
	{Schema: "information_schema", Name: "constraint_column_usage"}: "l_constraint_column_usage",
	{Schema: "information_schema", Name: "tables"}:                  "l_tables",
}

// LogicalCatalog rewrites a catalog query (CatalogQuery) to answer about
// the logical schema: the catalogs of logicalViews are read through the
// views; an expression's relation (pg_get_expr) is the twin's, a column
// comment (col_description) is read through the view of pg_description.
// ok is false when nothing changed.
func LogicalCatalog(st Statement) (sql string, ok bool) {
	st = st.Clone()
	changed := false
	replaced := map[string]bool{} // by the name a column reference qualifies
	inspect(st.Tree.ProtoReflect(), func(m protoreflect.Message) bool {
		switch n := m.Interface().(type) {
		case *pg_query.RangeVar:
			schema := n.Schemaname
			if schema == "" && strings.HasPrefix(n.Relname, "pg_") {
				schema = "pg_catalog"
			}
			view, ok := logicalViews[Relation{Schema: schema, Name: n.Relname}]
			if !ok {
				return false
			}
			if n.Alias == nil {
				n.Alias = &pg_query.Alias{Aliasname: n.Relname}
				replaced[n.Relname] = true
			}
			n.Schemaname, n.Relname, n.Catalogname, changed = ProxySchema, view, "", true
			return false
		case *pg_query.FuncCall:
			switch funcName(n) {
			case "pg_get_expr":
				// The expression numbers the twin's columns.
				if len(n.Args) > 1 {
					n.Args[1] = pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode(ProxySchema), pg_query.MakeStrNode("l_relid")},
						[]*pg_query.Node{n.Args[1]}, -1)
					changed = true
				}
			case "col_description":
				// Over the view of pg_description, which numbers a
				// table's columns as the twin does.
				n.Funcname = []*pg_query.Node{pg_query.MakeStrNode(ProxySchema), pg_query.MakeStrNode("l_col_description")}
				changed = true
			}
		}
		return true
	})
	if !changed {
		return "", false
	}
	// A reference qualified with the catalog's schema
	// (pg_catalog.pg_attribute.attname) names the view's alias now.
	inspect(st.Tree.ProtoReflect(), func(m protoreflect.Message) bool {
		if cr, ok := m.Interface().(*pg_query.ColumnRef); ok {
			if len(cr.Fields) >= 3 && replaced[fieldName(cr.Fields[1])] {
				if s := fieldName(cr.Fields[0]); s == "pg_catalog" || s == "information_schema" {
					cr.Fields = cr.Fields[1:]
				}
			}
			return false
		}
		return true
	})
	out, err := st.Deparse()
	if err != nil {
		return "", false
	}
	return out, true
}

package rewrite

import (
	"google.golang.org/protobuf/reflect/protoreflect"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// ProxySchema is the schema of the proxy's own metadata on the server
// (catalog, policies, helper functions). Clients may not touch it: a
// client that could delete or replay its rows could make the proxy treat
// an encrypted table as plain.
const ProxySchema = "pgonion"

// NamesProxySchema reports whether the statement names ProxySchema: a
// relation, function, type or other object in it, the schema itself, or
// a search_path that includes it. String literals do not count (SQL
// inside them is read separately).
func NamesProxySchema(st Statement) bool {
	found := false
	inspect(st.Tree.Stmt.ProtoReflect(), func(m protoreflect.Message) bool {
		if found {
			return false
		}
		switch x := m.Interface().(type) {
		case *pg_query.A_Const:
			return false
		case *pg_query.RangeVar:
			found = reservedSchema(x.Schemaname)
			return false
		case *pg_query.ColumnRef:
			// schema.table.column
			found = len(x.Fields) >= 3 && reservedSchema(x.Fields[0].GetString_().GetSval())
			return false
		case *pg_query.String:
			// Qualified names (functions, types, operators) and schema
			// names of DROP/GRANT/ALTER SCHEMA are lists of String nodes.
			found = reservedSchema(x.Sval)
			return false
		case *pg_query.CreateSchemaStmt:
			found = reservedSchema(x.Schemaname)
		case *pg_query.VariableSetStmt:
			if x.Name == "search_path" {
				for _, a := range x.Args {
					if s, ok := a.GetAConst().GetVal().(*pg_query.A_Const_Sval); ok && reservedSchema(s.Sval.Sval) {
						found = true
					}
				}
			}
		}
		return true
	})
	return found
}

// reservedSchema reports whether name is a schema of the proxy's: its
// metadata's, or one of the twins' (twin.go), whose tables only the
// proxy writes.
func reservedSchema(name string) bool {
	return name == ProxySchema || strings.HasPrefix(name, TwinSchemaPrefix)
}

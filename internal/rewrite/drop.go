package rewrite

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
)

// DropPlan is the rewritten form of DROP TABLE.
type DropPlan struct {
	// SQL is the statement to run on the server: the client's DROP,
	// unchanged. The physical table has the logical table's name, and
	// dropping it drops every physical column of its encrypted columns
	// with it, so nothing needs rewriting.
	SQL string
	// Tables are the catalog tables among those dropped, in the order the
	// statement names them (each once). The caller removes them from the
	// catalog (catalog.DropTable) in the same transaction as SQL, so that
	// the DROP and the metadata commit or fail together. A table the
	// statement names that the catalog does not hold (a plain table the
	// proxy does not manage, or a missing one under IF EXISTS) is not
	// listed: the server deals with it.
	Tables []*catalog.Table
}

// PlanDrop plans one DROP statement. lookup returns the catalog table
// schema.name, or nil when the proxy does not manage it; unqualified names
// are looked up in defaultSchema (the proxy assumes the default
// search_path, as everywhere else). A catalog-qualified name
// (db.schema.table) is looked up by its schema and table.
//
// Only DROP TABLE is planned. For DROP of any other kind of object (view,
// index, sequence, schema, ...) PlanDrop returns a nil plan and a nil
// error: the caller passes the statement through unchanged. None of those
// can expose plaintext: DROP INDEX of an index built by PlanIndex leaves
// its companion index (name_ord) in place, which costs space but not
// correctness. DROP SCHEMA ... CASCADE and DROP OWNED, however, can drop
// catalog tables without naming them; their catalog rows then outlive the
// physical tables, and the caller must reconcile or refuse those
// statements (the catalog is the proxy's, the rewrite cannot see the
// schema's contents).
//
// Security: the catalog must not outlive a dropped table, nor lose a table
// that still exists. A stale entry would make the proxy treat a later,
// unrelated table of the same name as encrypted (and refuse or mis-decrypt
// its queries); a lost entry would make it forward plaintext to columns the
// server holds encrypted. That is why Tables must be applied in the same
// transaction as SQL.
func PlanDrop(st Statement, lookup func(schema, name string) *catalog.Table, defaultSchema string) (*DropPlan, error) {
	ds := st.Tree.GetStmt().GetDropStmt()
	if ds == nil {
		return nil, fmt.Errorf("rewrite: PlanDrop: not a DROP statement (%s)", st.Kind)
	}
	if ds.RemoveType != pg_query.ObjectType_OBJECT_TABLE {
		return nil, nil
	}
	plan := &DropPlan{SQL: st.SQL}
	seen := map[*catalog.Table]bool{}
	for _, obj := range ds.Objects {
		names := stringList(obj.GetList().GetItems())
		var schema, name string
		switch len(names) {
		case 1:
			schema, name = defaultSchema, names[0]
		case 2:
			schema, name = names[0], names[1]
		case 3: // database.schema.table: the server checks the database
			schema, name = names[1], names[2]
		default:
			return nil, fmt.Errorf("rewrite: DROP TABLE: unexpected name %q", names)
		}
		if t := lookup(schema, name); t != nil && !seen[t] {
			seen[t] = true
			plan.Tables = append(plan.Tables, t)
		}
	}
	return plan, nil
}

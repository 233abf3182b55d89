package rewrite

import (
	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
)

// rangeItem is a FROM item of a query: a table with encrypted columns, or
// anything else (a plain table, a function, a subquery over plain tables),
// whose columns the proxy does not know.
type rangeItem struct {
	qualifier string         // alias, or the table's name
	table     *catalog.Table // nil for an item without encrypted columns
	// derived is set for a derived table or CTE that passes encrypted
	// columns through (table is nil then).
	derived *derived
}

// derived is the outputs of a derived table or CTE (FROM (SELECT ...) s,
// WITH s AS (SELECT ...)) whose select list passes encrypted columns
// through: each such output carries the physical columns of its source
// (<name>__eq, <name>__ord, ... and the source row's salt), so the
// enclosing query uses it as it would use the source column.
type derived struct {
	// names are the output names in order ("" where unknown); enc the
	// encrypted ones by name (qualifier and construct unset).
	names []string
	enc   map[string]*encCol
	// internal are the physical column names the outputs add.
	internal map[string]bool
	// opaque is set when the select list has a * whose columns the proxy
	// does not know.
	opaque bool
}

// column returns the encrypted output name of the derived table as seen
// through qualifier, nil for a plain or unknown output.
func (d *derived) column(qualifier, name, construct string) (*encCol, error) {
	if d.internal[name] {
		return nil, Refusal("column %s of %s is internal to the proxy and may not be used in %s", name, qualifier, construct)
	}
	c := d.enc[name]
	if c == nil {
		return nil, nil
	}
	x := *c
	x.qualifier, x.construct = qualifier, construct
	return &x, nil
}

// encrypted reports whether the item must be planned by the proxy: a
// subquery with encrypted outputs, or a catalog table. A catalog table
// whose columns are all plain (its encrypted columns were dropped, or are
// being adopted) still carries the proxy's physical columns, which * and
// positional forms must not show.
func (it *rangeItem) encrypted() bool {
	return it.derived != nil || it.table != nil
}

// describe names the item in messages.
func (it *rangeItem) describe() string {
	if it.table != nil {
		return "table " + it.table.Name
	}
	return "subquery " + it.qualifier
}

// scope is the FROM items visible at one level of a query, with the
// enclosing query's scope as parent (for correlated subqueries).
type scope struct {
	parent *scope
	items  []*rangeItem
	// ctes are the CTEs of this level by name, with the encrypted columns
	// they pass through (nil derived when none).
	ctes map[string]*derived
}

// cte reports whether name is a CTE visible in the scope, and what it
// passes through.
func (sc *scope) cte(name string) (bool, *derived) {
	for s := sc; s != nil; s = s.parent {
		if d, ok := s.ctes[name]; ok {
			return true, d
		}
	}
	return false, nil
}

// encCol is a reference to an encrypted column found in a query.
type encCol struct {
	table     *catalog.Table
	col       *catalog.Column
	qualifier string
	// alias is the name the column's physical columns are named after
	// under qualifier ("": the column's name), and rowSalt the name of its
	// row salt column ("": SaltColumn); both set when the column comes
	// through a derived table or CTE.
	alias, rowSalt string
	// construct names what uses the column, for messages ("WHERE",
	// "ORDER BY", ...); set by the user of the reference.
	construct string
}

// ref returns qualifier.physical for the physical column with suffix
// (onion.PhysicalColumn.Suffix, e.g. "_eq") of the column.
func (c *encCol) ref(suffix string) *pg_query.Node {
	return pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(c.qualifier), pg_query.MakeStrNode(physicalPrefix(c.physName()) + suffix)}, -1)
}

// physName is the name c's physical columns are named after.
func (c *encCol) physName() string {
	if c.alias != "" {
		return c.alias
	}
	return c.col.Name
}

// saltName is the name of c's row salt column under its qualifier.
func (c *encCol) saltName() string {
	if c.rowSalt != "" {
		return c.rowSalt
	}
	return SaltColumn
}

// saltRef returns qualifier.<row salt> of c.
func (c *encCol) saltRef() *pg_query.Node { return c.rowRef(c.saltName()) }

// rowRef returns qualifier.<column> for a physical column of the row.
func (c *encCol) rowRef(column string) *pg_query.Node {
	return pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(c.qualifier), pg_query.MakeStrNode(column)}, -1)
}

func (c *encCol) name() string { return c.table.Name + "." + c.col.Name }

// presence returns the physical column that is NULL exactly where c is:
// the Eq onion, or the Add onion of an incremented column (whose Eq cells
// are NULL in the rows increments updated).
func (c *encCol) presence() *pg_query.Node {
	if c.col.Incremented {
		return c.ref("_add")
	}
	return c.ref("_eq")
}

// sameKeys reports whether two encrypted columns' ciphertexts compare on
// the server: the same column, or two columns of one join group.
func sameKeys(a, b *encCol) bool {
	if a.col.ID == b.col.ID {
		return true
	}
	return a.col.JoinGroup != "" && a.col.JoinGroup == b.col.JoinGroup && a.col.GroupKey() == b.col.GroupKey()
}

// item returns the item named qualifier, searching outward.
func (sc *scope) item(qualifier string) *rangeItem {
	for s := sc; s != nil; s = s.parent {
		for _, it := range s.items {
			if it.qualifier == qualifier {
				return it
			}
		}
	}
	return nil
}

// resolve returns the encrypted column a column reference names, nil for
// anything else (a plain column, which the server resolves). References
// that would expose physical columns (the whole row of a table with
// encrypted columns, or its onion and salt columns by name) and names the
// proxy cannot attribute safely are refused.
func (sc *scope) resolve(cr *pg_query.ColumnRef, construct string) (*encCol, error) {
	fields := cr.Fields
	if len(fields) == 0 || fields[len(fields)-1].GetAStar() != nil {
		return nil, nil // * is expanded (or refused) by the select list
	}
	name := fieldName(fields[len(fields)-1])
	if len(fields) >= 2 {
		q := fieldName(fields[len(fields)-2])
		it := sc.item(q)
		switch {
		case it == nil:
			return nil, nil
		case it.derived != nil:
			return it.derived.column(it.qualifier, name, construct)
		case it.table == nil:
			return nil, nil
		}
		return it.column(name, construct)
	}
	// An unqualified name: the innermost scope that has it.
	for s := sc; s != nil; s = s.parent {
		var found *rangeItem
		plain := false
		for _, it := range s.items {
			if it.derived != nil && (it.derived.enc[name] != nil || it.derived.internal[name]) {
				if found != nil {
					return nil, &pgconn.PgError{Severity: "ERROR", Code: "42702", Message: `column reference "` + name + `" is ambiguous`}
				}
				found = it
				continue
			}
			if it.table == nil {
				plain = true
				continue
			}
			if it.table.Column(name) != nil || dmlInternalColumn(it.table, name) {
				if found != nil {
					return nil, &pgconn.PgError{Severity: "ERROR", Code: "42702", Message: `column reference "` + name + `" is ambiguous`}
				}
				found = it
			}
		}
		if found != nil {
			if found.derived != nil {
				return found.derived.column(found.qualifier, name, construct)
			}
			return found.column(name, construct)
		}
		for _, it := range s.items {
			if it.encrypted() && it.qualifier == name {
				return nil, Refusal("whole-row reference %s to %s with encrypted columns in %s is not supported", name, it.describe(), construct)
			}
		}
		if plain {
			// The name may be a column of an item whose columns the proxy
			// does not know: if an outer scope has an encrypted column of
			// that name, the proxy cannot tell which is meant.
			for o := s.parent; o != nil; o = o.parent {
				for _, it := range o.items {
					if it.table != nil {
						if c := it.table.Column(name); c != nil && c.Policy != catalog.Plain {
							return nil, Refusal("cannot tell whether %s in %s is encrypted column %s.%s: qualify it with its table", name, construct, it.table.Name, name)
						}
					}
					if it.derived != nil && it.derived.enc[name] != nil {
						return nil, Refusal("cannot tell whether %s in %s is encrypted column %s.%s: qualify it", name, construct, it.qualifier, name)
					}
				}
			}
			return nil, nil
		}
	}
	return nil, nil
}

// column returns the encrypted column name of the item's table, nil for
// a plain or unknown column.
func (it *rangeItem) column(name, construct string) (*encCol, error) {
	if dmlInternalColumn(it.table, name) {
		return nil, Refusal("column %s of table %s is internal to the proxy and may not be used in %s", name, it.table.Name, construct)
	}
	c := it.table.Column(name)
	if c == nil || c.Policy == catalog.Plain {
		return nil, nil
	}
	return &encCol{table: it.table, col: c, qualifier: it.qualifier, construct: construct}, nil
}

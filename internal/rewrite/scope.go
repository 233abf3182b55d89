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
}

// scope is the FROM items visible at one level of a query, with the
// enclosing query's scope as parent (for correlated subqueries).
type scope struct {
	parent *scope
	items  []*rangeItem
	ctes   map[string]bool // names of the CTEs of this level
}

// cte reports whether name is a CTE visible in the scope.
func (sc *scope) cte(name string) bool {
	for s := sc; s != nil; s = s.parent {
		if s.ctes[name] {
			return true
		}
	}
	return false
}

// encCol is a reference to an encrypted column found in a query.
type encCol struct {
	table     *catalog.Table
	col       *catalog.Column
	qualifier string
	// construct names what uses the column, for messages ("WHERE",
	// "ORDER BY", ...); set by the user of the reference.
	construct string
}

// ref returns qualifier.physical for the physical column with suffix
// (onion.PhysicalColumn.Suffix, e.g. "_eq") of the column.
func (c *encCol) ref(suffix string) *pg_query.Node {
	return pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(c.qualifier), pg_query.MakeStrNode(physicalPrefix(c.col.Name) + suffix)}, -1)
}

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
	return a.col.JoinGroup != "" && a.col.JoinGroup == b.col.JoinGroup
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
		if it == nil || it.table == nil {
			return nil, nil
		}
		return it.column(name, construct)
	}
	// An unqualified name: the innermost scope that has it.
	for s := sc; s != nil; s = s.parent {
		var found *rangeItem
		plain := false
		for _, it := range s.items {
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
			return found.column(name, construct)
		}
		for _, it := range s.items {
			if it.table != nil && it.qualifier == name {
				return nil, Refusal("whole-row reference %s to table %s with encrypted columns in %s is not supported", name, it.table.Name, construct)
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

package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// The origins of result columns. A RowDescription names, for a column
// that reads a table's column directly, the table's OID and the
// column's number: pgjdbc's getColumnName, getTableName and isNullable,
// psycopg's and asyncpg's descriptions use them. For a table with
// encrypted columns the server would name the physical table and an
// onion cell (or nothing, for a value the proxy computes); the proxy
// names the table's twin (logical.go), which has the client's columns
// in the client's order, so the catalog queries those drivers then send
// are answered about the client's table.

// origin maps a physical table's columns to its twin's.
type origin struct {
	twin    uint32           // the twin's OID
	attnums map[string]int16 // the twin's column numbers, by name
	names   map[int16]string // the physical table's column names, by number
	cells   map[int16]string // the physical onion cells' logical columns, by number
}

// originCache holds the origins of the tables planned, by the physical
// table's OID: filled at planning (learn), read when the server's
// RowDescription arrives.
type originCache struct {
	mu     sync.Mutex
	byPhys map[uint32]*origin
	seen   map[catalog.ID]int64 // the table version learned
	gen    atomic.Int64         // counts the changes to byPhys
}

// generation counts the changes to the origins known (0 for a nil
// cache): a description made at another generation may name others.
func (c *originCache) generation() int64 {
	if c == nil {
		return 0
	}
	return c.gen.Load()
}

// originTimeout bounds the catalog read that learns a table's origin.
const originTimeout = 5 * time.Second

// learnOrigin reads the OIDs and column numbers of t's physical table
// and twin, once per table version. Failures leave the origin unknown:
// the columns are then described as before (the server's, or none).
func (e *Engine) learnOrigin(t *catalog.Table) {
	c := &e.origins
	c.mu.Lock()
	if v, ok := c.seen[t.ID]; ok && v == t.Version {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	twinSchema, ok := rewrite.TwinSchema(t.Schema)
	if !ok || e.work == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), originTimeout)
	defer cancel()
	rows, err := e.work.Query(ctx, `SELECT c.oid, n.nspname = $3, a.attnum, a.attname
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid
		WHERE ((n.nspname = $1 AND c.relname = $2) OR (n.nspname = $3 AND c.relname = $4)) AND a.attnum > 0 AND NOT a.attisdropped`,
		t.Schema, t.Physical, twinSchema, t.Name)
	if err != nil {
		e.log.Debug("learning the origin of a table's columns", "table", t.Name, "err", err)
		return
	}
	o := &origin{attnums: map[string]int16{}, names: map[int16]string{}, cells: map[int16]string{}}
	var phys uint32
	for rows.Next() {
		var oid uint32
		var isTwin bool
		var num int16
		var name string
		if err := rows.Scan(&oid, &isTwin, &num, &name); err != nil {
			rows.Close()
			return
		}
		if isTwin {
			o.twin, o.attnums[name] = oid, num
		} else {
			phys, o.names[num] = oid, name
		}
	}
	if rows.Err() != nil || phys == 0 {
		return
	}
	// The onion cells' columns: the physical names of each encrypted
	// column's cells.
	for i := range t.Columns {
		col := &t.Columns[i]
		if col.Policy == catalog.Plain {
			continue
		}
		cells := rewrite.PhysicalNames(col)
		for num, name := range o.names {
			for _, cell := range cells {
				if name == cell {
					o.cells[num] = col.Name
				}
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byPhys == nil {
		c.byPhys, c.seen = map[uint32]*origin{}, map[catalog.ID]int64{}
	}
	c.seen[t.ID] = t.Version
	c.gen.Add(1)
	if o.twin == 0 {
		delete(c.byPhys, phys) // no twin: the server's description stands
		return
	}
	c.byPhys[phys] = o
}

// describe sets the origin of field f, which the server described from
// a physical table: the twin and its column's number when the field is
// one of the client's columns (a plain column, or an encrypted column's
// value), nothing otherwise.
func (c *originCache) describe(f *pgproto3.FieldDescription) {
	if f.TableOID == 0 {
		return
	}
	c.mu.Lock()
	o := c.byPhys[f.TableOID]
	c.mu.Unlock()
	if o == nil {
		return
	}
	name, ok := o.cells[int16(f.TableAttributeNumber)]
	if !ok {
		name, ok = o.names[int16(f.TableAttributeNumber)]
	}
	if num, found := o.attnums[name]; ok && found {
		f.TableOID, f.TableAttributeNumber = o.twin, uint16(num)
		return
	}
	f.TableOID, f.TableAttributeNumber = 0, 0 // a column of the proxy's (the salt)
}

package engine

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
)

// Primary keys of encrypted tables, read from the server once per table
// version: split execution, like PostgreSQL, accepts in a grouped select
// list the columns of a table whose primary key is grouped (Django groups
// by the key and selects the model's columns).

type primaryKeys struct {
	mu   sync.Mutex
	keys map[pkKey][]string
}

type pkKey struct {
	id      catalog.ID
	version int64
}

// withPrimaryKey returns a copy of t with its PrimaryKey (empty for a
// table without one); t itself (nil PrimaryKey) when the server cannot
// tell.
func (c *catalogCache) withPrimaryKey(t *catalog.Table) *catalog.Table {
	if t == nil {
		return nil
	}
	k := pkKey{t.ID, t.Version}
	c.pks.mu.Lock()
	cols, ok := c.pks.keys[k]
	c.pks.mu.Unlock()
	if !ok {
		var err error
		if cols, err = c.readPrimaryKey(t); err != nil {
			c.log.Debug("reading a primary key", "table", t.Name, "error", err)
			return t // not cached: read again next time
		}
		c.pks.mu.Lock()
		if c.pks.keys == nil {
			c.pks.keys = map[pkKey][]string{}
		}
		c.pks.keys[k] = cols
		c.pks.mu.Unlock()
	}
	out := t.Clone()
	out.PrimaryKey = cols // empty, not nil, for a table known to have none
	return out
}

// readPrimaryKey reads the logical names of the primary key's columns of
// t's physical table: a plain column keeps its name, an encrypted one is
// keyed by its Eq onion (name__eq).
func (c *catalogCache) readPrimaryKey(t *catalog.Table) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var names []string
	err := c.withConn(ctx, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT a.attname FROM pg_constraint k
			JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = ANY (k.conkey)
			WHERE k.conrelid = (quote_ident($1) || '.' || quote_ident($2))::regclass AND k.contype = 'p'
			ORDER BY array_position(k.conkey, a.attnum)`, t.Schema, t.Physical)
		if err != nil {
			return err
		}
		names, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		logical := ""
		for _, col := range t.Columns {
			if n == col.Name || n == col.Name+"__eq" {
				logical = col.Name
			}
		}
		if logical == "" {
			return []string{}, nil // a key over another physical column: none known
		}
		out = append(out, logical)
	}
	return out, nil
}

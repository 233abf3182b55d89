package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/onion"
)

// enumLabels are an enum type's labels as the server has them
// (onion.EnumLabels): read at first use, and again when a label or sort
// order is not known (ALTER TYPE ... ADD VALUE adds labels; it never
// changes the sort order of existing ones).
type enumLabels struct {
	e    *Engine
	oid  uint32
	name string

	mu    sync.Mutex
	order map[string]float32
	label map[float32]string
}

// enumLabels returns the labels of enum type t, shared by the engine's
// columns of that type.
func (e *Engine) enumLabels(t onion.Type) *enumLabels {
	e.colMu.Lock()
	defer e.colMu.Unlock()
	if e.enums == nil {
		e.enums = map[uint32]*enumLabels{}
	}
	l := e.enums[t.EnumOID]
	if l == nil {
		l = &enumLabels{e: e, oid: t.EnumOID, name: t.EnumName}
		e.enums[t.EnumOID] = l
	}
	return l
}

// load reads the labels from the server.
func (l *enumLabels) load() error {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	rows, err := l.e.work.Query(ctx, `SELECT enumlabel::text, enumsortorder FROM pg_catalog.pg_enum WHERE enumtypid = $1`, l.oid)
	if err != nil {
		return fmt.Errorf("reading the labels of enum %s: %w", l.name, err)
	}
	defer rows.Close()
	order, label := map[string]float32{}, map[float32]string{}
	for rows.Next() {
		var s string
		var so float32
		if err := rows.Scan(&s, &so); err != nil {
			return err
		}
		order[s], label[so] = so, s
	}
	if err := rows.Err(); err != nil {
		return err
	}
	l.order, l.label = order, label
	return nil
}

// Order implements onion.EnumLabels.
func (l *enumLabels) Order(s string) (float32, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if so, ok := l.order[s]; ok {
		return so, nil
	}
	if err := l.load(); err != nil {
		return 0, err
	}
	if so, ok := l.order[s]; ok {
		return so, nil
	}
	return 0, &pgconn.PgError{Severity: "ERROR", Code: "22P02", Message: fmt.Sprintf("invalid input value for enum %s: %q", l.name, s)}
}

// Label implements onion.EnumLabels.
func (l *enumLabels) Label(so float32) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.label[so]; ok {
		return s, true
	}
	if l.load() != nil {
		return "", false
	}
	s, ok := l.label[so]
	return s, ok
}

package engine_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// TestAllPlainCatalogTable: a table the catalog lists keeps the proxy's
// physical columns (pgonion_salt, ...) when none of its columns is
// encrypted any more (the last one was dropped, or a column is being
// adopted): * and INSERT without a column list must still show and take
// the logical columns only.
func TestAllPlainCatalogTable(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, func(table, column string) rewrite.ColumnPolicy {
		if column == "a" {
			return rewrite.ColumnPolicy{Policy: catalog.Encrypted}
		}
		return rewrite.ColumnPolicy{Policy: catalog.Plain}
	})
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			c := p.connect(t, mode)
			mustExec(t, c, "DROP TABLE IF EXISTS pr")
			mustExec(t, c, "CREATE TABLE pr (id int, a text, b text)")
			mustExec(t, c, "INSERT INTO pr VALUES (1, 'x', 'y')")
			mustExec(t, c, "ALTER TABLE pr DROP COLUMN a")
			mustExec(t, c, "INSERT INTO pr VALUES (2, 'z')")
			rows, err := c.Query(ctx, "SELECT * FROM pr ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range rows.FieldDescriptions() {
				names = append(names, f.Name)
			}
			got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(names, []string{"id", "b"}) {
				t.Errorf("SELECT * columns: %v, want [id b]", names)
			}
			if want := [][]any{{int32(1), "y"}, {int32(2), "z"}}; !reflect.DeepEqual(got, want) {
				t.Errorf("rows %v, want %v", got, want)
			}
		})
	}
}

package recrypt

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/rewrite"
)

// Twins of adopted tables (rewrite/twin.go): a table that enters the
// catalog by adoption gets its twin before its first column changes, as
// the client defined it (LIKE ... INCLUDING ALL, its indexes renamed as
// the table's are); the twin goes when the table leaves the catalog. A
// twin that cannot be made is left out: the client then sees the
// physical table, never a wrong definition.

// createTwin creates the twin of schema.table in tx, from the table as
// it is now.
func createTwin(ctx context.Context, tx pgx.Tx, schema, table string) error {
	twinSchema, ok := rewrite.TwinSchema(schema)
	if !ok {
		return nil
	}
	rel, twin := qualified(schema, table), qualified(twinSchema, table)
	body := fmt.Sprintf(`DO $pgonion$
DECLARE
	o record;
	tn name;
BEGIN
	IF to_regnamespace(%[1]s) IS NULL THEN CREATE SCHEMA %[2]s; END IF;
	CREATE TABLE %[3]s (LIKE %[4]s INCLUDING ALL);
	-- LIKE names the indexes anew: give each the name of its original.
	FOR o IN SELECT i.relname AS name, x.indisunique AS uniq, regexp_replace(pg_get_indexdef(i.oid), '^.*? USING ', '') AS def
		FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = %[5]s::regclass LOOP
		SELECT i.relname INTO tn FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
			WHERE x.indrelid = %[6]s::regclass AND x.indisunique = o.uniq AND i.relname <> o.name
			AND regexp_replace(pg_get_indexdef(i.oid), '^.*? USING ', '') = o.def LIMIT 1;
		IF tn IS NOT NULL THEN
			BEGIN
				EXECUTE format('ALTER INDEX %%I.%%I RENAME TO %%I', %[7]s, tn, o.name);
			EXCEPTION WHEN others THEN NULL;
			END;
		END IF;
	END LOOP;
EXCEPTION WHEN others THEN
	RAISE WARNING 'no logical definition (twin) for %%: %%', %[8]s, SQLERRM;
END $pgonion$`, quoteLiteral(quoteIdent(twinSchema)), quoteIdent(twinSchema), twin, rel,
		quoteLiteral(rel), quoteLiteral(twin), quoteLiteral(twinSchema), quoteLiteral(rel))
	_, err := tx.Exec(ctx, body)
	return err
}

// dropTwin drops the twin of schema.table in tx, if it has one.
func dropTwin(ctx context.Context, tx pgx.Tx, schema, table string) error {
	twinSchema, ok := rewrite.TwinSchema(schema)
	if !ok {
		return nil
	}
	_, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+qualified(twinSchema, table)+" CASCADE")
	return err
}

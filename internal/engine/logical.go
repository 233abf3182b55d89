package engine

import (
	"bytes"
	"context"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// The logical schema (rewrite/twin.go): the twins DDL keeps, and the
// catalog queries answered about them.

// hasTwin reports whether table schema.name has encrypted columns, and
// so a twin (or had, if the twin was dropped: twinFragment then fails,
// harmlessly).
func (s *session) hasTwin(schema, name string) bool {
	if t, _ := s.pendingTable(rewrite.Relation{Schema: schema, Name: name}); t != nil {
		return true
	}
	return s.e.cat.snapshot().Table(schema, name) != nil
}

// twinFragment is the part of a DDL's DO block that applies st to the
// twin of table schema.name: st's twin form (created is set for the
// CREATE TABLE that creates the twin), or the twin's drop when st cannot
// apply to twins. It never fails the client's statement: an error drops
// the twin, so that a twin is either current or absent.
func (s *session) twinFragment(st rewrite.Statement, schema, name string, created bool) string {
	twinSchema, ok := rewrite.TwinSchema(schema)
	if !ok || s.twinOff {
		return ""
	}
	drop := "DROP TABLE IF EXISTS " + quoteIdent(twinSchema) + "." + quoteIdent(name) + " CASCADE;"
	safeDrop := "BEGIN " + drop + " EXCEPTION WHEN others THEN NULL; END;"
	sql, ok := rewrite.TwinStatement(st, s.hasTwin)
	switch {
	case !ok && created:
		return ""
	case !ok:
		return "\n" + safeDrop + "\n"
	case sql == "":
		return ""
	}
	pre := ""
	if created {
		// Not CREATE SCHEMA IF NOT EXISTS, whose notice the client
		// would see.
		pre = "IF to_regnamespace(" + quoteLiteral(quoteIdent(twinSchema)) + ") IS NULL THEN CREATE SCHEMA " + quoteIdent(twinSchema) + "; END IF;\n"
	}
	return "\nBEGIN\n" + pre + sql + ";\nEXCEPTION WHEN others THEN\n" + safeDrop + "\nEND;\n"
}

// twinDrop is the part of a DROP TABLE's DO block that drops the twin.
func twinDrop(schema, name string) string {
	twinSchema, ok := rewrite.TwinSchema(schema)
	if !ok {
		return ""
	}
	return "\nBEGIN DROP TABLE IF EXISTS " + quoteIdent(twinSchema) + "." + quoteIdent(name) + " CASCADE; EXCEPTION WHEN others THEN NULL; END;\n"
}

// dropTwin drops the twin of schema.name, on its own connection (for a
// statement that cannot carry the drop).
func (e *Engine) dropTwin(schema, name string) {
	twinSchema, ok := rewrite.TwinSchema(schema)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	if _, err := e.work.Exec(ctx, "DROP TABLE IF EXISTS "+quoteIdent(twinSchema)+"."+quoteIdent(name)+" CASCADE"); err != nil {
		e.log.Warn("dropping a twin", "table", schema+"."+name, "err", err)
	}
}

// planCatalogQuery answers a query of the system catalogs about the
// logical schema (rewrite.LogicalCatalog): a table with encrypted
// columns, named by OID (psql's \d, drivers after a RowDescription) or by
// name (ORMs' reflection, information_schema), has its twin's columns, types,
// defaults, constraints and indexes; the twins' schemas are taken out of
// the answer's text. nil passes the query through.
func (s *session) planCatalogQuery(st rewrite.Statement, ext *extended) (*stmtPlan, error) {
	if len(s.e.cat.snapshot().Tables()) == 0 {
		return nil, nil
	}
	sql, ok := rewrite.LogicalCatalog(st)
	if !ok {
		return nil, nil
	}
	if ext != nil {
		ext.results = func([]int16) wire.ResultRewriter { return twinNames{} }
	}
	return &stmtPlan{sql: sql, results: twinNames{}}, nil
}

// twinNames takes the twins' schemas out of an answer's values.
type twinNames struct{}

func (twinNames) RowDescription(*pgproto3.RowDescription) error { return nil }

func (twinNames) DataRow(row *pgproto3.DataRow) error {
	var vals [][]byte
	for i, v := range row.Values {
		if !bytes.Contains(v, []byte(rewrite.TwinSchemaPrefix)) {
			continue
		}
		if vals == nil {
			vals = append([][]byte(nil), row.Values...)
		}
		vals[i] = []byte(rewrite.TwinNames(string(v)))
	}
	if vals != nil {
		row.Values = vals
	}
	return nil
}

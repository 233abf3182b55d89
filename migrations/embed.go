// Package migrations holds the SQL that the proxy installs in the backend
// database (the metadata schema "pgonion" and helper functions and
// aggregates), and applies it.
//
// Each file NNNN_description.sql is one migration, applied once, in order
// of NNNN, each in its own transaction. Applied migrations are recorded in
// pgonion.schema_migrations with a checksum of their text; a changed text
// or a database migrated by a newer proxy is refused. Concurrent proxies
// serialize on an advisory lock, so exactly one applies each migration.
package migrations

import "embed"

// FS holds the migration files.
//
//go:embed *.sql
var FS embed.FS

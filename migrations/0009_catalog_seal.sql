-- The seal: one HMAC-SHA256 over the whole catalog (version, key store
-- binding, every table and declared policy), written with every change
-- (package internal/catalog). Row MACs alone let a row be deleted or an
-- older consistent copy of a table's rows be put back unnoticed.
--
-- A catalog that already holds data is sealed in this migration's
-- transaction by a proxy that has the key store (proxy serve); without
-- one (proxy migrate) the migration refuses to run on such a catalog.

ALTER TABLE pgonion.catalog_version ADD COLUMN seal bytea;

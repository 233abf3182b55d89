-- Column policies declared ahead of CREATE TABLE (proxy columns set): how a
-- column of a table not created yet will be stored. Each row carries an
-- HMAC-SHA256 like the catalog's rows, so the server's administrators
-- cannot weaken a declared policy without the proxy noticing (package
-- internal/catalog).
CREATE TABLE pgonion.policies (
    schema_name text NOT NULL,
    table_name text NOT NULL,
    column_name text NOT NULL,
    policy text NOT NULL,
    capabilities text[],
    mac bytea NOT NULL,
    PRIMARY KEY (schema_name, table_name, column_name)
);

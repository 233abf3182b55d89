-- The encrypted schema: which logical tables and columns the proxy manages,
-- how each column is protected, and the current layer of each of its onions.
-- Every row carries an HMAC-SHA256 (key derived from the key store) over its
-- contents, so the server's administrators cannot change a policy or a
-- layer without the proxy noticing (package internal/catalog).

-- Which key store the encrypted data of this database belongs to.
CREATE TABLE pgonion.keystore (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    store_id uuid NOT NULL,
    bound_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE pgonion.tables (
    table_id uuid PRIMARY KEY,
    schema_name text NOT NULL,
    table_name text NOT NULL,
    physical_name text NOT NULL,
    version bigint NOT NULL,
    mac bytea NOT NULL,
    UNIQUE (schema_name, table_name)
);

CREATE TABLE pgonion.columns (
    column_id uuid PRIMARY KEY,
    table_id uuid NOT NULL REFERENCES pgonion.tables ON DELETE CASCADE,
    position int NOT NULL,
    column_name text NOT NULL,
    type_name text NOT NULL,
    policy text NOT NULL,
    capabilities text[] NOT NULL,
    onions jsonb NOT NULL,
    join_group text,
    mac bytea NOT NULL,
    UNIQUE (table_id, column_name),
    UNIQUE (table_id, position)
);

-- Bumped by every change; proxies compare it to their cached copy.
CREATE TABLE pgonion.catalog_version (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version bigint NOT NULL
);
INSERT INTO pgonion.catalog_version (version) VALUES (0);

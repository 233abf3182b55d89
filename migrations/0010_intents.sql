-- Coherence of the proxies' copies of the catalog (package
-- internal/engine, lease.go).
--
-- Each running proxy holds a lease: the newest intent it has loaded, until
-- when it vouches for its copy. A proxy that is about to create a table
-- with encrypted columns (or rename one into place) first records an
-- intent, then waits until every proxy with a live lease has loaded it (or
-- its lease ran out) before the server sees the DDL. Until the table is in
-- the catalog, statements on that name are refused, never passed through
-- as plaintext, including from sessions that cannot see the creating
-- transaction yet.

CREATE TABLE pgonion.proxies (
    proxy_id uuid PRIMARY KEY,
    intents_seen bigint NOT NULL DEFAULT 0,
    expires timestamptz NOT NULL
);

CREATE TABLE pgonion.intents (
    n bigserial PRIMARY KEY,
    schema_name text NOT NULL,
    table_name text NOT NULL,
    proxy_id uuid NOT NULL,
    created timestamptz NOT NULL DEFAULT now()
);

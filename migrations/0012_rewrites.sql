-- Online re-encryption of columns (package internal/recrypt, DESIGN §12).
--
-- A rewrite builds a column's new form in shadow columns beside the old
-- one, which stays authoritative: the proxy keeps reading and writing the
-- old form, and a trigger empties a row's shadow whenever the old form is
-- written, so that a later pass rewrites it. The rewriter fills the
-- shadows in batches of blocks, each in one transaction with its
-- checkpoint here, then catches up with the rows emptied meanwhile, and
-- swaps the forms under a short exclusive lock, in one transaction with
-- the sealed catalog change.

CREATE TABLE pgonion.rewrites (
    table_id uuid NOT NULL,
    column_name text NOT NULL,
    kind text NOT NULL,            -- 'encrypt', 'decrypt' or 'scrub'
    target text NOT NULL,          -- the column's new catalog form (JSON)
    mac bytea NOT NULL,            -- HMAC over kind and target, so a resumed run cannot be steered
    next_block bigint NOT NULL DEFAULT 0,
    rows_done bigint NOT NULL DEFAULT 0,
    started timestamptz NOT NULL DEFAULT now(),
    updated timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (table_id, column_name)
);

-- Sets to NULL, in the row being written, the columns named by the
-- trigger's arguments (a column's shadow cells).
CREATE OR REPLACE FUNCTION pgonion.empty_shadow()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    nulls jsonb := '{}';
BEGIN
    FOR i IN 0 .. TG_NARGS - 1 LOOP
        nulls := nulls || jsonb_build_object(TG_ARGV[i], NULL);
    END LOOP;
    NEW := jsonb_populate_record(NEW, nulls);
    RETURN NEW;
END
$$;

-- An intent with switching set: a rewriter is about to switch the table's
-- columns to their new form. Proxies hold statements on the table until
-- it is gone (and their catalog shows the new form), so that none is
-- planned with the old form and run after the switch.
ALTER TABLE pgonion.intents ADD COLUMN switching boolean NOT NULL DEFAULT false;

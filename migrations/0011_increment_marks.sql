-- The increment mark commits or rolls back with the UPDATE that needs it.
--
-- The first UPDATE ... SET c = c + k of a column makes the other onions
-- of the rows it touches NULL, so pgonion.columns.incremented must be set
-- for every row the server updates, and only then. The proxy computes
-- the sealed catalog change (row MACs, version, seal) and passes it to
-- pgonion.apply_change in a one-time condition of the UPDATE itself:
-- it runs in the client's transaction, before any row is changed.
--
-- Until the transaction has ended, every proxy treats the column as
-- incremented (an intent with column_id set, see 0010_intents.sql):
-- sessions that cannot see the mark yet read the column from its Add
-- onion and do not compare it.

ALTER TABLE pgonion.intents ADD COLUMN column_id uuid;

-- Runs change, the statements of a PL/pgSQL block built by the proxy,
-- and returns true; an empty change does nothing.
CREATE OR REPLACE FUNCTION pgonion.apply_change(change text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF change <> '' THEN
        EXECUTE 'DO ' || quote_literal('BEGIN ' || change || ' END');
    END IF;
    RETURN true;
END
$$;

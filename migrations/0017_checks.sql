-- CHECK constraints over encrypted columns, which the server cannot
-- evaluate over ciphertexts: the proxy records them with their table
-- (a JSON array of {"Name": ..., "Expr": ...}, the expression as SQL over
-- the logical columns) and evaluates them on every write. NULL: none.
-- The table row's MAC covers them when there are any.

ALTER TABLE pgonion.tables ADD COLUMN checks jsonb;

-- An UPDATE (or ON CONFLICT DO UPDATE) whose new values violate such a
-- check must fail only if it changes a row, as in PostgreSQL: the proxy
-- passes the row's salt through this function, with the name of the
-- violated check (NULL when none), so that the server raises the error
-- for the first row it would change.
CREATE FUNCTION pgonion.check_row(salt bytea, violated text, relation text) RETURNS bytea
LANGUAGE plpgsql AS $$
BEGIN
	IF violated IS NOT NULL THEN
		RAISE EXCEPTION 'new row for relation "%" violates check constraint "%"', relation, violated
			USING ERRCODE = '23514', TABLE = relation, CONSTRAINT = violated;
	END IF;
	RETURN salt;
END
$$;

-- A CHECK of a domain over an encrypted column is evaluated by the proxy
-- as the table's own are (0017), but PostgreSQL reports it as the
-- domain's: "value for domain ... violates check constraint ...". The
-- proxy passes this overload, for a table with such checks, the domain
-- of each of them by name.

CREATE FUNCTION pgonion.check_row(salt bytea, violated text, relation text, domains jsonb) RETURNS bytea
LANGUAGE plpgsql AS $$
BEGIN
	IF violated IS NOT NULL AND domains ? violated THEN
		RAISE EXCEPTION 'value for domain % violates check constraint "%"', domains->>violated, violated
			USING ERRCODE = '23514', DATATYPE = domains->>violated, CONSTRAINT = violated;
	END IF;
	RETURN pgonion.check_row(salt, violated, relation);
END
$$;

-- An UPDATE the proxy computes (read-modify-write) first reads the rows
-- it changes, then writes exactly those row versions. Outside a
-- transaction block the read's row locks end with it, so the write
-- checks, under lock, that every row version is still current: if one
-- changed in between, applying the values computed from the old one
-- would lose the other write, and the statement fails with 40001 instead.
CREATE FUNCTION pgonion.expect_rows(got bigint, want bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	IF got <> want THEN
		RAISE EXCEPTION 'could not serialize access due to concurrent update'
			USING ERRCODE = '40001',
			DETAIL = format('%s of the %s rows the proxy read to compute an UPDATE changed before it wrote them.', want - got, want),
			HINT = 'Retry the statement.';
	END IF;
	RETURN true;
END
$$;

-- A DEFAULT expression of an encrypted column (now(), CURRENT_DATE,
-- gen_random_uuid(), lower('X') || ...): the server cannot apply it to
-- a column it stores only as ciphertexts, so the proxy records the
-- expression (SQL, reading no column) and computes it for each row that
-- omits the column or gives it DEFAULT, as PostgreSQL would (now() is
-- the server's transaction start). NULL: none, or a constant DEFAULT
-- (default_value). The row's MAC covers it when set.

ALTER TABLE pgonion.columns ADD COLUMN default_expr text;

-- Stored generated columns over encrypted columns: the server cannot
-- compute them over ciphertexts, so the proxy records the generation
-- expression (SQL over the table's logical columns) with the column and
-- computes the value on every write of a row. NULL: not generated. The
-- row's MAC covers it when set.

ALTER TABLE pgonion.columns ADD COLUMN generation text;

-- Stored generated columns over encrypted columns: the server cannot
-- compute them over ciphertexts, so the proxy records the generation
-- expression (SQL over the table's logical columns) with the column and
-- computes the value on every write of a row. NULL: not generated.
--
-- The collation of an encrypted text column, when it is not C or POSIX
-- (COLLATE "sv-x-icu"): the server compares its ciphertexts only, so the
-- proxy records it to refuse what it cannot do under it (order, case
-- mapping). NULL: the database's.
--
-- The row's MAC covers each when set.

ALTER TABLE pgonion.columns ADD COLUMN generation text, ADD COLUMN collation_name text;

-- Constant DEFAULTs of encrypted columns: the server cannot apply them (it
-- would store the value in plaintext), so the proxy records the value and
-- encrypts it into the rows that omit the column. NULL: no default. The
-- row's MAC covers it when set.

ALTER TABLE pgonion.columns ADD COLUMN default_value text;

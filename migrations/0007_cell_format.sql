-- The version of each encrypted column's cell formats (onion.Format),
-- fixed when the column is created. Columns recorded before this
-- migration have format 1 (AES-SIV in every Eq onion); new columns of
-- integers, dates, timestamps, booleans and numeric(p<=18,s) get
-- format 2 (one AES block per Eq cell). A column row's MAC covers the
-- format when it is not 1 (package internal/catalog).

ALTER TABLE pgonion.columns ADD COLUMN cell_format smallint NOT NULL DEFAULT 1
    CHECK (cell_format >= 1);

-- Key rotation (proxy keys rotate, package internal/recrypt): a column's
-- keys derive from its id and, once rotated, its key version. Version 0
-- is the column's first key; the row's MAC covers the version from 1 on.

ALTER TABLE pgonion.columns ADD COLUMN key_version integer NOT NULL DEFAULT 0;

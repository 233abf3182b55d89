-- Rotating a join group's keys (proxy keys rotate): the DET and OPE keys
-- the columns of a group share derive from the group's name and, once
-- rotated, its key version. Version 0 is the group's first key; the
-- row's MAC covers the version from 1 on.

ALTER TABLE pgonion.columns ADD COLUMN group_key_version integer NOT NULL DEFAULT 0;

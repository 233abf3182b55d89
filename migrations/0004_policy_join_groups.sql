-- Join groups in declared column policies (proxy columns set --join-group):
-- the columns of one group share their DET and OPE keys, so the server can
-- evaluate equi-joins and comparisons between them. NULL means the column
-- is in no group. The row's MAC covers the group when there is one, so a
-- policy without a group keeps the MAC it had before this migration, and
-- adding, changing or removing a group behind the proxy's back is detected
-- (package internal/catalog).
ALTER TABLE pgonion.policies ADD COLUMN join_group text;

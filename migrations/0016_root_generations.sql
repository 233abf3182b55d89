-- Rotating the root key (proxy keys rotate-root): each column records the
-- generation of the root key its keys derive from, and the key store
-- binding the generation the catalog's MACs and seal are computed under.
-- Generation 0 is the key store's first root key; a column row's MAC
-- covers its generation from 1 on.

ALTER TABLE pgonion.columns ADD COLUMN root_generation integer NOT NULL DEFAULT 0;
ALTER TABLE pgonion.keystore ADD COLUMN mac_generation integer NOT NULL DEFAULT 0;

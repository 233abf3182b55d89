-- MIN and MAX over Ord onion ciphertexts stored as uuid (cell format 3,
-- onion.FormatUUID), as 0005 does for bytea: PostgreSQL has no min(uuid)
-- or max(uuid), and uuids compare as their 16 bytes do, which for OPE
-- ciphertexts is the order of the plaintexts. NULLs are ignored and an
-- empty group gives NULL. They parallelize (the combine function is the
-- transition function).

CREATE OR REPLACE FUNCTION pgonion.uuid_smaller(a uuid, b uuid)
RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT CASE WHEN a <= b THEN a ELSE b END $$;

CREATE OR REPLACE FUNCTION pgonion.uuid_larger(a uuid, b uuid)
RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT CASE WHEN a >= b THEN a ELSE b END $$;

CREATE OR REPLACE AGGREGATE pgonion.min(uuid) (
    SFUNC = pgonion.uuid_smaller,
    STYPE = uuid,
    COMBINEFUNC = pgonion.uuid_smaller,
    SORTOP = <,
    PARALLEL = SAFE
);

CREATE OR REPLACE AGGREGATE pgonion.max(uuid) (
    SFUNC = pgonion.uuid_larger,
    STYPE = uuid,
    COMBINEFUNC = pgonion.uuid_larger,
    SORTOP = >,
    PARALLEL = SAFE
);

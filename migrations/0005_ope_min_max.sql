-- MIN and MAX over Ord onion ciphertexts (OPE, bytea). PostgreSQL has no
-- min(bytea) or max(bytea); once the Ord onion is peeled to OPE, comparing
-- the ciphertexts as bytes compares the plaintexts, so these aggregates
-- give the ciphertext of the least or greatest value of a group, which the
-- proxy decrypts. NULLs are ignored and an empty group gives NULL, like
-- the built-in aggregates. They parallelize (the combine function is the
-- transition function).

CREATE OR REPLACE FUNCTION pgonion.bytea_smaller(a bytea, b bytea)
RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT CASE WHEN a <= b THEN a ELSE b END $$;

CREATE OR REPLACE FUNCTION pgonion.bytea_larger(a bytea, b bytea)
RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT CASE WHEN a >= b THEN a ELSE b END $$;

CREATE OR REPLACE AGGREGATE pgonion.min(bytea) (
    SFUNC = pgonion.bytea_smaller,
    STYPE = bytea,
    COMBINEFUNC = pgonion.bytea_smaller,
    SORTOP = <,
    PARALLEL = SAFE
);

CREATE OR REPLACE AGGREGATE pgonion.max(bytea) (
    SFUNC = pgonion.bytea_larger,
    STYPE = bytea,
    COMBINEFUNC = pgonion.bytea_larger,
    SORTOP = >,
    PARALLEL = SAFE
);

-- Server-side SUM over Paillier (HOM onion) ciphertexts on an unmodified
-- PostgreSQL: the product of the ciphertexts modulo n² encrypts the sum of
-- their plaintexts.
--
--   SELECT pgonion.paillier_sum(col_add, <n² as a numeric literal>) FROM t ...
--
-- The modulus n² is public (part of the public key) and is passed as the
-- second argument. NULL ciphertexts are ignored; no rows (or only NULLs)
-- give NULL, like SUM. The transition function is STRICT and the aggregate
-- has no initial state, so the first non-NULL ciphertext becomes the state
-- as it is (it is already below n²).
--
-- Cost: each row is a numeric multiplication of two ~1850-digit numbers and a
-- division (mod); see internal/schemes/hom for measured per-row figures.

CREATE SCHEMA IF NOT EXISTS pgonion;

CREATE OR REPLACE FUNCTION pgonion.paillier_sum_step(state numeric, c numeric, nsq numeric)
RETURNS numeric
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT mod(state * c, nsq) $$;

CREATE OR REPLACE AGGREGATE pgonion.paillier_sum(numeric, numeric) (
    SFUNC = pgonion.paillier_sum_step,
    STYPE = numeric
);

-- UPDATE ... SET c = c + k over the Add onion (Paillier): the proxy sends
-- Enc(k) and the public modulus n², the server multiplies the ciphertexts
-- modulo n², which encrypts the sum. The other onions of an updated row
-- become NULL (stale); pgonion.columns.incremented records that the
-- column had such an update, so the proxy reads its values from the Add
-- onion where the Eq cell is NULL and refuses comparisons on it. The
-- row's MAC covers the flag when it is set (package internal/catalog).

ALTER TABLE pgonion.columns ADD COLUMN incremented boolean NOT NULL DEFAULT false;

-- Big-endian unsigned bytes to numeric, four bytes per step.
CREATE OR REPLACE FUNCTION pgonion.bytea_numeric(b bytea)
RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
    r numeric := 0;
    n int := length(b);
    i int := 0;
BEGIN
    WHILE i < n % 4 LOOP
        r := r * 256 + get_byte(b, i);
        i := i + 1;
    END LOOP;
    WHILE i < n LOOP
        r := r * 4294967296
            + ((get_byte(b, i)::bigint << 24) | (get_byte(b, i + 1) << 16) | (get_byte(b, i + 2) << 8) | get_byte(b, i + 3));
        i := i + 4;
    END LOOP;
    RETURN r;
END
$$;

-- A non-negative integer numeric to len big-endian bytes; an error if it
-- does not fit.
CREATE OR REPLACE FUNCTION pgonion.numeric_bytea(x numeric, len int)
RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
    words int := (len + 3) / 4;
    hex text := '';
    w bigint;
BEGIN
    FOR i IN 1 .. words LOOP
        w := mod(x, 4294967296)::bigint;
        x := div(x, 4294967296);
        hex := lpad(to_hex(w), 8, '0') || hex;
    END LOOP;
    IF x <> 0 OR (words * 4 > len AND substr(hex, 1, (words * 4 - len) * 2) <> repeat('0', (words * 4 - len) * 2)) THEN
        RAISE EXCEPTION 'pgonion: value does not fit in % bytes', len;
    END IF;
    RETURN substring(decode(hex, 'hex') FROM words * 4 - len + 1);
END
$$;

-- The Paillier sum of two ciphertexts of the same width under modulus
-- nsq (n²): their product modulo n². NULL in, NULL out (NULL + k is NULL).
CREATE OR REPLACE FUNCTION pgonion.hom_add(a bytea, b bytea, nsq numeric)
RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT pgonion.numeric_bytea(mod(pgonion.bytea_numeric(a) * pgonion.bytea_numeric(b), nsq), length(a)) $$;

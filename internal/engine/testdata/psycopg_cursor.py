"""Named (server-side) cursors over encrypted columns through the proxy.

psycopg declares the cursor, then Describes it as a portal by name before
its FETCHes: the description must give the logical columns (int4, text,
uuid) and the rows their values, in text and in binary. A cursor over
rows the proxy computes is held by the proxy.

Usage: psycopg_cursor.py URL
"""
import sys
import uuid

import psycopg

url = sys.argv[1]
with psycopg.connect(url, autocommit=True) as conn:
    conn.execute("CREATE TABLE nc (id int PRIMARY KEY, name text, u uuid)")
    rows = [(i, "n%d" % i, uuid.UUID(int=i * 7919)) for i in range(1, 6)]
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO nc VALUES (%s, %s, %s)", rows)
    for binary in (False, True):
        with conn.transaction():
            with conn.cursor(name="c%d" % binary, binary=binary) as cur:
                cur.execute("SELECT id, name, u FROM nc WHERE id < %s ORDER BY id", (5,))
                types = [c.type_code for c in cur.description]
                assert types == [23, 25, 2950], ("description", binary, cur.description)
                got = cur.fetchmany(3) + cur.fetchmany(3)
                assert got == rows[:4], ("rows", binary, got)
    # Rows the proxy computes (upper of an encrypted column, text
    # ordered by the proxy): the proxy holds the cursor's rows.
    want = [(i, "N%d" % i) for i in (4, 3, 2, 1)]
    with conn.transaction():
        with conn.cursor(name="held") as cur:
            cur.execute("SELECT id, upper(name) AS up FROM nc WHERE id < %s ORDER BY name DESC", (5,))
            assert [c.type_code for c in cur.description] == [23, 25], ("held description", cur.description)
            got = cur.fetchmany(3) + cur.fetchmany(3)
            assert got == want, ("held rows", got)
    with conn.transaction():
        with conn.cursor(name="heldbin", binary=True) as cur:
            cur.execute("SELECT id, upper(name) AS up FROM nc WHERE id < %s ORDER BY name DESC", (5,))
            got = cur.fetchall()
            assert got == want, ("held binary rows", got)
    assert conn.execute("SELECT count(*) FROM nc").fetchone() == (5,)
print("named cursors: ok")

"""Race and churn through the proxy with psycopg 3 (server-side binding).

Usage: psycopg_race.py CREATOR_URL INSERTER_URL TRIALS SESSIONS

1. TRIALS times: session B creates table p<i> in a transaction and
   commits; session A (another connection, maybe through another proxy)
   inserts a canary at once; every tenth trial A also inserts while B's
   transaction is open, which must fail.
2. SESSIONS times: a new connection whose first statement is a
   Parse/Bind/Describe/Execute/Sync of SELECT set_config('TimeZone', $1,
   false), then a read of an encrypted table, then close. A statement
   that takes more than 15 s is a hang: exit 3.

Prints one line "inserted N refused N open N sessions N"; exits 1 on a
check that fails.
"""
import sys
import threading
import os

import psycopg


def watchdog(what):
    t = threading.Timer(15, lambda: (print("hang: " + what, flush=True), os._exit(3)))
    t.daemon = True
    t.start()
    return t


def main():
    creator_url, inserter_url, trials, sessions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    b = psycopg.connect(creator_url)
    a = psycopg.connect(inserter_url, autocommit=True)
    inserted = refused = during = 0
    for i in range(trials):
        name = f"p{i}"
        canary = f"pycanary{i}zebra"
        b.execute(f"CREATE TABLE {name} (note text)")
        if i % 10 == 0:
            try:
                a.execute(f"INSERT INTO {name} VALUES (%s)", ("open" + canary,))
                print(f"trial {i}: an insert into a table being created in another open transaction succeeded")
                return 1
            except psycopg.Error:
                during += 1
        b.commit()
        try:
            a.execute(f"INSERT INTO {name} VALUES (%s)", (canary,))
            inserted += 1
        except psycopg.Error:
            refused += 1
    b.close()
    a.close()
    for i in range(sessions):
        w = watchdog(f"session {i}")
        with psycopg.connect(inserter_url, autocommit=True) as c:
            tz = c.execute("SELECT set_config('TimeZone', %s, false)", ("UTC",)).fetchone()[0]
            if tz != "UTC":
                print(f"session {i}: set_config returned {tz!r}")
                return 1
            n = c.execute("SELECT count(*) FROM p0 WHERE note = %s", ("pycanary0zebra",)).fetchone()[0]
            if n != 1:
                print(f"session {i}: read {n} rows of p0, want 1")
                return 1
        w.cancel()
    print(f"inserted {inserted} refused {refused} open {during} sessions {sessions}")
    return 0 if inserted > 0 else 1


if __name__ == "__main__":
    sys.exit(main())

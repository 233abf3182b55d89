"""Generates data derived from TPC-H, and the 22 queries, with DuckDB.

Usage: python gen.py --sf 0.01 --out DIR

Writes DIR/<table>.csv (CSV with header, NULL as empty, the tables of
dbgen at scale factor --sf), DIR/queries/qNN.sql (the 22 queries with
their standard substitution parameters, as DuckDB's tpch extension ships
them) and DIR/answers/qNN.csv where DuckDB ships reference answers for
the scale factor. Needs duckdb and duckdb-extension-tpch (PyPI, 1.5.5):
the extension is loaded from the wheel, so no download happens.

The data and queries are derived from TPC-H; results are not TPC-H
results and are not comparable with published ones.
"""

import argparse
import os
import sys

import duckdb
import duckdb_extension_tpch

TABLES = ["region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]


def extension_path():
    base = os.path.join(os.path.dirname(duckdb_extension_tpch.__file__), "extensions")
    for root, _, files in os.walk(base):
        for f in files:
            if f == "tpch.duckdb_extension":
                return os.path.join(root, f)
    sys.exit("gen.py: tpch.duckdb_extension not found under " + base)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", type=float, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(os.path.join(args.out, "queries"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "answers"), exist_ok=True)
    con = duckdb.connect()
    con.execute("LOAD '%s'" % extension_path().replace("'", "''"))
    con.execute("CALL dbgen(sf=%r)" % args.sf)
    for t in TABLES:
        path = os.path.join(args.out, t + ".csv")
        con.execute("COPY %s TO '%s' (FORMAT csv, HEADER true)" % (t, path.replace("'", "''")))
        n = con.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
        print("%s: %d rows" % (t, n), file=sys.stderr)
    for nr, query in con.execute("SELECT query_nr, query FROM tpch_queries() ORDER BY query_nr").fetchall():
        with open(os.path.join(args.out, "queries", "q%02d.sql" % nr), "w") as f:
            f.write(query.strip().rstrip(";") + "\n")
    try:
        rows = con.execute("SELECT query_nr, answer FROM tpch_answers() WHERE scale_factor = ?", [args.sf]).fetchall()
    except duckdb.Error:
        rows = []
    for nr, answer in rows:
        with open(os.path.join(args.out, "answers", "q%02d.csv" % nr), "w") as f:
            f.write(answer)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Python anchors for the OPE and Paillier micro-benchmarks.

  anchors.py measure            time pyope and phe, print JSON (µs per op)
  anchors.py table GO ANCHORS   Markdown table of `go test -bench` output GO
                                against the JSON file ANCHORS

pyope: Boldyreva et al. OPE, 32-bit domain [0, 2^32) into a 64-bit range
[0, 2^64), as our Cipher32. phe: python-paillier (gmpy2 arithmetic), whose
encrypt computes r^n mod n^2 each time and whose decrypt uses the CRT.
Timings are single-threaded wall-clock means.
"""
import json
import re
import sys
import time


def timeit(fn, min_reps=5, min_seconds=2.0):
    fn()  # warm up
    reps, start = 0, time.perf_counter()
    while reps < min_reps or time.perf_counter() - start < min_seconds:
        fn()
        reps += 1
    return (time.perf_counter() - start) / reps * 1e6


def measure():
    import random
    from pyope.ope import OPE, ValueRange
    from phe import paillier

    out = {}
    key = OPE.generate_key()
    cipher = OPE(key, in_range=ValueRange(0, 2**32 - 1), out_range=ValueRange(0, 2**64 - 1))
    rnd = random.Random(1)
    vals = [rnd.randrange(0, 2**32) for _ in range(1000)]
    it = iter(range(10**9))
    out["ope_encrypt_32"] = timeit(lambda: cipher.encrypt(vals[next(it) % len(vals)]), min_reps=50)
    cts = [cipher.encrypt(v) for v in vals[:50]]
    it2 = iter(range(10**9))
    out["ope_decrypt_32"] = timeit(lambda: cipher.decrypt(cts[next(it2) % len(cts)]), min_reps=50)

    for bits in (2048, 3072):
        pub, priv = paillier.generate_paillier_keypair(n_length=bits)
        out[f"paillier_encrypt_{bits}"] = timeit(lambda: pub.encrypt(-123456789), min_reps=10)
        c1, c2 = pub.encrypt(5), pub.encrypt(-7)
        out[f"paillier_decrypt_{bits}"] = timeit(lambda: priv.decrypt(c1), min_reps=10)
        out[f"paillier_add_{bits}"] = timeit(lambda: c1 + c2, min_reps=100, min_seconds=1.0)
    json.dump(out, sys.stdout, indent=2)
    print()


# (row label, our benchmark name, anchor key)
ROWS = [
    ("OPE encrypt, 32-bit domain", "BenchmarkOPEEncrypt32", "ope_encrypt_32"),
    ("OPE decrypt, 32-bit domain", "BenchmarkOPEDecrypt32", "ope_decrypt_32"),
    ("OPE encrypt, 64-bit domain (anchor: pyope 32-bit)", "BenchmarkOPEEncrypt64", "ope_encrypt_32"),
    ("Paillier-2048 encrypt, warm pool", "BenchmarkPaillierEncryptWarm/2048", "paillier_encrypt_2048"),
    ("Paillier-2048 encrypt, sustained (pool refill)", "BenchmarkPaillierRandomizer/2048", "paillier_encrypt_2048"),
    ("Paillier-2048 decrypt (CRT)", "BenchmarkPaillierDecrypt/2048", "paillier_decrypt_2048"),
    ("Paillier-2048 add", "BenchmarkPaillierAdd/2048", "paillier_add_2048"),
    ("Paillier-3072 encrypt, warm pool", "BenchmarkPaillierEncryptWarm/3072", "paillier_encrypt_3072"),
    ("Paillier-3072 encrypt, sustained (pool refill)", "BenchmarkPaillierRandomizer/3072", "paillier_encrypt_3072"),
    ("Paillier-3072 decrypt (CRT)", "BenchmarkPaillierDecrypt/3072", "paillier_decrypt_3072"),
    ("Paillier-3072 add", "BenchmarkPaillierAdd/3072", "paillier_add_3072"),
]


def fmt(us):
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us:.1f} µs"


def table(go_path, anchors_path):
    ours = {}
    for line in open(go_path):
        m = re.match(r"^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op", line)
        if m:
            ours[m.group(1)] = float(m.group(2)) / 1000
    anchors = json.load(open(anchors_path))
    print("| operation | ours | anchor | anchor / ours |")
    print("|---|---|---|---|")
    for label, bench, key in ROWS:
        o, a = ours.get(bench), anchors.get(key)
        if o is None or a is None:
            print(f"| {label} | {fmt(o) if o else 'n/a'} | {fmt(a) if a else 'n/a'} | n/a |")
            continue
        print(f"| {label} | {fmt(o)} | {fmt(a)} | {a / o:.1f}x |")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "measure":
        measure()
    elif len(sys.argv) == 4 and sys.argv[1] == "table":
        table(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)

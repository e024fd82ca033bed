#!/usr/bin/env python3
"""Compares "NAME v1 v2 ..." lines of a reference with "NAME: v1 v2 ..." lines
printed by a program (atol 1e-5). Prints one line per name; exits 1 on a
mismatch or a missing name."""
import sys


def parse(path):
    rows = {}
    for line in open(path):
        parts = line.replace(":", " ").split()
        try:
            rows[parts[0]] = [float(v) for v in parts[1:]]
        except (ValueError, IndexError):
            pass
    return rows


ref, got = parse(sys.argv[1]), parse(sys.argv[2])
bad = False
for name, want in ref.items():
    have = got.get(name)
    if have is None or len(have) != len(want):
        print(f"{name}: missing or wrong length in {sys.argv[2]}")
        bad = True
        continue
    err = max(abs(a - b) for a, b in zip(have, want))
    ok = err <= 1e-5
    bad |= not ok
    print(f"{name}: max abs error {err:.3g} {'ok' if ok else 'MISMATCH'}")
sys.exit(1 if bad else 0)

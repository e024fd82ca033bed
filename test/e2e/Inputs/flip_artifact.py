#!/usr/bin/env python3
"""Damages the weights inside a compiled shared artifact and runs each
damaged copy with kiln-run: every one must be refused by the data checksum
(ABI 5) before anything is run.

    flip_weights.py KILN_RUN ARTIFACT.so INPUT_NAME INPUT.npy OUTDIR FLIPS

Reads the artifact's data ranges through kiln_artifact_v1() (ctypes), checks
the recorded data_checksum against FNV-1a 64 computed here (the definition in
kiln/runtime.h, written again in Python), finds the largest range's bytes in
the file and flips FLIPS bytes spread over it (xor 0x01), one copy each.
Prints two lines; exit 1 when a damaged copy runs or fails otherwise.
"""
import ctypes
import os
import subprocess
import sys

FNV_OFFSET, FNV_PRIME, MASK = 14695981039346656037, 1099511628211, (1 << 64) - 1


def fnv1a64_words(chunks):
    h = FNV_OFFSET
    for data in chunks:
        words = len(data) // 8
        for i in range(words):
            h = ((h ^ int.from_bytes(data[8 * i:8 * i + 8], "little")) * FNV_PRIME) & MASK
        for b in data[8 * words:]:
            h = ((h ^ b) * FNV_PRIME) & MASK
    return h


def main():
    kiln_run, artifact, name, npy, out, flips = sys.argv[1:7]
    lib = ctypes.CDLL(os.path.abspath(artifact), mode=os.RTLD_LOCAL)
    lib.kiln_artifact_v1.restype = ctypes.c_void_p
    base = lib.kiln_artifact_v1()
    u64 = lambda off: ctypes.c_uint64.from_address(base + off).value
    abi = ctypes.c_uint32.from_address(base).value
    ranges_at, count, recorded = u64(56), u64(64), u64(72)
    ranges = [ctypes.string_at(ctypes.c_uint64.from_address(ranges_at + 16 * i).value,
                               ctypes.c_uint64.from_address(ranges_at + 16 * i + 8).value)
              for i in range(count)]
    total = sum(len(r) for r in ranges)
    ok = abi >= 5 and count > 0 and fnv1a64_words(ranges) == recorded
    print(f"abi {abi}: {count} data ranges, {total} bytes; data checksum matches an independent "
          f"computation: {'ok' if ok else 'MISMATCH'}")
    if not ok:
        return 1

    data = open(artifact, "rb").read()
    largest = max(ranges, key=len)
    at = data.find(largest)
    if at < 0 or data.find(largest, at + 1) != -1:
        print("expected the largest data range once in the file")
        return 1
    os.makedirs(out, exist_ok=True)
    refused, bad = 0, []
    n = int(flips)
    for k in range(n):
        i = at + (k * len(largest)) // n
        damaged = bytearray(data)
        damaged[i] ^= 0x01
        path = os.path.join(out, "damaged.so")
        with open(path, "wb") as f:
            f.write(damaged)
        p = subprocess.run([kiln_run, path, "--input", f"{name}={npy}"], capture_output=True, text=True)
        if p.returncode != 0 and "the checksum of its constant data" in p.stderr:
            refused += 1
        else:
            bad.append((i, p.returncode, p.stderr.strip()[:200]))
    print(f"weight bytes flipped: {n}, refused by the checksum: {refused}")
    for i, code, err in bad[:5]:
        print(f"  byte {i}: exit {code}: {err}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())

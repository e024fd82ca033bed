#!/usr/bin/env python3
"""Changes single bytes of the descriptor inside a compiled shared artifact
and runs each damaged copy with kiln-run: every one must be refused by the
descriptor checksum (ABI 4) before anything is run.

    flip_descriptor.py KILN_RUN ARTIFACT.so INPUT.npy OUTDIR

The descriptor is found by its FlatBuffers file identifier "KILN" (bytes 4
to 8 of the buffer). Each byte of the first 256 descriptor bytes (or all,
if fewer) is flipped in turn (xor 0x01, which also catches the arena-size
and byte-size changes of one bit that went through unnoticed before).
Prints one line; exit 1 when a damaged copy runs or fails otherwise.
"""
import os
import subprocess
import sys


def main():
    kiln_run, artifact, npy, out = sys.argv[1:5]
    data = open(artifact, "rb").read()
    at = data.find(b"KILN")
    if at < 4 or data.find(b"KILN", at + 1) != -1:
        print(f"expected one 'KILN' identifier in {artifact}")
        return 1
    start = at - 4
    os.makedirs(out, exist_ok=True)
    p = subprocess.run([kiln_run, artifact, "--input", f"x={npy}"], capture_output=True, text=True)
    if p.returncode != 0:
        print(f"the undamaged artifact does not run: {p.stderr.strip()}")
        return 1
    refused, bad = 0, []
    for i in range(start, min(start + 256, len(data))):
        damaged = bytearray(data)
        damaged[i] ^= 0x01
        path = os.path.join(out, "damaged.so")
        with open(path, "wb") as f:
            f.write(damaged)
        p = subprocess.run([kiln_run, path, "--input", f"x={npy}"], capture_output=True, text=True)
        if p.returncode != 0 and "does not match the 0x" in p.stderr:
            refused += 1
        else:
            bad.append(f"byte {i - start}: exit {p.returncode}: {p.stderr.strip()[:200]}")
    for b in bad[:5]:
        print(b)
    print(f"descriptor bytes flipped: {refused + len(bad)}, refused by the checksum: {refused}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Damages the weights or the code inside a compiled shared artifact and runs
each damaged copy with kiln-run: every one must be refused by the data
checksum (ABI 5) or the code checksum (ABI 6) before anything is run.

    flip_artifact.py weights|code KILN_RUN ARTIFACT.so INPUT_NAME INPUT.npy OUTDIR FLIPS

Reads the artifact through kiln_artifact_v1() (ctypes) and checks the
recorded checksum against FNV-1a 64 computed here (the definition in
kiln/runtime.h, written again in Python): for `weights` over its data
ranges, for `code` over the library's executable segment as the file holds
it (ELF headers read here). Then flips FLIPS bytes spread over the largest
data range, or over the .text section (the compiled model's code; the
segment's other sections run inside dlopen, before any check can), xor 0x01,
one copy each. In .text, the code that runs before any check can is
skipped: the C runtime's start-up functions, which dlopen runs
(register_tm_clones, frame_dummy, ...), and the accessors kiln_artifact_v1
and <name>_artifact, which the caller runs to find the struct the checksum
is in (each a few instructions returning an address). Prints two lines; exit 1 when a
damaged copy runs or fails otherwise.
"""
import ctypes
import os
import struct
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


UNCHECKED = {"kiln_artifact_v1", "deregister_tm_clones", "register_tm_clones", "__do_global_dtors_aux",
             "frame_dummy"}


def unchecked_ranges(path, data):
    """File byte ranges of the code that runs before the code checksum is
    verified: C start-up functions and the accessors."""
    phoff = struct.unpack_from("<Q", data, 0x20)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads = []
    for i in range(phnum):
        p_type, p_flags, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and p_flags & 1:
            loads.append((p_vaddr, p_offset, p_filesz))
    # Sorted by address; a start-up function without a size ends where the
    # next symbol starts.
    out = subprocess.run(["nm", "-n", "-S", "--defined-only", path], capture_output=True, text=True).stdout
    symbols = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) in (3, 4) and parts[-2] in "Tt":
            size = int(parts[1], 16) if len(parts) == 4 else None
            symbols.append((int(parts[0], 16), size, parts[-1]))
    ranges = []
    for k, (vaddr, size, name) in enumerate(symbols):
        if name not in UNCHECKED and not name.endswith("_artifact"):
            continue
        if size is None:
            size = (symbols[k + 1][0] if k + 1 < len(symbols) else vaddr + 64) - vaddr
        for p_vaddr, p_offset, p_filesz in loads:
            if p_vaddr <= vaddr < p_vaddr + p_filesz:
                ranges.append((vaddr - p_vaddr + p_offset, size))
    return ranges


def elf_code(data):
    """(offset, size) of the executable PT_LOAD and of the .text section."""
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 0x36)
    segments = []
    for i in range(phnum):
        p_type, p_flags, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and p_flags & 1:  # PT_LOAD, PF_X
            segments.append((p_offset, p_filesz))
    sections = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = sections[shstrndx][4]
    text = None
    for name, _, _, _, offset, size in sections:
        if data[names_at + name:data.index(b"\0", names_at + name)] == b".text":
            text = (offset, size)
    return segments, text


def main():
    what, kiln_run, artifact, name, npy, out, flips = sys.argv[1:8]
    lib = ctypes.CDLL(os.path.abspath(artifact), mode=os.RTLD_LOCAL)
    lib.kiln_artifact_v1.restype = ctypes.c_void_p
    base = lib.kiln_artifact_v1()
    u64 = lambda off: ctypes.c_uint64.from_address(base + off).value
    abi = ctypes.c_uint32.from_address(base).value
    data = open(artifact, "rb").read()
    if what == "weights":
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
        largest = max(ranges, key=len)
        at, size = data.find(largest), len(largest)
        if at < 0 or data.find(largest, at + 1) != -1:
            print("expected the largest data range once in the file")
            return 1
        expected = "the checksum of its constant data"
    else:
        segments, text = elf_code(data)
        ok = (abi >= 6 and len(segments) == 1 and text is not None and
              fnv1a64_words([data[segments[0][0]:segments[0][0] + segments[0][1]]]) == u64(80))
        print(f"abi {abi}: {len(segments)} executable segment(s); code checksum matches an independent "
              f"computation: {'ok' if ok else 'MISMATCH'}")
        if not ok:
            return 1
        at, size = text
        skip = unchecked_ranges(artifact, data)
        if not skip:
            print("expected the accessors kiln_artifact_v1 and <name>_artifact in the symbol table")
            return 1
        expected = "the checksum of its code"
    os.makedirs(out, exist_ok=True)
    refused, bad = 0, []
    n = int(flips)
    for k in range(n):
        i = at + (k * size) // n
        if what == "code":
            for start, length in skip:
                if start <= i < start + length:
                    i = start + length  # the next byte after the accessor
        damaged = bytearray(data)
        damaged[i] ^= 0x01
        path = os.path.join(out, "damaged.so")
        with open(path, "wb") as f:
            f.write(damaged)
        p = subprocess.run([kiln_run, path, "--input", f"{name}={npy}"], capture_output=True, text=True)
        if p.returncode != 0 and expected in p.stderr:
            refused += 1
        else:
            bad.append((i, p.returncode, p.stderr.strip()[:200]))
    print(f"{'weight' if what == 'weights' else 'code'} bytes flipped: {n}, refused by the checksum: {refused}")
    for i, code, err in bad[:5]:
        print(f"  byte {i}: exit {code}: {err}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())

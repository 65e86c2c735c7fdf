#!/usr/bin/env python3
"""Copies an x86-64 program or shared library so that it sees no AVX-512 (for benchmarks).

    hide-avx512.py IN OUT

Every `xgetbv` instruction in IN (found with binutils' objdump) becomes `push 7; pop rax`
(the same three bytes' length): the program reads XCR0 as "x87, SSE and AVX state only",
so its feature checks (Rust's std_detect, ONNX Runtime's MLAS and cpuinfo) find AVX2 but no
AVX-512, and no AVX-512 VNNI, and choose the kernels a processor with AVX2 only runs.
Run natively, those kernels go at this processor's speed, where an emulator
(`qemu-x86_64 -cpu Haswell`) runs about 30 times slower. Used to time Engram's embeddings
on ONNX Runtime's AVX2 int8 kernels on a machine that has AVX-512 (README, Benchmarks):

    scripts/hide-avx512.py target/release/engram /tmp/engram-avx2
    scripts/hide-avx512.py models/all-MiniLM-L6-v2/libonnxruntime.so /tmp/avx2/libonnxruntime.so

A processor without AVX-512 already sees none; the copy then behaves as the original. Not
for production use: it only hides the instructions, the processor still has them.
"""

import re
import subprocess
import sys

XGETBV = b"\x0f\x01\xd0"
PUSH_7_POP_RAX = b"\x6a\x07\x58"


def sections(path):
    """(address, size, file offset) of each section objdump lists."""
    out = subprocess.run(["objdump", "-h", path], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        p = line.split()
        if len(p) >= 6 and p[0].isdigit():
            found.append((int(p[3], 16), int(p[2], 16), int(p[5], 16)))
    return found


def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = bytearray(open(src, "rb").read())
    listing = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", src], capture_output=True, text=True, check=True
    ).stdout
    patched = 0
    for m in re.finditer(r"^\s*([0-9a-f]+):\s+xgetbv\b", listing, re.M):
        address = int(m.group(1), 16)
        for start, size, offset in sections(src):
            if start <= address < start + size:
                at = address - start + offset
                if data[at : at + 3] != XGETBV:
                    sys.exit(f"{src}: no xgetbv at {address:#x}")
                data[at : at + 3] = PUSH_7_POP_RAX
                patched += 1
                break
    with open(dst, "wb") as out:
        out.write(data)
    print(f"{dst}: {patched} xgetbv replaced", file=sys.stderr)


if __name__ == "__main__":
    main()

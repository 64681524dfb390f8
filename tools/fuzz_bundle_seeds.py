#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# fuzz_bundle_seeds.py — the seeds of fuzz_bundle_struct (tests/fuzz/corpus/bundle_struct/): one
# bundle content of each format version (v1..v4, v4 also MACed), with the two graphs' entries of
# corpus/bundle_sums/two.content and without entries, each as the harness reads it:
#   sel:u8 (version - 1, | 4 for the MAC key) count:u32 content
# The v4 seal is left empty: the harness makes it.  Run it again when the bundle grammar
# (include/kcache/bundle.h) or two.content changes.
import os, struct

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fuzz", "corpus")
two = open(os.path.join(here, "bundle_sums", "two.content"), "rb").read()
count, content = struct.unpack_from("<I", two, 0)[0], two[4:]

def s16(b): return struct.pack("<H", len(b)) + b
def covers():
    out = s16(b"m.json") + struct.pack("<H", 3)
    for t in (b"sm_80", b"sm_90", b"compute_90"):
        out += bytes([len(t)]) + t
    out += struct.pack("<I", 2)
    for i, name in enumerate((b"softmax", b"layernorm")):
        out += bytes([i + 1]) * 16 + s16(name)
    return out
def profiles():
    ps = [b"kcache-profile 1\nsite model.forward\ninput 0 1\n", b"kcache-profile 1\nsite model.backward\ninput 0 3\ninput 2 1\n"]
    return struct.pack("<I", len(ps)) + b"".join(s16(p) for p in ps)
def u32(b): return struct.pack("<I", len(b)) + b

def body(version):
    if version == 1: return b""
    if version == 2: return covers()
    if version == 3: return u32(covers()) + profiles()
    return u32(covers()) + u32(profiles()) + struct.pack("<I", 0)

out = os.path.join(here, "bundle_struct")
os.makedirs(out, exist_ok=True)
for version, sel in ((1, 0), (2, 1), (3, 2), (4, 3), (4, 7)):
    tag = f"v{version}" + ("-mac" if sel & 4 else "")
    with open(os.path.join(out, f"{tag}.entries"), "wb") as f:
        f.write(bytes([sel]) + struct.pack("<I", count) + content + body(version))
    if version > 1:
        with open(os.path.join(out, f"{tag}.records"), "wb") as f:
            f.write(bytes([sel]) + struct.pack("<I", 0) + body(version))

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fuzz_seeds.sh — regenerate the seed corpora of the fuzz targets that read entries, bundles,
# launch programs, images and unit records
# (tests/fuzz/corpus/{entry,entry_sums,bundle,bundle_sums,sections,program,image,entry_sig}/) from real
# objects written by the current code, so the seeds always speak the current entry format (v4, two
# levels: include/kcache/entry.h) and launch-program grammar (src/graph/program.c).
#
# The one idea: a seed made by hand, or by an older build, stops at the first check the format
# changed (a v1 seed at the version check, a program without nrargs at its first count), and the
# fuzzer never reaches the parsers behind it.
# So every seed here is what kcache itself writes today, converted to each target's input form:
#   entry/, entry_sums/   golden.kce, golden_image.kce, golden_unit.kce (tests/golden/{entry,image,unit}_v4.kce);
#                         softmax_sm80.kce (kernels/softmax.json compiled for sm_80: cubins) and
#                         layer_norm_compute80.kce (kernels/layer_norm.json for compute_80: PTX), as
#                         kcache prewarm stores them, each with its image and unit record
#                         (<graph>.img.kce, <graph>.unit.kce: the first of each, by name); args_sm80.kce
#                         (the spec below, for sm_80: two kernels of one unit) and its unit record;
#                         adamw_sm80, linear_sm80, global_norm_sm80 (in-place inputs and an aliased
#                         output, accumulating gradients, a zero step)
#   bundle/               two.kcb: `kcache export` of those two graph entries (with their images and unit records)
#   bundle_sums/          two.content: the bundle's count:u32 then its inflated content (fuzz_bundle_sums.c)
#   sections/             <entry>.sec for each entry above: { tag:u8 len:u16 bytes } records
#                         (fuzz_sections.c): 1 toolchain, 0 each META digest name, 2..10 each section's raw
#                         bytes (7 PARAMS, 8 IMAGES, 9 IMAGE, 10 UNIT; an IMAGE over 65535 bytes is left
#                         out), 11 its ORIGIN compile_us as "compile_us=N"; wrappers.sec (a WRAPPERS section recording philox and cuda_graph) and
#                         params.sec (a PARAMS section alone: one kernel, two parameters)
#   program/              <entry>.fwd and <entry>.bwd: the FORWARD and BACKWARD section bytes of
#                         softmax_sm80, layer_norm_compute80 and args_sm80 (fuzz_program.c)
#   image/                fuzz_image.c's input (mode:u8 rest): <obj>.img0 (mode 0x30) and .img1 (0xb1: the
#                         read checks SHA-256) for each image above: its IMAGE section; <graph>.graph
#                         (mode 1): ilen:u16 IMAGES KERNELS of each graph entry above; <obj>.unit (mode 2):
#                         each unit record's UNIT section
# args_sm80 is compiled from a spec this script writes to its scratch folder: runtime arguments
# (f32 and u64), every newer argument kind (arg:NAME, null, u32:, f64:, bytes:HEX, a tensor at an
# element offset ROLE:I+EXPR) and device_* facts in a grid, a block and shared memory — so the
# program, PARAMS and launch-ABI readers start from inputs that use all of them.
# Entries carry their creation time, so the bytes differ from run to run; their shape does not.
#
# Usage: tools/fuzz_seeds.sh [BUILD_DIR]   (default: build) — a plain build with the CLI
# (BUILD_DIR/tools/kcache/kcache) and the shared library (BUILD_DIR/src/libkcache.so); NVRTC must
# be loadable (prewarm compiles; no GPU needed); python3 (tools/deps.sh) converts, reading entries
# through libkcache and inflating the bundle through libzstd.
# Writes only the files named above (a seed added by hand, such as a crash's input, stays).
# Must not: touch a cache directory other than its own scratch one (KCACHE_DIR is set for it).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
kcache=$build/tools/kcache/kcache
lib=$build/src/libkcache.so
if [ ! -x "$kcache" ] || [ ! -f "$lib" ]; then
  echo "fuzz_seeds: no $kcache or $lib: build first (cmake --build $build)" >&2; exit 2
fi
tmp=$(mktemp -d /tmp/kcache-seeds-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export KCACHE_DIR=$tmp/cache
unset KCACHE_REMOTE KCACHE_READONLY KCACHE_DISABLE KCACHE_REQUIRE_HIT

# One graph per manifest, so each is compiled for its one target only.
prewarm() {  # prewarm SPEC_PATH TARGET
  printf '{"graphs": ["%s"], "archs": ["%s"]}\n' "$1" "$2" >"$tmp/m.json"
  "$kcache" prewarm "$tmp/m.json" -j 1 >"$tmp/prewarm.log" 2>&1 || { cat "$tmp/prewarm.log" >&2; exit 1; }
}
one() {  # one VARIANT: the path of the only stored entry of that variant
  local f
  f=$(find "$KCACHE_DIR/v1" -name "*.$1.kce")
  [ "$(printf '%s\n' "$f" | grep -c .)" = 1 ] || { echo "fuzz_seeds: expected one $1 entry, found: $f" >&2; exit 1; }
  printf '%s\n' "$f"
}
objs() {  # objs KIND (img, unit): the stored objects of that kind, by name
  find "$KCACHE_DIR/v1" -name "*.$1.kce" | sort
}
# The second-level objects a prewarm added (not in the list $1): the first image and unit record, by
# name, installed as $2.img.kce and $2.unit.kce in the entry seed folders.
new_objs() {  # new_objs BEFORE_LIST NAME
  local k f
  for k in img unit; do
    f=$(objs $k | grep -vxF -f "$1" | head -1 || true)
    [ -n "$f" ] || { echo "fuzz_seeds: $2 stored no .$k object" >&2; exit 1; }
    for d in entry entry_sums; do install -m 0644 "$f" $c/$d/$2.$k.kce; done
  done
}
c=tests/fuzz/corpus
mkdir -p $c/entry $c/entry_sums $c/bundle $c/bundle_sums $c/sections $c/program $c/image
: >"$tmp/before"
prewarm "$PWD/kernels/softmax.json" sm_80
new_objs "$tmp/before" softmax_sm80
{ objs img; objs unit; } >"$tmp/before"
prewarm "$PWD/kernels/layer_norm.json" compute_80
new_objs "$tmp/before" layer_norm_compute80
for d in entry entry_sums; do  # install -m 0644: the cache keeps its files private (0600)
  install -m 0644 tests/golden/entry_v4.kce $c/$d/golden.kce
  install -m 0644 tests/golden/image_v4.kce $c/$d/golden_image.kce
  install -m 0644 tests/golden/unit_v4.kce $c/$d/golden_unit.kce
  install -m 0644 "$(one sm_80)" $c/$d/softmax_sm80.kce
  install -m 0644 "$(one compute_80)" $c/$d/layer_norm_compute80.kce
done
"$kcache" export "$tmp/two.kcb" >"$tmp/export.log" 2>&1 || { cat "$tmp/export.log" >&2; exit 1; }
install -m 0644 "$tmp/two.kcb" $c/bundle/two.kcb

# The runtime-argument spec, in a cache of its own (the bundle above stays the two graphs).
mkdir -p "$tmp/args"
cat >"$tmp/args/args.cu" <<'CU'
struct trio { float a, b, c; };
extern "C" __global__ void step(const float *x, float *y, long long n, float lr, double d, unsigned u,
                                trio t, const float *maybe, const float *tail, unsigned long long seed) {
  extern __shared__ float s[];
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  if (i < n) y[i] = lr * s[threadIdx.x] + (float)d + (float)u + t.a + t.b + t.c + (maybe ? maybe[0] : 0.f)
                    + tail[0] + (float)seed;
}
extern "C" __global__ void scale(const float *x, float *y, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
CU
cat >"$tmp/args/args.json" <<'SPEC'
{
  "name": "fuzz_args",
  "kernels": [{"id": "step", "file": "args.cu", "entry": "step"}, {"id": "scale", "file": "args.cu", "entry": "scale"}],
  "inputs":  [{"dtype": "f32", "sizes": ["N"], "requires_grad": true}],
  "outputs": [{"dtype": "f32", "sizes": ["N"]}],
  "args": [{"name": "lr", "type": "f32"}, {"name": "seed", "type": "u64"}],
  "forward": [{"kernel": "step", "grid": ["min(ceildiv(N, 128), device_sm_count * 4)", 1, 1],
               "block": ["device_warp_size * 4", 1, 1], "shared": "device_warp_size * 16",
               "args": ["input:0", "output:0", "e64:N", "arg:lr", "f64:0.25", "u32:4000000000",
                        "bytes:0000803f0000004000004040", "null", "input:0+N-1", "arg:seed"]}],
  "backward": [{"kernel": "scale", "grid": ["ceildiv(N, 128)", 1, 1], "block": [128, 1, 1],
                "args": ["grad_out:0", "grad_in:0+1", "e32:N-1", "arg:lr"]}]
}
SPEC
KCACHE_DIR=$tmp/cache-args prewarm "$tmp/args/args.json" sm_80
args_entry=$(KCACHE_DIR=$tmp/cache-args one sm_80)
args_unit=$(KCACHE_DIR=$tmp/cache-args objs unit | head -1)
for d in entry entry_sums; do
  install -m 0644 "$args_entry" $c/$d/args_sm80.kce
  install -m 0644 "$args_unit" $c/$d/args_sm80.unit.kce
done
# The training-step graphs: in-place inputs and an aliased output (adamw), accumulating gradients (linear),
# a zero step (global_norm) — each in a cache of its own, for sm_80.
for g in adamw linear global_norm; do
  KCACHE_DIR=$tmp/cache-$g prewarm "$PWD/kernels/$g.json" sm_80
  e=$(KCACHE_DIR=$tmp/cache-$g one sm_80)
  for d in entry entry_sums; do install -m 0644 "$e" $c/$d/${g}_sm80.kce; done
done

python3 - "$lib" "$c" <<'EOF'
import ctypes, struct, sys
lib, c = sys.argv[1], sys.argv[2]
kc = ctypes.CDLL(lib)
zstd = ctypes.CDLL("libzstd.so.1")
P, S = ctypes.c_void_p, ctypes.c_size_t
kc.kc_entry_decode.argtypes = [ctypes.POINTER(P), ctypes.c_char_p, S]
kc.kc_entry_section.argtypes = [P, ctypes.c_int, ctypes.POINTER(P), ctypes.POINTER(S)]
kc.kc_entry_digest_count.argtypes, kc.kc_entry_digest_count.restype = [P], S
kc.kc_entry_digest_at.argtypes = [P, S, ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p]
kc.kc_entry_toolchain.argtypes, kc.kc_entry_toolchain.restype = [P], ctypes.c_char_p
kc.kc_entry_free.argtypes = [P]
zstd.ZSTD_decompress.argtypes, zstd.ZSTD_decompress.restype = [ctypes.c_char_p, S, ctypes.c_char_p, S], S
zstd.ZSTD_isError.argtypes, zstd.ZSTD_isError.restype = [S], ctypes.c_uint

def rec(tag, b):  # one fuzz_sections record
    assert len(b) <= 0xffff, "a section too long for a sections seed"
    return struct.pack("<BH", tag, len(b)) + b

def decoded(name):  # the entry seed <name>.kce, decoded
    data = open(f"{c}/entry/{name}.kce", "rb").read()
    e = P()
    if kc.kc_entry_decode(ctypes.byref(e), data, len(data)):
        sys.exit(f"fuzz_seeds: {name}.kce does not decode")
    return e

def section(e, t):  # section t's bytes, or None
    p, ln = P(), S()
    if kc.kc_entry_section(e, t, ctypes.byref(p), ctypes.byref(ln)):
        return None
    return ctypes.string_at(p, ln.value) if ln.value else b""

def sections(name):  # an entry as fuzz_sections input: toolchain, digest names, sections 2..10
    e = decoded(name)
    out = rec(1, kc.kc_entry_toolchain(e))
    for i in range(kc.kc_entry_digest_count(e)):
        n, d = ctypes.c_char_p(), ctypes.create_string_buffer(16)
        assert kc.kc_entry_digest_at(e, i, ctypes.byref(n), d) == 0
        out += rec(0, n.value)
    for t in range(2, 11):
        b = section(e, t)
        if b is not None and not (t == 9 and len(b) > 0xffff):  # an image too long for a record is left out
            out += rec(t, b)
    v = ctypes.create_string_buffer(64)  # ORIGIN (v4): its compile_us, as fuzz_sections' "name=value" record
    if kc.kc_entry_origin(e, b"compile_us", v, 64) == 0:
        out += rec(11, b"compile_us=" + v.value)
    kc.kc_entry_free(e)
    open(f"{c}/sections/{name}.sec", "wb").write(out)

TRAIN = ("adamw_sm80", "linear_sm80", "global_norm_sm80")
GRAPHS = ("golden", "softmax_sm80", "layer_norm_compute80", "args_sm80") + TRAIN
IMAGES = ("golden_image", "softmax_sm80.img", "layer_norm_compute80.img")
UNITS = ("golden_unit", "softmax_sm80.unit", "layer_norm_compute80.unit", "args_sm80.unit")
for name in GRAPHS + IMAGES + UNITS:
    sections(name)

def image_seeds():  # fuzz_image input: mode:u8 then the section(s) (fuzz_image.c)
    for name in IMAGES:
        e = decoded(name)
        b = section(e, 9)
        assert b is not None, f"{name} has no IMAGE section"
        open(f"{c}/image/{name}0", "wb").write(bytes([0x30]) + b)  # digests made right, name only
        open(f"{c}/image/{name}1", "wb").write(bytes([0xb1]) + b)  # and SHA-256 checked
        kc.kc_entry_free(e)
    for name in GRAPHS:
        e = decoded(name)
        imgs, kern = section(e, 8), section(e, 4)
        assert imgs is not None and kern is not None, f"{name} has no IMAGES or KERNELS section"
        open(f"{c}/image/{name}.graph", "wb").write(bytes([1]) + struct.pack("<H", len(imgs)) + imgs + kern)
        kc.kc_entry_free(e)
    for name in UNITS:
        e = decoded(name)
        b = section(e, 10)
        assert b is not None, f"{name} has no UNIT section"
        open(f"{c}/image/{name}", "wb").write(bytes([2]) + b)
        kc.kc_entry_free(e)

image_seeds()

def programs(name):  # an entry's FORWARD (2) and BACKWARD (3) section bytes, as fuzz_program input
    data = open(f"{c}/entry/{name}.kce", "rb").read()
    e = P()
    if kc.kc_entry_decode(ctypes.byref(e), data, len(data)):
        sys.exit(f"fuzz_seeds: {name}.kce does not decode")
    for t, ext in ((2, "fwd"), (3, "bwd")):
        p, ln = P(), S()
        if kc.kc_entry_section(e, t, ctypes.byref(p), ctypes.byref(ln)) or not ln.value:
            if t == 3 and name in TRAIN:  # a forward-only graph
                continue
            sys.exit(f"fuzz_seeds: {name}.kce has no section {t}")
        open(f"{c}/program/{name}.{ext}", "wb").write(ctypes.string_at(p, ln.value))
    kc.kc_entry_free(e)

for name in ("softmax_sm80", "layer_norm_compute80", "args_sm80") + TRAIN:
    programs(name)

s = lambda b: struct.pack("<I", len(b)) + b  # WRAPPERS str
wrappers = struct.pack("<I", 2) + s(b"philox") + struct.pack("<II", 1, 1) + b"7" \
         + s(b"cuda_graph") + struct.pack("<II", 1, 2) + b"16"
open(f"{c}/sections/wrappers.sec", "wb").write(rec(5, wrappers))
# PARAMS alone: nkernels 1; nparams 2, total 12; {offset 0 size 8 align 8 int} {offset 8 size 4 align 4 float}
params = struct.pack("<III", 1, 2, 12) + struct.pack("<IIIB", 0, 8, 8, 1) + struct.pack("<IIIB", 8, 4, 4, 2)
open(f"{c}/sections/params.sec", "wb").write(rec(7, params))

b = open(f"{c}/bundle/two.kcb", "rb").read()
count = struct.unpack_from("<I", b, 12)[0]  # bundle.h: magic[8] version:u16 reserved:u16 count:u32
raw, stored = struct.unpack_from("<QQ", b, 16)
dst = ctypes.create_string_buffer(raw)
got = zstd.ZSTD_decompress(dst, raw, b[48:48 + stored], stored)
assert not zstd.ZSTD_isError(got) and got == raw, "the bundle does not inflate"
open(f"{c}/bundle_sums/two.content", "wb").write(struct.pack("<I", count) + dst.raw)
EOF
# entry_sig/ (fuzz_entry_sig.c: mode:u8 then its input): <entry>.signed (mode 0) each entry/ seed signed with
# the target's fixed test key FZ_SIG_KEY, so the fuzzer starts past the signature check; golden.unsigned
# (mode 0: refused, no signature); <entry>.flip (mode 1: pos:u32 xor:u8 entry, which the target signs then
# flips) for golden, golden_image and softmax_sm80.
mkdir -p $c/entry_sig
sed -n 's/^#define FZ_SIG_KEY "\(.*\)"$/\1/p' tests/fuzz/fuzz_entry_sig.c >"$tmp/sig.key"
chmod 600 "$tmp/sig.key"
python3 - "$lib" "$c" "$tmp/sig.key" <<'EOF'
import ctypes, os, struct, sys
lib, c, key = sys.argv[1:4]
kc = ctypes.CDLL(lib)
P, S = ctypes.c_void_p, ctypes.c_size_t
kc.kc_signer_load.argtypes = [ctypes.POINTER(P), ctypes.c_char_p]
kc.kc_entry_sign.argtypes = [ctypes.POINTER(P), ctypes.POINTER(S), P]
kc.malloc.argtypes, kc.malloc.restype = [S], P
signer = P()
assert kc.kc_signer_load(ctypes.byref(signer), key.encode()) == 0, "the fixed test key does not load"
for f in sorted(os.listdir(f"{c}/entry")):
    if not f.endswith(".kce"):
        continue
    data = open(f"{c}/entry/{f}", "rb").read()
    buf, n = P(kc.malloc(len(data))), S(len(data))
    ctypes.memmove(buf, data, len(data))
    assert kc.kc_entry_sign(ctypes.byref(buf), ctypes.byref(n), signer) == 0, f
    name = f[:-4]
    open(f"{c}/entry_sig/{name}.signed", "wb").write(b"\0" + ctypes.string_at(buf, n.value))
    if name in ("golden", "golden_image", "softmax_sm80"):
        open(f"{c}/entry_sig/{name}.flip", "wb").write(b"\1" + struct.pack("<IB", 77, 0x40) + data)
    if name == "golden":
        open(f"{c}/entry_sig/golden.unsigned", "wb").write(b"\0" + data)
EOF
# entry/, entry_sums/: the golden entries of the older formats (v2, v3), refused by the v4 reader, whose
# sections the entry mutator relabels v4 (mutate_entry.h).
for d in entry entry_sums; do
  install -m 0644 tests/golden/entry_v2.kce $c/$d/golden_v2.kce
  install -m 0644 tests/golden/entry_v3_old.kce $c/$d/golden_v3.kce
done
# files/ (fuzz_files.c: mode:u8 then its input): stats.real (mode 0: slot 1, n 1, a shard's stats file the
# prewarms above wrote), record.real (mode 1: the record they wrote), record.lines (every name in use),
# profile.sound and profile.lenient (mode 2), key.pub and key.private (mode 3: FZ_SIG_KEY's pair).
mkdir -p $c/files $c/toolkit
st=$(find "$KCACHE_DIR/v1" -name stats | sort | head -1)
[ -n "$st" ] || { echo "fuzz_seeds: the prewarms wrote no stats file" >&2; exit 1; }
{ printf '\x00\x01\x01\x00\x00\x00'; cat "$st"; } >$c/files/stats.real
{ printf '\x01'; cat "$KCACHE_DIR/v1/record"; } >$c/files/record.real
printf '\x01pin=nvrtc-12.4\ntoolchain.nvrtc-12.4=1\nnvrtc.file.0123456789abcdef=/usr/lib/libnvrtc.so\nsize_limit=1048576\n' \
  >$c/files/record.lines
printf '\x02kcache-profile 1\nsite fz\ninput 0 1\ninput 3 6\n' >$c/files/profile.sound
printf '\x02kcache-profile 1\nsite fz\ninput 3 6\ninput 0 1\nother\n' >$c/files/profile.lenient
{ printf '\x03'; sed -n 's/^#define FZ_SIG_PUB "\(.*\)"$/\1/p' tests/fuzz/fuzz_entry_sig.c; } >$c/files/key.pub
{ printf '\x03'; cat "$tmp/sig.key"; } >$c/files/key.private
# redis/ (fuzz_redis.c: command:u8 then the reply): get-entry (GET answered with the golden entry as a bulk
# string) and get-first-entry (the several-name GET's reply, index 0 and that entry), so the RESP mutator's
# entry mutations start from an entry.
g=tests/golden/entry_v4.kce
{ printf '\x00$%d\r\n' "$(stat -c %s $g)"; cat $g; printf '\r\n'; } >$c/redis/get-entry
{ printf '\x04*2\r\n:0\r\n$%d\r\n' "$(stat -c %s $g)"; cat $g; printf '\r\n'; } >$c/redis/get-first-entry
# toolkit/ (fuzz_toolkit.c: mode:u8 then its input): adamw.manifest (mode 0: the direct manifest the adamw prewarm wrote, a toolkit
# graph) and adamw.reads (mode 1: the toolkit_reads its entry carries). Both name this machine's toolkit.
# adamw.memo (mode 2: sig:u64 then the toolkit memo the prewarm wrote, sig its own "sig" line's).
memo=$(find "$tmp/cache-adamw" -name '*.toolkit' -type f | sort | head -1)
[ -n "$memo" ] || { echo "fuzz_seeds: the adamw prewarm wrote no toolkit memo" >&2; exit 1; }
python3 -c 'import struct, sys; t = open(sys.argv[1], "rb").read(); sig = int(t.split(b"\n")[1].split()[1], 16)
open(sys.argv[2], "wb").write(b"\2" + struct.pack("<Q", sig) + t)' "$memo" $c/toolkit/adamw.memo
man=$(find "$tmp/cache-adamw" -name 'direct-*' -type f | sort | head -1)
[ -n "$man" ] || { echo "fuzz_seeds: the adamw prewarm wrote no direct manifest" >&2; exit 1; }
{ printf '\x00'; cat "$man"; } >$c/toolkit/adamw.manifest
python3 - "$lib" "$c" <<'EOF2'
import ctypes, sys
lib, c = sys.argv[1:3]
kc = ctypes.CDLL(lib)
P, S = ctypes.c_void_p, ctypes.c_size_t
kc.kc_entry_decode.argtypes = [ctypes.POINTER(P), ctypes.c_char_p, S]
kc.kc_entry_origin.argtypes = [P, ctypes.c_char_p, ctypes.c_char_p, S]
kc.kc_entry_free.argtypes = [P]
data = open(f"{c}/entry/adamw_sm80.kce", "rb").read()
e = P()
assert kc.kc_entry_decode(ctypes.byref(e), data, len(data)) == 0, "adamw_sm80.kce does not decode"
v = ctypes.create_string_buffer(8192)
assert kc.kc_entry_origin(e, b"toolkit_reads", v, 8192) == 0, "adamw_sm80.kce carries no toolkit_reads"
open(f"{c}/toolkit/adamw.reads", "wb").write(b"\1" + v.value)
kc.kc_entry_free(e)
EOF2
echo "fuzz_seeds: wrote the seeds under $c/{entry,entry_sums,bundle,bundle_sums,sections,program,image,entry_sig,files,toolkit}/"

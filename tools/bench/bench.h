/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench.h — what kcache-bench's parts share: the run's settings, the clock, samples, scratch
 * folders, JSON numbers, and each part's results.  bench.c parses the options and runs the mode
 * asked for (a table of named runs; the full run a table of named steps); graphs.c measures per
 * graph (cold, warm, ccache, NVRTC's own cache); levels.c what the two-level layout ([Note: two
 * levels] in kcache/entry.h) costs and saves: a hit's second-level reads against one file, a
 * second static shape, and a cold prewarm's stored bytes; stores.c the site cache, the key and
 * stores at scale; floor.c the process floor; gpu.c the driver's loads; procs.c and synth.c warm
 * start as processes; contended.c a toolkit manifest written beside a neighbour (--contended-only);
 * report.c the full run's results file and plot.
 *
 * Must not: measure anything itself; it only names what the parts use.
 */
#ifndef KCACHE_BENCH_H
#define KCACHE_BENCH_H

#include <stddef.h>
#include <stdio.h>

#include "kcache.h"

/** 1 for --quick (fewer repetitions, smaller stores: CI runs it). */
extern int quick;
/** The target every measurement compiles for (--arch; sm_90 by default). */
extern const char *arch;

/** Monotonic microseconds. */
double now_us(void);

/** A sample's median and spread (p10, p90) in microseconds; n 0 when nothing was measured. */
typedef struct stat_s {
    double med, p10, p90;
    int n;
} stat_s;

/** Summarize `n` samples (sorts `v` in place). */
stat_s summarize(double *v, int n);

/** The median of `n` values (sorts `v`); NAN when n is 0. */
double median_of(double *v, int n);

/** a / b, or NAN when either is not positive. */
double ratio(double a, double b);

/** `"k": v` (null when NAN or negative), then ", " unless `last`. */
void jnum(FILE *f, const char *k, double v, int last);

/** `s` as a JSON string's contents: quotes, backslashes and control characters escaped (report.c). */
void jesc(FILE *f, const char *s);

/** `"k": {"median_us": .., "p10_us": .., "p90_us": .., "n": n}, `. */
void jstat(FILE *f, const char *k, stat_s s);

/** Microseconds as "12.3 us", "4.5 ms" or "1.23 s"; "-" when not measured. */
void fmt_us(double us, char *out, size_t cap);

/** A cache on `dir` (environment ignored); exits the benchmark on failure. */
kc_cache *open_at(const char *dir);

/** Remove a scratch folder and everything in it. */
void rm_rf(const char *dir);

/* ---- levels.c ---- */

/** A warm hit's direct floor, per graph: the graph entry read, then each image's. */
typedef struct levels_res {
    int have; /**< 0: not measured (why) */
    char why[256];
    int images;         /**< image files the graph entry refers to */
    size_t graph_bytes; /**< the graph entry file's bytes */
    size_t image_bytes; /**< its images' files' bytes, together */
    stat_s entry_read;  /**< read() + XXH3 + zstd of the graph entry file */
    stat_s image_reads; /**< the same of each image file, one after another (+ XXH3-128 of its bytes) */
    stat_s limit;       /**< both: the N-file limit (entry_read + image_reads, each sample timed whole) */
    stat_s one_file;    /**< the same bytes and checks as one file: one open, one read() */
    stat_s resolve;     /**< the library's part of a hit that is the second level's: kc_entry_resolve of
                                   the graph entry (each image's get, checks, attach) */
    stat_s check;       /**< read() + XXH3 of the same N files, nothing inflated: the floor of a
                                   compile-path hit ([Note: checked, not inflated]) */
    stat_s fetch;       /**< a lookup that hands out the bytes: the described graph's key
                                   (kc_graph_key), kc_cache_get of its graph entry, kc_entry_resolve —
                                   against `limit` (read + check + inflate) */
    stat_s hit;         /**< a compile-path hit (kc_graph_compile, a disk hit), timed in the same rounds
                                   as `check`, the two's order alternating */
} levels_res;

/**
 * Measure the limit of a hit of the graph `key` stored for `arch` in the cache `c` on `dir`:
 * `iters` samples of the N-file read and of the one-file read, interleaved.
 */
void bench_levels(kc_cache *c, const kc_graph_desc *d, const kc_key *key, const char *dir, int iters, levels_res *out);

/** A second static shape of one graph: cold (empty cache) against after a first shape. */
typedef struct shape_res {
    char name[64];
    int have; /**< 0: the graph has no symbolic dimension, or it failed (why) */
    char why[256];
    char shapes[128];          /**< "M=64 -> M=128" */
    int units;                 /**< compile units of the graph */
    int second_units_compiled; /**< units the second shape compiled (the most of any repetition; 0 expected) */
    stat_s cold;               /**< shape B compiled in an empty cache (units compiled: all) */
    stat_s second;             /**< shape B compiled after shape A (units compiled: 0) */
} shape_res;

/** Measure a second static shape of the graph spec at `spec` in scratch caches under `dir`. */
void bench_second_shape(const char *spec, const char *dir, shape_res *out);

/** A cold prewarm of a manifest for one target into an empty cache, and what it stored. */
typedef struct prewarm_res {
    int have;
    char why[256];
    double seconds;
    size_t graphs;          /**< graphs prewarmed (variants: one target) */
    long unit_uses;         /**< sum of info.units: the compiles a graph-per-graph compile would run */
    long units_compiled;    /**< sum of info.units_compiled: NVRTC programs run */
    size_t unit_records;    /**< distinct units stored ("<unit key>.unit" files) */
    size_t nimages, ngraph; /**< image files, graph entry files */
    size_t graph_bytes, image_bytes, unit_bytes; /**< stored bytes by kind */
    size_t one_file_bytes; /**< every graph entry's bytes plus its images' bytes, shared ones again */
    /* then every graph of the manifest at two more static shapes (every symbol 384, then 768) */
    int have_shapes;
    long shape_units_compiled; /**< NVRTC programs those shapes ran (0: every unit found stored) */
    size_t shape_ngraph, shape_stored, shape_one_file; /**< graph entries, stored bytes, one-file bytes after them */
} prewarm_res;

/** Prewarm `manifest` for `arch` into an empty cache on `dir` and count what it stored. */
void bench_prewarm(const char *manifest, const char *dir, prewarm_res *out);

/**
 * A second static shape of each of the `ns` graphs at `specs` (scratch caches under `root`), printed
 * as a table; *m_sh and *least the median and the least of cold / after the first shape.
 */
void bench_shapes(const char (*specs)[1024], int ns, const char *root, shape_res *sh, double *m_sh, double *least);
/** The cold prewarm's lines, and its `"prewarm": {...}` (no separator after it); a shape's JSON object. */
void print_prewarm(const prewarm_res *pw, const char *manifest);
void jshape(FILE *f, const shape_res *s);
void jprewarm(FILE *f, const prewarm_res *pw);

/* ---- synth.c, procs.c: warm start as processes (issue 21) ---- */

/**
 * Write a synthetic manifest of `n` distinct graphs for `target` into the folder `dir` (each graph
 * its own .cu and .json: elementwise, activation, reduction and row-wise kinds over f32/f16, each
 * its own constants: its own key and compile unit); its path into `manifest`.  0, or -1.
 */
int synth_manifest(const char *dir, int n, const char *target, char *manifest, size_t cap);

/**
 * Write a manifest of `n` llm.c-style bf16/fp16 graphs for `targets` (comma-separated) into the folder
 * `dir` (synth_bf16.c: each kernel includes cuda_bf16.h, cuda_fp16.h and cooperative groups, the same
 * header set and options in every file; each graph its own key and compile); its path into `manifest`.
 * 0, or -1.
 */
int synth_bf16_manifest(const char *dir, int n, const char *targets, char *manifest, size_t cap);

/**
 * The manifest of both generators (synth.c): `dir`/manifest.json listing `n` specs <prefix>000.json,
 * <prefix>001.json, … (eight to a line) for `targets` (comma-separated); its path into `manifest`.  0, or -1.
 */
int synth_write_manifest(const char *dir, const char *prefix, int n, const char *targets, char *manifest, size_t cap);

/** The programs a warm start as processes runs (full paths). */
typedef struct ws_tools {
    const char *kcache, *warmstart, *minread, *empty;
    const char *empty_libs; /**< an empty main that loads the library's shared libraries */
    int evict_rounds;       /**< rounds of runs with the entry files out of the page cache (-1: 5 quick, 10 full) */
} ws_tools;

/** One manifest's warm start: fresh processes, interleaved. */
typedef struct ws_manifest {
    char label[32];
    int have; /**< 0: not measured (why) */
    char why[512];
    int graphs, files;  /**< graphs of the manifest; entry files (graph entries and their images) read */
    int distinct;       /**< of those files, distinct ones (a file two graphs share counts once) */
    size_t bytes;       /**< those files' bytes */
    stat_s empty, help; /**< the process floor: kcache-empty, `kcache --help` */
    stat_s empty_libs;  /**< kcache-empty-libs: the floor with the library's shared libraries loaded */
    stat_s minread;     /**< kcache-minread of the entry files */
    stat_s warm;        /**< kcache-warmstart on the warm cache (every run all hits) */
    stat_s cold;        /**< kcache-warmstart into an empty cache (exit 1: it compiled) */
    int warm_bad, minread_bad, cold_bad; /**< runs left out: the wrong exit status */
    int evict_rounds;                    /**< rounds of the evicted runs (0: none) */
    int evict_dropped; /**< 1: the page cache was dropped before each evicted run; 0: fadvise of the entry files */
    stat_s ev_empty, ev_minread, ev_warm;
    char warm_line[512]; /**< what kcache-warmstart printed (its own parts) */
} ws_manifest;

/** A Python peer: cold, warm, and its imports alone. */
typedef struct ws_peer {
    int have;
    char why[512];
    stat_s cold, warm, imports;
} ws_peer;

typedef struct ws_result {
    int runs, synth_n;
    char page_cache_why[256]; /**< "" when /proc/sys/vm/drop_caches is writable */
    ws_manifest m[2];         /**< bundled, synthetic */
    int have_get;
    char get_why[512], ccache_why[512], sccache_why[512];
    stat_s one_empty, one_help, get, ccache_warm, ccache_cold, sccache_warm, sccache_cold;
    long ccache_hits, sccache_hits;
    ws_peer cuda_core, triton;
} ws_result;

/**
 * Warm start as processes: the bundled manifest (kernels `kdir`) and a synthetic one of `synth_n`
 * graphs, `runs` rounds each; then one graph against ccache, sccache and the Python peers
 * (`peers` 0: not).  Scratch folders under `root`.  Prints as it goes.
 */
void bench_warmstart(const ws_tools *t, const char *kdir, const char *root, int synth_n, int runs, int peers,
                     ws_result *out);
void print_warmstart_manifest(const ws_manifest *m);
void print_warmstart_peers(const ws_result *r);
/** (x - floor) / (ref - floor) of medians; NAN when not measured. */
double ws_over_floor(stat_s x, stat_s ref, stat_s floor);
/** `"warmstart_procs": {...}` (no separator after it). */
void json_warmstart(FILE *f, const ws_result *r);

/* ---- pch.c, pch_report.c: a cold prewarm with and without precompiled headers ---- */

/** One workload: a manifest prewarmed cold by fresh `kcache prewarm` processes, KCACHE_PCH=0 and =1 interleaved. */
typedef struct pch_work {
    char label[48];
    char targets[96]; /**< the targets prewarmed (comma-separated) */
    int have;         /**< 0: not measured (why) */
    char why[512];
    int graphs;
    long variants, units;   /**< of one run (graphs x targets; their compile units) */
    stat_s run[2];          /**< wall time of a whole `kcache prewarm` process: [0] PCH off, [1] on */
    double ratio;           /**< off / on of the medians (NAN: not measured) */
    int bad[2];             /**< runs left out: exit status not 0, or a variant failed */
    int not_cold[2];        /**< runs that hit something (a graph or a unit): not all compiles */
    int reps_compared;      /**< pairs whose two caches were compared (pch_same.c) */
    int files, same_bytes;  /**< graph entries and unit records of the last pair (by name); byte-identical */
    int same_but_times;     /**< identical in every section but the time stamps (META's, ORIGIN's) */
    int same_but_refs;      /**< identical but those and the ids of the images they refer to */
    int differ, unmatched;  /**< all pairs: files that differ; names in one cache only */
    int images;             /**< images of the last pair (matched by content: they are named by their bytes) */
    int img_same_bytes;     /**< byte-identical */
    int img_same_masked;    /**< identical once NVRTC's per-process internal names are masked */
    int img_differ;         /**< all pairs: images with no match */
    int img_not_comparable; /**< all pairs: images with NVRTC's per-process names whose process ids differ in
                                 length (one 4 digits, the other 5): no mask makes their layouts comparable */
    char first_diff[256];   /**< the first file that differed or was unmatched */
    int tmp_files_peak[2];  /**< files in the process's TMPDIR at most, while it ran (PCH files) */
    long long tmp_bytes_peak[2];
    int tmp_left[2];        /**< files left in its TMPDIR after it exited (all runs, the most) */
    int nvrtc_auto_dirs[2]; /**< NVRTC automatic-PCH folders (__nvrtc_auto_pch_*) seen in its TMPDIR */
    int pch_log[2][4];      /**< the last run's KCACHE_LOG=compile: PCH files created, uses, refused or not
                                 created, "precompiled headers on" said (0 or 1) */
} pch_work;

typedef struct pch_result {
    int runs, jobs; /**< repetitions of each (off, on) pair; the prewarm's threads (its default: cores) */
    double goal;    /**< 3: off / on at least */
    pch_work w[3];  /**< bundled toolkit-header graphs, generated x targets, ten generated x one target */
} pch_result;

/** What a PCH comparison runs: the tool, the generated manifest's size, its targets, the single target. */
typedef struct pch_plan {
    const char *kcache, *kdir, *root;
    int graphs, single_graphs, runs;
    const char *targets, *single_target;
} pch_plan;

/** Compare the caches on `off` and `on` (entry files; images by content) into w (pch_same.c). */
void pch_compare_caches(const char *off, const char *on, pch_work *w);
/** Measure the three workloads of `p` (prints as it goes) into *out; 0 when all were measured, else 1. */
int bench_pch(const pch_plan *p, pch_result *out);
/** One workload's table. */
void print_pch_work(const pch_work *w, double goal);
/** `"pch": {...}` (no separator after it). */
void json_pch(FILE *f, const pch_result *r);

/* ---- graphs.c: per graph ---- */

/** One graph's figures. */
typedef struct gres {
    char name[64];
    stat_s cold, warm, ccache_cold, ccache_warm, nvrtc_cache, warm_key, warm_lookup;
    int units;     /* compile units (NVRTC programs) of the graph */
    levels_res lv; /* the limit of its hit: graph entry + image files, and as one file */
} gres;

/** Every graph's figures, their ratios and medians over graphs. */
typedef struct graphs_res {
    int ns;
    gres g[32];
    double r_cw[32], r_wl[32], r_ccw[32], r_nv[32], r_rd[32], r_lib[32], r_wc[32], r_fl[32];
    double m_cw, m_wl, m_ccw, m_nv, m_lv[4], m_in[2];
} graphs_res;

/**
 * Measure and print the graphs at `specs` (scratch caches under `root`; `self`: this program, run
 * again as a child for NVRTC's own cache; `largest`: the largest store, named in the header).
 */
void bench_graphs(const char *self, const char (*specs)[1024], int ns, const char *root, int largest, graphs_res *r);
/** --hits-only: the in-process hits over their floors of the graphs at `specs`, `iters` rounds; 0, or 1. */
int bench_hits(const char (*specs)[1024], int ns, const char *root, int iters);
/** The child's part of NVRTC's own cache (--measure-nvrtc-cache SPEC): prints the best repeat; 0, or 1. */
int bench_nvrtc_child(const char *spec);
/** The one-file layout's warm hit, estimated from the reads and from the library's part (see graphs.c). */
double warm_one_file_reads(const gres *g);
double warm_one_file_lib(const gres *g);

/* ---- stores.c: site cache, key, scale, import ---- */

typedef struct stores_res {
    double site[3];          /**< ns per site-cache hit with 1, 8, 64 entries */
    double k_small, k_large; /**< key MB/s on 4 KB and 1 MB sources */
    int scale_n[3];
    stat_s sc[3]; /**< a lookup at each scale */
    double gc_ms, scale_ratio;
    stat_s imp; /**< an import of 300 entries, ms */
} stores_res;

/** Measure and print the site cache, the key and stores up to `largest` entries, under `root`. */
void bench_stores(const char *root, int largest, stores_res *out);

/* ---- floor.c: the process floor ---- */

/** Run argv with stdout and stderr to /dev/null: wall microseconds from fork to exit 0, or -1. */
double bench_run_quiet(char *const argv[]);

typedef struct floor_res {
    int have;
    char why[512], name[64];
    stat_s help, get;
} floor_res;

/** Fresh processes of a warm `kcache get SPEC` against `kcache --help` (tool `kcache`, cache on `dir`). */
void bench_process_floor(const char *kcache, const char *spec, const char *dir, floor_res *out);
void print_process_floor(const floor_res *pf);
/** `"process_floor": {...}` or null (no separator after it). */
void jfloor(FILE *f, const floor_res *pf);

/* ---- gpu.c ---- */

typedef struct gpu_res {
    int have;
    char why[256];
    double hit_load_us, bare_load_us, hand_us, ptx_load_us, cubin_load_us;
    double key_us, lookup_us, load_us;          /* the hit's own split (kc_graph_info), medians */
    double fetch_us, ptx_fetch_us, ptx_hand_us; /* by hand: the kernels' fetch (cubin, PTX), PTX's whole */
} gpu_res;

/** A hit with the driver's load against the images by hand, on device 0 (cache on `dir`). */
void bench_gpu(const char *spec, const char *dir, gpu_res *out);
void print_gpu(const gpu_res *gp, const char *name);
/** --load-calls: the driver calls of each graph's load (`specs`, `ns` of them), counted on the driver double,
 *  with a scratch cache under `root`.  0, or 1 when the double is not there or a graph failed. */
int bench_load_calls(const char (*specs)[1024], int ns, const char *root);
/** --load-calls, first of all (before anything reads kcache's settings): make the driver double kcache's driver,
 *  with one device of --arch's capability.  0, or -1 (said on stderr). */
int bench_double_open(void);

/* ---- report.c: the full run's results ---- */

/** Everything the full run measured, in the order it printed it. */
typedef struct full_run {
    char root[4096];
    char specs[32][1024];
    graphs_res gr;
    shape_res sh[32];
    double m_sh, min_sh;
    prewarm_res pw;
    floor_res pf;
    ws_result ws;
    stores_res st;
    gpu_res gp;
} full_run;

/** Write the full run's results file at `path` and say so; 0, or -1 when it cannot be opened. */
int write_json(const full_run *r, const char *path);
/** Plot cold, warm and the limits per graph into `path` with gnuplot (a data file under r->root). */
void write_plot(const full_run *r, const char *path);

/* ---- contended.c: a cold compile beside a neighbour reading the toolkit (--contended-only) ---- */

enum { CT_PASSES = 3 }; /* alone; beside the neighbour, filtered; beside it, unfiltered */

typedef struct ct_plan {
    const char *self, *kcache, *kdir, *root; /* this program; the tool; the graphs; a scratch folder */
    int runs;                                /* fresh processes of a warm `kcache get` per cache */
} ct_plan;

typedef struct ct_pass {
    char dir[4200];               /**< its cache */
    double cold_us;               /**< the cold compile's process, wall */
    int files, dirs;              /**< what its toolkit direct manifest lists */
    unsigned long long files_sum; /**< XXH3 of its file lines, in order: the same files with the same signatures */
    long neighbour_files;         /**< files the neighbour read (passes 1 and 2) */
    char root[4200];              /**< the tree it names */
    stat_s warm;                  /**< a warm `kcache get` process of its cache */
    char why[160];                /**< set when the pass was not measured */
} ct_pass;

typedef struct ct_result {
    char spec[4200];
    int fanotify; /* whether fanotify can mark the tree here */
    ct_pass pass[CT_PASSES];
    int have;
} ct_result;

/** The passes of `p` into r; 0, or 1 when one was not measured (r says why). */
int bench_contended(const ct_plan *p, ct_result *r);
/** --contended-child DIR: the cold compile of `spec` into `dir`, the filter off when `unfiltered`; 0 or 1. */
int bench_contended_child(const char *dir, const char *spec, int unfiltered);
void print_contended(const ct_plan *p, const ct_result *r);
/** `"contended": {...}` (no separator after it). */
void json_contended(FILE *f, const ct_result *r);
/** --contended-only: the passes, printed, `json` written when not NULL, p->root removed; 0, or 1. */
int bench_contended_mode(const ct_plan *p, const char *json);

#endif

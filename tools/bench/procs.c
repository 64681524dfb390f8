/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procs.c — warm start as a user feels it (issue 21): fresh processes, each one a whole program
 * that starts, opens the cache and gets what it needs, against other fresh processes.
 *
 * The one idea: every figure is a fresh process's wall time from fork to exit, set against
 * other fresh processes measured in the same rounds (interleaved, the order rotated each round),
 * so the machine's drift hits all alike and a ratio says what the programs do.
 *   - Per manifest (the bundled one; a synthetic one of N graphs, synth.c): kcache-warmstart
 *     (every graph of the manifest got for the target, compile-only, from a warm cache: it exits 1
 *     if anything compiled, and every run is checked) against the process floor (an empty main,
 *     kcache-empty; `kcache --help`) and against kcache-minread (the same entry files opened,
 *     read, checked and decompressed by a program linked to zstd and xxhash only; minread.c says
 *     what it does not do).  Cold: kcache-warmstart into an empty cache (NVRTC compiles all).
 *     With a cold page cache when /proc/sys/vm/drop_caches is writable; otherwise said so, and
 *     the cache's own files evicted with posix_fadvise(DONTNEED) before each run instead (a
 *     partial substitute: binaries, libraries, specs and sources stay cached).
 *   - One graph, process against process: a warm `kcache get SPEC --arch T` against a warm
 *     `ccache nvcc -cubin` and a warm `sccache nvcc -cubin` of the spec's source (their hits
 *     counted from their own statistics), and the Python runtimes' caches, each its own
 *     process (tools/bench/peers/): cuda.core's FileStreamProgramCache (an NVRTC compile of
 *     softmax.cu) and Triton's cache (a Triton softmax for GPUTarget("cuda", 90, 32)), cold
 *     (an empty cache folder each run) and warm, with their imports alone as their own floor.
 *
 * What it prints and writes is procs_report.c's.
 *
 * Must not: fail the benchmark when a peer is missing or fails (it says "not measured: why"),
 * or count a run that was not what it claims (a warm start that compiled, a peer that missed).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#ifndef KC_PEERS_DIR
#define KC_PEERS_DIR "tools/bench/peers"
#endif
#ifndef KC_BENCH_PYTHON
#define KC_BENCH_PYTHON ".venv-bench/bin/python"
#endif

/* ---- running a fresh process ---- */

/* Run argv (a path, or a name looked up in PATH) with `env` ("K=V" strings, NULL-ended; may be NULL) added,
 * stdout and stderr to /dev/null: wall microseconds from fork to exit; *status its exit status (-1: killed). */
static double run_proc(char *const argv[], char *const env[], int *status) {
    double t0 = now_us();
    pid_t p = fork();
    if (p == 0) {
        for (int i = 0; env && env[i]; i++) putenv(env[i]);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 1), dup2(null, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p) {
        *status = -1;
        return -1;
    }
    double t = now_us() - t0;
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return t;
}

/* The first line a command prints (stderr too), into line; "" when none. */
static void first_line(const char *cmd, char *line, size_t cap) {
    line[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p) return;
    if (!fgets(line, (int)cap, p)) line[0] = 0;
    char rest[512];
    while (fgets(rest, sizeof rest, p)) {}
    pclose(p);
    line[strcspn(line, "\n")] = 0;
}

/* The sum of the integers after each of the names in `keys` (lines "<name><spaces or tab><n>") in cmd's output. */
static long stat_sum(const char *cmd, const char *const keys[]) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[512];
    long sum = 0;
    while (fgets(line, sizeof line, p))
        for (int k = 0; keys[k]; k++) {
            size_t l = strlen(keys[k]);
            if (!strncmp(line, keys[k], l) && (line[l] == ' ' || line[l] == '\t')) sum += strtol(line + l, NULL, 10);
        }
    pclose(p);
    return sum;
}

/* `name` found in PATH, into out; 0, or -1. */
static int find_exe(const char *name, char *out, size_t cap) {
    const char *path = getenv("PATH");
    char extra[] = "/usr/local/cuda/bin";
    for (int pass = 0; pass < 2; pass++) {
        const char *p = pass ? extra : path ? path : "";
        while (*p) {
            size_t l = strcspn(p, ":");
            snprintf(out, cap, "%.*s/%s", (int)l, p, name);
            if (l && access(out, X_OK) == 0) return 0;
            p += l + (p[l] == ':');
        }
    }
    return -1;
}

/* ---- samples ---- */

typedef struct samples {
    double *v;
    int n, bad; /* bad: runs whose exit status was not the one wanted */
} samples;

static void take(samples *s, double t, int status, int want) {
    if (t < 0 || status != want) s->bad++;
    else s->v[s->n++] = t;
}

static stat_s done(samples *s) {
    stat_s r = summarize(s->v, s->n);
    free(s->v);
    s->v = NULL;
    return r;
}

static samples make(int n) { return (samples){calloc((size_t)n + 1, sizeof(double)), 0, 0}; }

/* ---- the entry files a warm start reads ---- */

static void object_path(const char *dir, const kc_key *key, const char *variant, char *out, size_t cap) {
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(key, hex);
    snprintf(out, cap, "%s/v1/%.2s/%s.%s.kce", dir, hex, hex, variant);
}

/*
 * Write the paths of every graph entry of `manifest` for `arch` in the cache on `dir`, and of
 * each image it refers to, into `list` (one a line, the order a warm start reads them).  Counts
 * files and bytes; 0, or -1 with why.
 */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int write_entry_list(const char *manifest, const char *dir, const char *list, int *files, int *distinct,
                            size_t *bytes, char *why, size_t wcap) {
    kc_manifest *m;
    if (kc_manifest_load(&m, manifest) != KC_OK) {
        snprintf(why, wcap, "%s", kc_error_last()->message);
        return -1;
    }
    kc_cache *c = open_at(dir);
    FILE *f = fopen(list, "w");
    int rc = f ? 0 : -1;
    *files = 0, *distinct = 0, *bytes = 0;
    char **seen = NULL;
    size_t nseen = 0, cap = 0;
    for (size_t i = 0; !rc && i < kc_manifest_graph_count(m); i++) {
        kc_graph_desc *d;
        kc_key key;
        kc_entry *e;
        kc_image_ref *refs = NULL;
        size_t nref = 0;
        if (kc_graph_desc_load(&d, kc_manifest_graph(m, i)) != KC_OK) {
            snprintf(why, wcap, "%s: %s", kc_manifest_graph(m, i), kc_error_last()->message);
            rc = -1;
            break;
        }
        int krc = kc_graph_key(d, &key, NULL);
        kc_graph_desc_free(d);
        if (krc != KC_OK || kc_cache_peek(c, &key, arch, &e) != KC_OK) {
            snprintf(why, wcap, "%s: no graph entry for %s", kc_manifest_graph(m, i), arch);
            rc = -1;
            break;
        }
        krc = kc_entry_images(e, &refs, &nref);
        kc_entry_free(e);
        if (krc != KC_OK) {
            snprintf(why, wcap, "%s: %s", kc_manifest_graph(m, i), kc_error_last()->message);
            rc = -1;
            break;
        }
        char p[4600];
        struct stat st;
        for (size_t k = 0; k <= nref; k++) {
            if (k == 0) object_path(dir, &key, arch, p, sizeof p);
            else object_path(dir, &refs[k - 1].id, KC_VARIANT_IMAGE, p, sizeof p);
            if (stat(p, &st) != 0) {
                snprintf(why, wcap, "%s: %s", p, strerror(errno));
                rc = -1;
                break;
            }
            fprintf(f, "%s\n", p);
            (*files)++, *bytes += (size_t)st.st_size;
            if (nseen == cap) {
                char **g = realloc(seen, (cap = cap ? 2 * cap : 64) * sizeof *seen);
                if (!g) break;
                seen = g;
            }
            seen[nseen++] = strdup(p);
        }
        free(refs);
    }
    if (f && fclose(f)) rc = -1;
    qsort(seen, nseen, sizeof *seen,
          cmp_str); /* distinct files: a graph entry or image that two graphs share counts once */
    for (size_t i = 0; i < nseen; i++) *distinct += seen[i] && (i == 0 || !seen[i - 1] || strcmp(seen[i], seen[i - 1]));
    for (size_t i = 0; i < nseen; i++) free(seen[i]);
    free(seen);
    kc_cache_close(c);
    kc_manifest_free(m);
    return rc;
}

/* posix_fadvise(DONTNEED) of every file in `list` (the partial substitute for a cold page cache). */
static void evict_list(const char *list) {
    FILE *f = fopen(list, "r");
    char p[4600];
    while (f && fgets(p, sizeof p, f)) {
        p[strcspn(p, "\n")] = 0;
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), close(fd);
    }
    if (f) fclose(f);
}

/* Drop the whole page cache (1 when done; 0 when the machine does not allow it). */
static int drop_caches(void) {
    sync();
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    int ok = write(fd, "3", 1) == 1;
    close(fd);
    return ok;
}

/* ---- one manifest ---- */

static void bench_manifest(const ws_tools *t, const char *label, const char *manifest, const char *dir, int runs,
                           int ncold, ws_manifest *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->label, sizeof out->label, "%s", label);
    char cdir[4200], list[4200];
    snprintf(cdir, sizeof cdir, "%s/cache", dir);
    snprintf(list, sizeof list, "%s/entries.txt", dir);
    char *warm[] = {(char *)t->warmstart, (char *)manifest, "--arch", (char *)arch, "--cache-dir", cdir, NULL};
    int st;
    /* cold: the first run fills `cdir` (and exits 1: it compiled); the others each an empty cache of their own */
    samples cold = make(ncold);
    for (int i = 0; i < ncold; i++) {
        char d[4300];
        if (i) snprintf(d, sizeof d, "%s/cold%d", dir, i);
        char *cw[] = {(char *)t->warmstart, (char *)manifest, "--arch", (char *)arch,
                      "--cache-dir",        i ? d : cdir,     NULL};
        double us = run_proc(cw, NULL, &st);
        take(&cold, us, st, 1);
        if (i) rm_rf(d);
    }
    out->cold = done(&cold);
    out->cold_bad = cold.bad;
    if (run_proc(warm, NULL, &st) < 0 || st != 0) {
        snprintf(out->why, sizeof out->why,
                 "kcache-warmstart %s --arch %s on the filled cache exited %d (not all hits)", manifest, arch, st);
        return;
    }
    char line[1024], cmd[9000];
    snprintf(cmd, sizeof cmd, "'%s' '%s' --arch %s --cache-dir '%s' 2>&1", t->warmstart, manifest, arch, cdir);
    first_line(cmd, line, sizeof line);
    snprintf(out->warm_line, sizeof out->warm_line, "%s", line);
    if (write_entry_list(manifest, cdir, list, &out->files, &out->distinct, &out->bytes, out->why, sizeof out->why))
        return;
    char *minread[] = {(char *)t->minread, list, NULL};
    if (run_proc(minread, NULL, &st) < 0 || st != 0) {
        snprintf(out->why, sizeof out->why, "kcache-minread %s exited %d", list, st);
        return;
    }
    kc_manifest *m;
    if (kc_manifest_load(&m, manifest) == KC_OK) {
        out->graphs = (int)kc_manifest_graph_count(m);
        kc_manifest_free(m);
    }
    char *empty[] = {(char *)t->empty, NULL};
    char *help[] = {(char *)t->kcache, "--help", NULL};
    char *empty_libs[] = {(char *)t->empty_libs, NULL};
    char **progs[5] = {empty, help, warm, minread, empty_libs};
    for (int r = 0; r < 3; r++) /* warm the page cache */
        for (int k = 0; k < 5; k++) run_proc(progs[k], NULL, &st);
    samples s[5] = {make(runs), make(runs), make(runs), make(runs), make(runs)};
    for (int r = 0; r < runs; r++)
        for (int j = 0; j < 5; j++) {
            int k = (r + j) % 5; /* rotated: no program always follows the same one */
            double us = run_proc(progs[k], NULL, &st);
            take(&s[k], us, st, 0);
        }
    out->empty = done(&s[0]), out->help = done(&s[1]), out->warm = done(&s[2]), out->minread = done(&s[3]);
    out->empty_libs = done(&s[4]);
    out->warm_bad = s[2].bad, out->minread_bad = s[3].bad;
    out->have = out->warm.n > 0 && out->minread.n > 0 && out->empty.n > 0;
    if (!out->have) snprintf(out->why, sizeof out->why, "the runs failed");
    /* the cache's files out of the page cache before each run: whole page cache when allowed, else fadvise */
    int nev = t->evict_rounds >= 0 ? t->evict_rounds : quick ? 5 : 10; /* few: a dropped page cache slows the machine */
    out->evict_rounds = nev;
    out->evict_dropped = nev > 0 && drop_caches();
    samples e[3] = {make(nev), make(nev), make(nev)};
    char **eprogs[3] = {empty, warm, minread};
    for (int r = 0; r < nev; r++)
        for (int j = 0; j < 3; j++) {
            int k = (r + j) % 3;
            if (!(out->evict_dropped && drop_caches())) evict_list(list);
            double us = run_proc(eprogs[k], NULL, &st);
            take(&e[k], us, st, 0);
        }
    out->ev_empty = done(&e[0]), out->ev_warm = done(&e[1]), out->ev_minread = done(&e[2]);
}

/* ---- one graph, process against process ---- */

/* One graph's programs, process against process: paths, argument vectors and environments. */
typedef struct one_graph {
    char spec[4200], src[4200], inc[4300], cdir[4200], ccdir[4300], scdir[4300], obj[4300], archflag[64], port[64];
    char nvcc[4096], ccache[4096], sccache[4096];
    char *get[8], *cc[10], *sc[10], *ccenv[3], *scenv[5];
    int have_cc, have_sc;
} one_graph;

static void one_graph_init(one_graph *o, const ws_tools *t, const char *kdir, const char *dir) {
    snprintf(o->spec, sizeof o->spec, "%s/softmax.json", kdir);
    snprintf(o->src, sizeof o->src, "%s/softmax.cu", kdir);
    snprintf(o->inc, sizeof o->inc, "-I%s", kdir);
    snprintf(o->cdir, sizeof o->cdir, "%s/kc-one", dir);
    snprintf(o->ccdir, sizeof o->ccdir, "CCACHE_DIR=%s/ccache", dir);
    snprintf(o->scdir, sizeof o->scdir, "SCCACHE_DIR=%s/sccache", dir);
    snprintf(o->obj, sizeof o->obj, "%s/softmax.cubin", dir);
    snprintf(o->archflag, sizeof o->archflag, "-arch=%s", arch);
    snprintf(o->port, sizeof o->port, "SCCACHE_SERVER_PORT=%d", 20000 + (int)(getpid() % 20000));
    char *get[] = {(char *)t->kcache, "--cache-dir", o->cdir, "get", o->spec, "--arch", (char *)arch, NULL};
    char *cc[] = {o->ccache, o->nvcc, "-c", "-cubin", o->archflag, o->inc, "-o", o->obj, o->src, NULL};
    char *sc[] = {o->sccache, o->nvcc, "-c", "-cubin", o->archflag, o->inc, "-o", o->obj, o->src, NULL};
    char *ccenv[] = {o->ccdir, "CCACHE_NOHASHDIR=1", NULL};
    /* sccache: its own server, on a port of its own, its own folder */
    char *scenv[] = {o->scdir, o->port, "SCCACHE_IDLE_TIMEOUT=0", "SCCACHE_LOG=", NULL};
    memcpy(o->get, get, sizeof get), memcpy(o->cc, cc, sizeof cc), memcpy(o->sc, sc, sizeof sc);
    memcpy(o->ccenv, ccenv, sizeof ccenv), memcpy(o->scenv, scenv, sizeof scenv);
}

/* ccache's and sccache's cold runs (sccache's server started first); each one's why when it cannot run. */
static void one_graph_peers_cold(one_graph *o, ws_result *out) {
    int st;
    int have_nvcc = find_exe("nvcc", o->nvcc, sizeof o->nvcc) == 0;
    o->have_cc = have_nvcc && find_exe("ccache", o->ccache, sizeof o->ccache) == 0;
    if (!have_nvcc) snprintf(out->ccache_why, sizeof out->ccache_why, "no nvcc in PATH or /usr/local/cuda/bin");
    else if (!o->have_cc)
        snprintf(out->ccache_why, sizeof out->ccache_why, "no ccache in PATH (tools/deps.sh --bench)");
    if (o->have_cc) {
        double us = run_proc(o->cc, o->ccenv, &st);
        out->ccache_cold = (stat_s){us, us, us, st == 0};
        if (st) o->have_cc = 0, snprintf(out->ccache_why, sizeof out->ccache_why, "ccache nvcc -cubin exited %d", st);
    }
    char *sc_start[] = {o->sccache, "--start-server", NULL};
    o->have_sc = have_nvcc && find_exe("sccache", o->sccache, sizeof o->sccache) == 0;
    if (have_nvcc && !o->have_sc)
        snprintf(out->sccache_why, sizeof out->sccache_why, "no sccache in PATH (tools/deps.sh --bench)");
    else if (!have_nvcc) snprintf(out->sccache_why, sizeof out->sccache_why, "no nvcc");
    if (o->have_sc) {
        run_proc(sc_start, o->scenv, &st);
        if (st)
            o->have_sc = 0, snprintf(out->sccache_why, sizeof out->sccache_why, "sccache --start-server exited %d", st);
    }
    if (o->have_sc) {
        double us = run_proc(o->sc, o->scenv, &st);
        out->sccache_cold = (stat_s){us, us, us, st == 0};
        if (st)
            o->have_sc = 0, snprintf(out->sccache_why, sizeof out->sccache_why, "sccache nvcc -cubin exited %d", st);
    }
}

/* The warm runs, interleaved: empty main, `kcache --help`, `kcache get`, ccache, sccache (fewer). */
static void one_graph_warm(const one_graph *o, const ws_tools *t, int runs, ws_result *out) {
    int st;
    char *help[] = {(char *)t->kcache, "--help", NULL}, *empty[] = {(char *)t->empty, NULL};
    int nsc = quick ? 5 : 30;
    samples s[5] = {make(runs), make(runs), make(runs), make(runs), make(nsc)};
    for (int r = 0; r < 2; r++) run_proc(o->get, NULL, &st), run_proc(help, NULL, &st), run_proc(empty, NULL, &st);
    char **progs[5] = {empty, help, (char **)o->get, (char **)o->cc, (char **)o->sc};
    char **envs[5] = {NULL, NULL, NULL, (char **)o->ccenv, (char **)o->scenv};
    int want[5] = {1, 1, 1, o->have_cc, o->have_sc};
    for (int r = 0; r < runs; r++)
        for (int j = 0; j < 5; j++) {
            int k = (r + j) % 5;
            if (!want[k] || (k == 4 && r >= nsc)) continue;
            double us = run_proc(progs[k], envs[k], &st);
            take(&s[k], us, st, 0);
        }
    out->one_empty = done(&s[0]), out->one_help = done(&s[1]), out->get = done(&s[2]);
    out->have_get = out->get.n > 0;
    out->ccache_warm = done(&s[3]), out->sccache_warm = done(&s[4]);
}

/* ccache's and sccache's own counts of hits: a warm run they did not count as a hit voids their figure. */
static void one_graph_hits(const one_graph *o, ws_result *out) {
    int st;
    if (o->have_cc) {
        char cmdl[4600];
        snprintf(cmdl, sizeof cmdl, "%s '%s' --print-stats 2>/dev/null", o->ccdir, o->ccache);
        const char *keys[] = {"direct_cache_hit", "preprocessed_cache_hit", NULL};
        out->ccache_hits = stat_sum(cmdl, keys);
        if (out->ccache_hits < out->ccache_warm.n) {
            snprintf(out->ccache_why, sizeof out->ccache_why, "ccache counted %ld hits for %d warm runs",
                     out->ccache_hits, out->ccache_warm.n);
            out->ccache_warm.n = 0;
        }
    }
    if (o->have_sc) {
        char cmdl[4800];
        snprintf(cmdl, sizeof cmdl, "%s %s '%s' --show-stats 2>/dev/null", o->scdir, o->port, o->sccache);
        const char *keys[] = {"Cache hits", NULL};
        char *sc_stop[] = {(char *)o->sccache, "--stop-server", NULL};
        out->sccache_hits = stat_sum(cmdl, keys);
        run_proc(sc_stop, o->scenv, &st);
        if (out->sccache_hits < out->sccache_warm.n) {
            snprintf(out->sccache_why, sizeof out->sccache_why, "sccache counted %ld hits for %d warm runs",
                     out->sccache_hits, out->sccache_warm.n);
            out->sccache_warm.n = 0;
        }
    }
    if (!out->ccache_warm.n && !out->ccache_why[0])
        snprintf(out->ccache_why, sizeof out->ccache_why, "the runs failed");
    if (!out->sccache_warm.n && !out->sccache_why[0])
        snprintf(out->sccache_why, sizeof out->sccache_why, "the runs failed");
}

static void bench_one_graph(const ws_tools *t, const char *kdir, const char *dir, int runs, ws_result *out) {
    one_graph *o = calloc(1, sizeof *o);
    if (!o) return;
    one_graph_init(o, t, kdir, dir);
    int st;
    char line[1024], cmd[9000];
    run_proc(o->get, NULL, &st); /* the one compile */
    snprintf(cmd, sizeof cmd, "'%s' --cache-dir '%s' get '%s' --arch %s --json 2>&1", t->kcache, o->cdir, o->spec,
             arch);
    first_line(cmd, line, sizeof line);
    if (!strstr(line, "\"disk\"")) {
        snprintf(out->get_why, sizeof out->get_why, "the second `kcache get` was no disk hit: %.300s", line);
        free(o);
        return;
    }
    one_graph_peers_cold(o, out);
    one_graph_warm(o, t, runs, out);
    one_graph_hits(o, out);
    free(o);
}

/* A Python peer (cold: an empty cache folder each run; warm; the imports alone), interleaved. */
static void bench_py_peer(const char *python, const char *script, int triton, const char *kdir, const char *dir,
                          ws_peer *p) {
    int st;
    char warmdir[4200], colddir[4200], envw[4300], envc[4300], out_line[1024], cmd[9000];
    snprintf(warmdir, sizeof warmdir, "%s/%s-warm", dir, triton ? "triton" : "cuda_core");
    snprintf(colddir, sizeof colddir, "%s/%s-cold", dir, triton ? "triton" : "cuda_core");
    snprintf(envw, sizeof envw, "TRITON_CACHE_DIR=%s", warmdir);
    snprintf(envc, sizeof envc, "TRITON_CACHE_DIR=%s", colddir);
    char archcc[16];
    snprintf(archcc, sizeof archcc, "%s", arch + (strncmp(arch, "sm_", 3) ? 0 : 3));
    char *w[] = {(char *)python,
                 (char *)script,
                 triton ? "--cc" : "--cache-dir",
                 triton ? archcc : warmdir,
                 triton ? NULL : "--kernels",
                 (char *)kdir,
                 "--arch",
                 (char *)arch,
                 NULL};
    char *c[] = {(char *)python,
                 (char *)script,
                 triton ? "--cc" : "--cache-dir",
                 triton ? archcc : colddir,
                 triton ? NULL : "--kernels",
                 (char *)kdir,
                 "--arch",
                 (char *)arch,
                 NULL};
    char *imp[] = {(char *)python, (char *)script, "--cache-dir", colddir, "--import-only", NULL};
    if (triton) imp[2] = "--import-only", imp[3] = NULL;
    char *ew[] = {envw, NULL}, *ec[] = {envc, NULL};
    /* the first run fills the warm folder and must say miss; the second must say hit */
    const char *what[2] = {"miss", "hit"};
    for (int i = 0; i < 2; i++) {
        if (triton)
            snprintf(cmd, sizeof cmd, "%s '%s' '%s' --cc %s 2>&1 | grep -E '^(hit|miss) '; true", envw, python, script,
                     archcc);
        else
            snprintf(cmd, sizeof cmd,
                     "'%s' '%s' --cache-dir '%s' --kernels '%s' --arch %s 2>&1 | grep -E '^(hit|miss) '; true", python,
                     script, warmdir, kdir, arch);
        first_line(cmd, out_line, sizeof out_line);
        if (strncmp(out_line, what[i], strlen(what[i]))) {
            snprintf(p->why, sizeof p->why, "run %d printed \"%.200s\", not %s", i + 1, out_line, what[i]);
            return;
        }
    }
    int n = quick ? 3 : 10;
    samples s[3] = {make(n), make(n), make(n)};
    for (int r = 0; r < n; r++)
        for (int j = 0; j < 3; j++) {
            int k = (r + j) % 3;
            double us;
            if (k == 0)
                rm_rf(colddir), mkdir(colddir, 0700), us = run_proc(c, triton ? ec : NULL, &st), take(&s[0], us, st, 0);
            if (k == 1) us = run_proc(w, triton ? ew : NULL, &st), take(&s[1], us, st, 0);
            if (k == 2) us = run_proc(imp, triton ? ec : NULL, &st), take(&s[2], us, st, 0);
        }
    p->cold = done(&s[0]), p->warm = done(&s[1]), p->imports = done(&s[2]);
    p->have = p->cold.n && p->warm.n && p->imports.n;
    if (!p->have) snprintf(p->why, sizeof p->why, "the runs failed");
}

void bench_warmstart(const ws_tools *t, const char *kdir, const char *root, int synth_n, int runs, int peers,
                     ws_result *out) {
    memset(out, 0, sizeof *out);
    out->runs = runs, out->synth_n = synth_n;
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        snprintf(out->page_cache_why, sizeof out->page_cache_why, "/proc/sys/vm/drop_caches is not writable (%s)",
                 strerror(errno));
    else close(fd);
    const char *tools[4] = {t->warmstart, t->minread, t->empty, t->empty_libs};
    for (int i = 0; i < 4; i++)
        if (access(tools[i], X_OK)) {
            snprintf(out->m[0].why, sizeof out->m[0].why, "no %s (build tools/bench)", tools[i]);
            snprintf(out->m[1].why, sizeof out->m[1].why, "no %s (build tools/bench)", tools[i]);
            return;
        }
    if (access(t->kcache, X_OK)) {
        snprintf(out->m[0].why, sizeof out->m[0].why, "no kcache tool at %s (--kcache PATH)", t->kcache);
        snprintf(out->m[1].why, sizeof out->m[1].why, "%s", out->m[0].why);
        return;
    }
    char d[4200], manifest[4200];
    /* the bundled manifest */
    snprintf(d, sizeof d, "%s/ws-bundled", root);
    mkdir(d, 0700);
    snprintf(manifest, sizeof manifest, "%s/manifest.json", kdir);
    bench_manifest(t, "bundled", manifest, d, runs, quick ? 1 : 3, &out->m[0]);
    rm_rf(d);
    print_warmstart_manifest(&out->m[0]);
    /* the synthetic one: written, prewarmed by its first (cold) warm start, then as the bundled */
    snprintf(d, sizeof d, "%s/ws-synth", root);
    char sdir[4300], label[32];
    snprintf(sdir, sizeof sdir, "%s/specs", d);
    snprintf(label, sizeof label, "synthetic-%d", synth_n);
    mkdir(d, 0700);
    mkdir(sdir, 0700);
    if (synth_manifest(sdir, synth_n, arch, manifest, sizeof manifest)) {
        snprintf(out->m[1].label, sizeof out->m[1].label, "%s", label);
        snprintf(out->m[1].why, sizeof out->m[1].why, "could not write the synthetic manifest in %s", sdir);
    } else {
        printf("(prewarming %d synthetic graphs for %s: the cold run)\n", synth_n, arch);
        fflush(stdout);
        bench_manifest(t, label, manifest, d, runs, 1, &out->m[1]);
    }
    rm_rf(d);
    print_warmstart_manifest(&out->m[1]);
    if (!peers) {
        snprintf(out->get_why, sizeof out->get_why, "--no-peers");
        return;
    }
    snprintf(d, sizeof d, "%s/ws-peers", root);
    mkdir(d, 0700);
    bench_one_graph(t, kdir, d, runs, out);
    const char *py = getenv("KCACHE_BENCH_PYTHON");
    if (!py || !*py) py = KC_BENCH_PYTHON;
    char script[2][4200];
    snprintf(script[0], sizeof script[0], "%s/cuda_core_peer.py", KC_PEERS_DIR);
    snprintf(script[1], sizeof script[1], "%s/triton_peer.py", KC_PEERS_DIR);
    ws_peer *pp[2] = {&out->cuda_core, &out->triton};
    for (int i = 0; i < 2; i++) {
        int st;
        char *probe[] = {(char *)py, script[i], "--cache-dir", d, "--import-only", NULL};
        if (i == 1) probe[2] = "--import-only", probe[3] = NULL;
        if (access(py, X_OK)) snprintf(pp[i]->why, sizeof pp[i]->why, "no Python at %s (tools/deps.sh --bench)", py);
        else if (run_proc(probe, NULL, &st), st)
            snprintf(pp[i]->why, sizeof pp[i]->why, "%s does not import with %s (exit %d; tools/deps.sh --bench)",
                     i ? "triton" : "cuda.core", py, st);
        else bench_py_peer(py, script[i], i, kdir, d, pp[i]);
    }
    rm_rf(d);
    print_warmstart_peers(out);
}

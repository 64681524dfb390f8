/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pch.c — a cold build host's prewarm with and without NVRTC precompiled headers (--pch-only):
 * fresh `kcache prewarm` processes, each into an emptied cache, KCACHE_PCH=0 then KCACHE_PCH=1,
 * interleaved, --pch-runs pairs, medians and off / on per workload.
 *
 * The one idea: the whole process is what a release pays, so it is what is timed (fork to exit),
 * like with like: the same manifest, targets, threads and settings, only KCACHE_PCH differs, and
 * NVRTC's own cache is off.  Three workloads: the bundled graphs that include the toolkit's
 * headers, a generated manifest of llm.c-style bf16 kernels (synth_bf16.c) for three targets, and
 * ten of those for one target.  What the ratio rests on is checked, never assumed: every run
 * compiled everything (no graph or unit hit), and the two caches of each pair hold the same entry
 * files (names are keys: one for one) with the same bytes — images whole, graph entries and unit
 * records in every section but their time stamps (META's creation time, ORIGIN's compile times).
 * Each process gets its own emptied TMPDIR, watched while it runs: the most files and bytes in it
 * (the PCH files), what is left after it exits, and any NVRTC automatic-PCH folder.
 * Callers: bench.c (--pch-only); pch_report.c prints.
 *
 * Must not: time anything but whole processes, or report a ratio of runs that were not all
 * compiles (they are left out and counted).
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/* ---- one prewarm process ---- */

typedef struct pw_run {
    double us;
    int status; /* exit status; -1: killed or not started */
    long variants, compiled, hits, failed, units, unit_hits;
    int tmp_files;           /* TMPDIR's files at most while it ran */
    long long tmp_bytes;     /* and their bytes at most */
    int tmp_left, auto_dirs; /* files left after exit; NVRTC automatic-PCH folders seen */
    int pch[4];              /* its KCACHE_LOG=compile lines: PCH files created, used, refused; "on" said */
} pw_run;

/* What a walk of the TMPDIR counts. */
static int walk_files, walk_auto;
static long long walk_bytes;

static int walk_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)ftw;
    const char *base = strrchr(path, '/');
    if (flag == FTW_D && base && !strncmp(base + 1, "__nvrtc_auto_pch_", 17)) walk_auto++;
    if (flag == FTW_F) walk_files++, walk_bytes += st->st_size;
    return 0;
}

static void walk(const char *dir) {
    walk_files = walk_auto = 0, walk_bytes = 0;
    nftw(dir, walk_one, 16, FTW_PHYS);
}

/* `"key": N` of the prewarm's JSON summary (the first one: the summary precedes the results); -1: none. */
static long jfield(const char *text, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(text, pat);
    return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* Occurrences of `what` in text. */
static int count(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what)) n++;
    return n;
}

/* What the library's compile log (stderr) says of precompiled headers (src/compile/pch.c's lines). */
static void read_log(const char *path, pw_run *r) {
    static char text[1 << 22];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    r->pch[0] = count(text, "pch: created ");
    r->pch[1] = count(text, "pch: used ");
    r->pch[2] = count(text, "pch: NVRTC refused ") + count(text, "pch: not created ");
    r->pch[3] = count(text, "pch: on\n") + count(text, "pch: precompiled headers on"); /* its words then and now */
}

static void read_summary(const char *path, pw_run *r) {
    static char text[1 << 16];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    r->variants = jfield(text, "variants"), r->compiled = jfield(text, "compiled"), r->hits = jfield(text, "hits");
    r->failed = jfield(text, "failed"), r->units = jfield(text, "units"), r->unit_hits = jfield(text, "unit_hits");
}

/* The child: its settings, stdout to `out`, stderr to `err`, then kcache -d DIR prewarm MANIFEST. */
static void child(const pch_plan *p, const char *manifest, const char *targets, const char *dir, const char *tmp,
                  int on, const char *out, const char *err) {
    setenv("KCACHE_PCH", on ? "1" : "0", 1);
    setenv("KCACHE_NVRTC_OWN_CACHE", "0", 1);
    setenv("TMPDIR", tmp, 1);
    setenv("KCACHE_LOG", "compile", 1); /* both modes: what PCH did, from its own lines */
    setenv("KCACHE_LOG_FORMAT", "text", 1);
    const char *clear[] = {"KCACHE_DIR",           "KCACHE_REMOTE",       "KCACHE_DISABLE",          "KCACHE_READONLY",
                           "KCACHE_PCH_DIR",       "KCACHE_PCH_MAX_SIZE", "KCACHE_SIGNING_KEY_FILE", "KCACHE_HMAC_KEY",
                           "KCACHE_HMAC_KEY_FILE", "KCACHE_TOOLCHAIN"};
    for (size_t i = 0; i < sizeof clear / sizeof clear[0]; i++) unsetenv(clear[i]);
    int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o >= 0) dup2(o, 1);
    if (e >= 0) dup2(e, 2);
    execl(p->kcache, p->kcache, "-d", dir, "prewarm", manifest, "--arch", targets, "--json", (char *)NULL);
    _exit(127);
}

/* One fresh process into the emptied `dir` (TMPDIR `tmp`, emptied too), watched until it exits. */
static void run_prewarm(const pch_plan *p, const char *manifest, const char *targets, const char *dir, int on,
                        pw_run *r) {
    char tmp[4200], out[4200], err[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", dir);
    snprintf(out, sizeof out, "%s.out", dir);
    snprintf(err, sizeof err, "%s.err", dir);
    rm_rf(dir), rm_rf(tmp);
    mkdir(dir, 0700), mkdir(tmp, 0700);
    memset(r, 0, sizeof *r);
    fflush(stdout);
    double t0 = now_us();
    pid_t pid = fork();
    if (pid == 0) child(p, manifest, targets, dir, tmp, on, out, err);
    int st = 0;
    pid_t w = 0;
    while (pid > 0 && (w = waitpid(pid, &st, WNOHANG)) == 0) {
        walk(tmp);
        if (walk_files > r->tmp_files) r->tmp_files = walk_files;
        if (walk_bytes > r->tmp_bytes) r->tmp_bytes = walk_bytes;
        if (walk_auto > r->auto_dirs) r->auto_dirs = walk_auto;
        usleep(10000);
    }
    r->us = now_us() - t0;
    r->status = pid > 0 && w == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    walk(tmp);
    r->tmp_left = walk_files;
    if (walk_auto > r->auto_dirs) r->auto_dirs = walk_auto;
    read_summary(out, r);
    read_log(err, r);
}

/* ---- a workload ---- */

/* A run into the workload's figures: its time when it compiled everything, else counted out. */
static void take(pch_work *w, int on, const pw_run *r, double *v, int *n) {
    if (r->status != 0 || r->failed != 0 || r->variants < 1) {
        w->bad[on]++;
        return;
    }
    if (r->hits != 0 || r->unit_hits != 0 || r->compiled != r->variants) {
        w->not_cold[on]++;
        return;
    }
    w->variants = r->variants, w->units = r->units;
    v[(*n)++] = r->us;
    if (r->tmp_files > w->tmp_files_peak[on]) w->tmp_files_peak[on] = r->tmp_files;
    if (r->tmp_bytes > w->tmp_bytes_peak[on]) w->tmp_bytes_peak[on] = r->tmp_bytes;
    if (r->tmp_left > w->tmp_left[on]) w->tmp_left[on] = r->tmp_left;
    if (r->auto_dirs > w->nvrtc_auto_dirs[on]) w->nvrtc_auto_dirs[on] = r->auto_dirs;
    for (int i = 0; i < 4; i++) w->pch_log[on][i] = r->pch[i]; /* the last run's */
}

/* `runs` pairs (off, on) of cold prewarms of `manifest` for `targets`, under `dir`. */
static void bench_work(const pch_plan *p, const char *manifest, const char *dir, pch_work *w, double goal) {
    double *v[2] = {calloc((size_t)p->runs, sizeof(double)), calloc((size_t)p->runs, sizeof(double))};
    int n[2] = {0, 0};
    char cdir[2][4200];
    mkdir(dir, 0700);
    for (int on = 0; on < 2; on++) snprintf(cdir[on], sizeof cdir[on], "%s/%s", dir, on ? "pch_on" : "pch_off");
    for (int k = 0; k < p->runs && v[0] && v[1]; k++) {
        pw_run r[2];
        for (int on = 0; on < 2; on++) {
            run_prewarm(p, manifest, w->targets, cdir[on], on, &r[on]);
            take(w, on, &r[on], v[on], &n[on]);
            printf("  %s run %d, PCH %-3s %8.2f s  (exit %d: %ld variants, %ld compiled, %ld hits, %ld failed)\n",
                   w->label, k + 1, on ? "on" : "off", r[on].us / 1e6, r[on].status, r[on].variants, r[on].compiled,
                   r[on].hits, r[on].failed);
        }
        if (r[0].status == 0 && r[1].status == 0) pch_compare_caches(cdir[0], cdir[1], w);
    }
    w->run[0] = summarize(v[0], n[0]), w->run[1] = summarize(v[1], n[1]);
    w->ratio = n[0] && n[1] ? ratio(w->run[0].med, w->run[1].med) : NAN;
    w->have = n[0] > 0 && n[1] > 0;
    if (!w->have) snprintf(w->why, sizeof w->why, "no run that compiled everything (see %s/*.err)", dir);
    free(v[0]), free(v[1]);
    rm_rf(cdir[0]), rm_rf(cdir[1]);
    print_pch_work(w, goal);
}

/* ---- the manifests ---- */

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A file's text, NUL-terminated; NULL when unreadable. */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    char *t = f ? malloc(1 << 20) : NULL;
    size_t n = t ? fread(t, 1, (1 << 20) - 1, f) : 0;
    if (f) fclose(f);
    if (t) t[n] = 0;
    return t;
}

/* The bundled specs that ask for the toolkit's headers, copied with every kernel file into `dir`, and a
 * manifest of them: its path into `manifest`, their count; 0 when there is none. */
static int bundled_toolkit(const char *kdir, const char *dir, char *manifest, size_t cap) {
    char cmd[9000];
    snprintf(
        cmd, sizeof cmd,
        "mkdir -p '%s' && for f in '%s'/*.json '%s'/*.cu '%s'/*.cuh; do [ ! -f \"$f\" ] || cp \"$f\" '%s'/ || exit 1; done",
        dir, kdir, kdir, kdir, dir);
    if (system(cmd) != 0) return 0;
    DIR *d = opendir(kdir);
    struct dirent *de;
    char *names[64];
    int n = 0;
    while (d && (de = readdir(d)) && n < 64) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".json") || !strcmp(de->d_name, "manifest.json")) continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", kdir, de->d_name);
        char *text = read_text(path);
        if (text && strstr(text, "\"toolkit_headers\": true")) names[n++] = strdup(de->d_name);
        free(text);
    }
    if (d) closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_name);
    snprintf(manifest, cap, "%s/manifest-toolkit.json", dir);
    FILE *f = fopen(manifest, "w");
    if (f) fprintf(f, "{\"graphs\": [");
    for (int i = 0; i < n; i++) {
        if (f) fprintf(f, "%s\"%s\"", i ? ", " : "", names[i]);
        free(names[i]);
    }
    if (f && (fprintf(f, "], \"archs\": [\"sm_90\"]}\n"), fclose(f))) return 0;
    return f ? n : 0;
}

int bench_pch(const pch_plan *p, pch_result *out) {
    memset(out, 0, sizeof *out);
    out->runs = p->runs, out->goal = 3.0;
    for (int i = 0; i < 3; i++) out->w[i].ratio = NAN;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    out->jobs = cores > 0 ? (int)cores : 1;
    char dir[4200], gen[4200], manifest[4200], single[4200];
    pch_work *w = out->w;
    /* the bundled toolkit-header graphs, for the targets */
    snprintf(w[0].label, sizeof w[0].label, "bundled toolkit-header graphs");
    snprintf(w[0].targets, sizeof w[0].targets, "%s", p->targets);
    snprintf(dir, sizeof dir, "%s/bundled", p->root);
    w[0].graphs = bundled_toolkit(p->kdir, dir, manifest, sizeof manifest);
    if (w[0].graphs) bench_work(p, manifest, dir, &w[0], out->goal);
    else snprintf(w[0].why, sizeof w[0].why, "no spec of %s asks for the toolkit's headers", p->kdir);
    /* the generated manifest, for the targets; then its first ten graphs for one target */
    snprintf(gen, sizeof gen, "%s/bf16", p->root);
    snprintf(single, sizeof single, "%s/bf16-single", p->root);
    mkdir(gen, 0700), mkdir(single, 0700);
    int ok = !synth_bf16_manifest(gen, p->graphs, p->targets, manifest, sizeof manifest);
    char m1[4200];
    ok = ok && !synth_bf16_manifest(single, p->single_graphs, p->single_target, m1, sizeof m1);
    snprintf(w[1].label, sizeof w[1].label, "generated bf16, %d graph%s", p->graphs, p->graphs == 1 ? "" : "s");
    snprintf(w[1].targets, sizeof w[1].targets, "%s", p->targets);
    w[1].graphs = p->graphs;
    snprintf(w[2].label, sizeof w[2].label, "generated bf16, %d graph%s", p->single_graphs,
             p->single_graphs == 1 ? "" : "s");
    snprintf(w[2].targets, sizeof w[2].targets, "%s", p->single_target);
    w[2].graphs = p->single_graphs;
    for (int i = 1; i < 3; i++) {
        if (!ok) {
            snprintf(w[i].why, sizeof w[i].why, "could not write the generated manifest under %s", p->root);
            continue;
        }
        snprintf(dir, sizeof dir, "%s/work%d", p->root, i);
        bench_work(p, i == 1 ? manifest : m1, dir, &w[i], out->goal);
    }
    return w[0].have && w[1].have && w[2].have ? 0 : 1;
}

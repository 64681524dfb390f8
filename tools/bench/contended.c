/* SPDX-License-Identifier: Apache-2.0 */
/*
 * contended.c — kcache-bench --contended-only: a cold compile of a graph that includes the toolkit's
 * headers, alone and beside a neighbour that reads every file of the toolkit, with the filter of this
 * process's own reads ([Note: only our own reads] in src/compile/toolkit_fan.c) and without it; then
 * fresh processes of a warm `kcache get` of each cache, interleaved.
 *
 * The one idea: what a toolkit direct manifest lists is what every later process of that graph
 * stats, so the figures are the files each compile recorded and what a warm start costs after it,
 * every pass in the same run on the same graph.  Each cold compile runs in a fresh process (this
 * program again, --contended-child), so that no memo of this one's is taken.  The neighbour reads
 * the tree the compile alone watched (its manifest's root): it waits until the compile holds an
 * inotify watch (/proc/PID/fdinfo), then reads every regular file of the tree three times (once
 * with --quick) — what another cache's first use of the toolkit does, a few times over.  The
 * watch's queues are read when the compile ends, so all its events must fit in them together
 * (fs.inotify.max_queued_events, 16,384 by default; a folder opened counts twice): the neighbour's
 * take about 2,240 a pass of the toolkit's 1,982 files and 129 folders, and whatever else reads
 * the tree meanwhile adds its own; an inotify queue that overflows leaves no manifest, and the
 * report says so.  Whether fanotify can mark the tree here is probed and reported: where it
 * cannot, the filtered pass lists what the unfiltered one does.
 *
 * Must not: count a compile that was no compile, or a warm get that failed; it reports those.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "bench.h"
#include "compile/toolkit_fan.h" /* kc_tk_fan_enable_: the filter off, for the pass without it */

static const char *const pass_names[CT_PASSES] = {"alone", "beside, filtered", "beside, unfiltered"};

/* ---- the neighbour: reads every file of the tree, once the compile's watch is up ---- */

static long files_read; /* the neighbour's count */

static int read_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)ftw;
    if (flag != FTW_F) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char b[4096];
        while (read(fd, b, sizeof b) > 0) {}
        close(fd);
        files_read++;
    }
    return 0;
}

/* Whether process `pid` holds an inotify descriptor with a watch (its fdinfo lists "inotify wd:"). */
static int watching(pid_t pid) {
    char dpath[64], path[128], line[512];
    snprintf(dpath, sizeof dpath, "/proc/%d/fdinfo", (int)pid);
    DIR *d = opendir(dpath);
    struct dirent *de;
    int yes = 0;
    while (d && !yes && (de = readdir(d))) {
        snprintf(path, sizeof path, "%s/%.32s", dpath, de->d_name);
        FILE *f = de->d_name[0] != '.' ? fopen(path, "r") : NULL;
        while (f && !yes && fgets(line, sizeof line, f)) yes = !strncmp(line, "inotify wd:", 11);
        if (f) fclose(f);
    }
    if (d) closedir(d);
    return yes;
}

/* Wait (10 ms at a time) until `child` watches, then read the tree `sweeps` times and write the count
 * of files read to `out`; the pipe `stop` closing (the child has ended) ends the wait: exit 1. */
static void neighbour(const char *tree, int sweeps, pid_t child, int stop, int out) {
    struct pollfd p = {stop, POLLIN, 0};
    int rc;
    while (!watching(child))
        if ((rc = poll(&p, 1, 10)) != 0 && !(rc < 0 && errno == EINTR)) _exit(1); /* ended before its watch */
    for (int i = 0; i < sweeps; i++) (void)nftw(tree, read_one, 32, FTW_PHYS);
    _exit(write(out, &files_read, sizeof files_read) == (ssize_t)sizeof files_read ? 0 : 2);
}

/* Whether fanotify can mark `tree` here as the watch does (toolkit_fan.c); 1 or 0. */
static int fanotify_here(const char *tree) {
    int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY);
    int ok = fd >= 0 &&
             fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_ONLYDIR, FAN_OPEN | FAN_EVENT_ON_CHILD, AT_FDCWD, tree) == 0;
    if (fd >= 0) close(fd);
    return ok;
}

/* ---- one cold compile, in a fresh process ---- */

/* --contended-child DIR: compile `spec` cold into the cache at `dir` (the filter off when
 * `unfiltered`); 0, or 1 when it was no compile. */
int bench_contended_child(const char *dir, const char *spec, int unfiltered) {
    if (unfiltered) kc_tk_fan_enable_(0);
    kc_cache *c = open_at(dir);
    kc_graph_desc *d;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    int rc = kc_graph_desc_load(&d, spec) || kc_graph_compile(c, d, arch, &info);
    if (rc) fprintf(stderr, "kcache-bench: %s: %s\n", spec, kc_error_last()->message);
    else if (info.source != KC_FROM_COMPILE) fprintf(stderr, "kcache-bench: %s: a cold compile was no compile\n", spec);
    if (!rc) kc_graph_desc_free(d);
    kc_cache_close(c);
    return rc || info.source != KC_FROM_COMPILE;
}

/* The files and folders the toolkit direct manifest in `dir` lists, and its root; 0, or -1 when there is none. */
static int count_manifest(const char *dir, ct_pass *out) {
    char tdir[4200], path[8500], line[4500];
    snprintf(tdir, sizeof tdir, "%s/v1/toolkits", dir);
    DIR *d = opendir(tdir);
    struct dirent *de;
    int found = 0;
    while (d && (de = readdir(d)))
        if (!strncmp(de->d_name, "direct-", 7)) {
            snprintf(path, sizeof path, "%s/%s", tdir, de->d_name);
            FILE *f = fopen(path, "r");
            while (f && fgets(line, sizeof line, f)) {
                if (!strncmp(line, "f ", 2))
                    out->files++, out->files_sum = XXH3_64bits_withSeed(line, strlen(line), out->files_sum);
                else if (!strncmp(line, "d ", 2)) out->dirs++;
                else if (!strncmp(line, "root ", 5))
                    snprintf(out->root, sizeof out->root, "%.*s", (int)strcspn(line + 5, "\n"), line + 5);
            }
            if (f) fclose(f), found = 1;
        }
    if (d) closedir(d);
    return found ? 0 : -1;
}

/* The neighbour beside child `c`, reading `tree`: its pid, its count's pipe in *res; -1 when it could not start. */
static pid_t start_neighbour(const char *tree, pid_t c, int stop[2], int *res) {
    int rp[2];
    if (pipe(rp) != 0) return -1;
    pid_t nb = fork();
    if (nb == 0) close(stop[1]), close(rp[0]), neighbour(tree, quick ? 1 : 3, c, stop[0], rp[1]);
    close(rp[1]);
    *res = nb < 0 ? -1 : rp[0];
    if (nb < 0) close(rp[0]);
    return nb;
}

/* Pass i: its cold compile in a fresh process, beside the neighbour reading `tree` for passes 1 and 2. */
static int cold_pass(const ct_plan *p, const char *tree, int i, ct_pass *out) {
    char *argv[] = {(char *)p->self,
                    "--contended-child",
                    out->dir,
                    "--kernels",
                    (char *)p->kdir,
                    "--arch",
                    (char *)arch,
                    i == 2 ? "--contended-unfiltered" : NULL,
                    NULL};
    int stop[2], res = -1, st, ns = -1;
    if (pipe(stop) != 0) return snprintf(out->why, sizeof out->why, "pipe: %s", strerror(errno)), -1;
    double t0 = now_us();
    pid_t c = fork(), nb = 0;
    if (c == 0) {
        close(stop[0]), close(stop[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    if (c > 0 && i > 0) nb = start_neighbour(tree, c, stop, &res);
    close(stop[0]);
    int rc = c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
    out->cold_us = now_us() - t0;
    close(stop[1]);
    if (nb > 0) waitpid(nb, &ns, 0);
    if (res >= 0 && read(res, &out->neighbour_files, sizeof out->neighbour_files) != sizeof out->neighbour_files)
        out->neighbour_files = 0;
    if (res >= 0) close(res);
    if (rc) snprintf(out->why, sizeof out->why, "the cold compile failed");
    else if (nb < 0) snprintf(out->why, sizeof out->why, "the neighbour could not start"), rc = -1;
    else if (nb > 0 && !(WIFEXITED(ns) && WEXITSTATUS(ns) == 0))
        snprintf(out->why, sizeof out->why, "the compile ended before the neighbour saw its watch"), rc = -1;
    else if (count_manifest(out->dir, out))
        snprintf(out->why, sizeof out->why,
                 "no toolkit direct manifest was written (a queue overflowed? KCACHE_LOG=compile says why)"),
            rc = -1;
    return rc;
}

/* The cold passes, each followed by a first warm get; 0, or 1 with the why of the pass that failed. */
static int cold_passes(const ct_plan *p, ct_result *r, char *get[CT_PASSES][8]) {
    for (int i = 0; i < CT_PASSES; i++) {
        ct_pass *s = &r->pass[i];
        snprintf(s->dir, sizeof s->dir, "%s/ct%d", p->root, i);
        if (i == 1) r->fanotify = fanotify_here(r->pass[0].root);
        if (cold_pass(p, r->pass[0].root, i, s)) {
            for (int k = i + 1; k < CT_PASSES; k++) snprintf(r->pass[k].why, sizeof r->pass[k].why, "not run");
            return 1;
        }
        char *g[8] = {(char *)p->kcache, "--cache-dir", s->dir, "get", r->spec, "--arch", (char *)arch, NULL};
        memcpy(get[i], g, sizeof g);
        if (bench_run_quiet(get[i]) < 0) { /* the first warm get: its disk hit, and memos of its own */
            snprintf(s->why, sizeof s->why, "a warm `kcache get` failed");
            return 1;
        }
    }
    return 0;
}

int bench_contended(const ct_plan *p, ct_result *r) {
    memset(r, 0, sizeof *r);
    snprintf(r->spec, sizeof r->spec, "%s/rmsnorm_bf16.json", p->kdir);
    char *get[CT_PASSES][8];
    if (cold_passes(p, r, get)) return 1;
    int n = p->runs, got[CT_PASSES] = {0};
    double *v[CT_PASSES];
    for (int i = 0; i < CT_PASSES; i++) v[i] = calloc((size_t)n, sizeof(double));
    for (int k = 0; k < n; k++)
        for (int j = 0; j < CT_PASSES; j++) { /* interleaved, the order turning each round */
            int i = (j + k) % CT_PASSES;
            double t = bench_run_quiet(get[i]);
            if (t >= 0) v[i][got[i]++] = t;
        }
    int bad = 0;
    for (int i = 0; i < CT_PASSES; i++) {
        r->pass[i].warm = summarize(v[i], got[i]);
        if (got[i] < n)
            snprintf(r->pass[i].why, sizeof r->pass[i].why, "%d of %d warm `kcache get`s failed", n - got[i], n),
                bad = 1;
        free(v[i]);
    }
    r->have = !bad;
    return bad;
}

void print_contended(const ct_plan *p, const ct_result *r) {
    printf("\na cold compile of %s alone and beside a neighbour reading every file of the tree it watched "
           "(%s) %s, with and without the filter of this process's own reads (fanotify %s here); then %d fresh "
           "processes of a warm `kcache get` of each cache, interleaved:\n",
           r->spec, r->pass[0].root[0] ? r->pass[0].root : "-", quick ? "once" : "three times",
           r->fanotify ? "available" : "NOT available", p->runs);
    printf("%-20s %10s %14s %8s %16s %26s\n", "compile", "cold", "files listed", "folders", "read by neighbour",
           "warm get (median [p10 .. p90])");
    for (int i = 0; i < CT_PASSES; i++) {
        const ct_pass *s = &r->pass[i];
        char c[32];
        fmt_us(s->cold_us, c, sizeof c);
        if (s->why[0]) printf("%-20s %10s  %s\n", pass_names[i], c, s->why);
        else
            printf("%-20s %10s %14d %8d %16ld %10.0f us [%.0f .. %.0f]\n", pass_names[i], c, s->files, s->dirs,
                   s->neighbour_files, s->warm.med, s->warm.p10, s->warm.p90);
    }
    if (r->have)
        printf("warm get after the unfiltered compile / after the filtered one: %.2fx; filtered / alone: %.2fx\n",
               ratio(r->pass[2].warm.med, r->pass[1].warm.med), ratio(r->pass[1].warm.med, r->pass[0].warm.med));
    if (r->have)
        printf("the filtered manifest's files are %s the alone one's\n",
               r->pass[1].files_sum == r->pass[0].files_sum && r->pass[1].files == r->pass[0].files ? "exactly"
                                                                                                    : "NOT");
    fflush(stdout);
}

void json_contended(FILE *f, const ct_result *r) {
    fprintf(f, "\"contended\": {\"spec\": \"");
    jesc(f, r->spec);
    fprintf(f, "\", \"tree\": \"");
    jesc(f, r->pass[0].root);
    fprintf(f, "\", \"fanotify\": %s, \"passes\": [", r->fanotify ? "true" : "false");
    for (int i = 0; i < CT_PASSES; i++) {
        const ct_pass *s = &r->pass[i];
        fprintf(f,
                "{\"pass\": \"%s\", \"files_listed\": %d, \"files_digest\": \"%016llx\", \"folders_listed\": %d, "
                "\"neighbour_files_read\": %ld, ",
                pass_names[i], s->files, (unsigned long long)s->files_sum, s->dirs, s->neighbour_files);
        jnum(f, "cold_us", s->cold_us, 0);
        jstat(f, "warm_get", s->warm);
        fprintf(f, "\"why\": \"");
        jesc(f, s->why);
        fprintf(f, "\"}%s", i + 1 < CT_PASSES ? ", " : "");
    }
    fprintf(f, "]}");
}

int bench_contended_mode(const ct_plan *p, const char *json) {
    static ct_result r;
    printf("kcache-bench: the toolkit headers a cold compile records as read (what every later process of its graph "
           "stats), alone and beside another process reading the toolkit, for %s (%s)\n",
           arch, p->kcache);
    int rc = bench_contended(p, &r);
    print_contended(p, &r);
    rm_rf(p->root);
    FILE *f = json ? fopen(json, "w") : NULL;
    if (f) {
        fprintf(f, "{\"arch\": \"%s\", \"quick\": %s, ", arch, quick ? "true" : "false");
        json_contended(f, &r);
        fprintf(f, "}\n");
        fclose(f);
        printf("wrote %s\n", json);
    }
    return rc || (json && !f);
}

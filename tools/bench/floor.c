/* SPDX-License-Identifier: Apache-2.0 */
/*
 * floor.c — kcache-bench's process floor: fresh processes of a warm `kcache get` of one graph
 * against fresh processes of `kcache --help` (exec, the dynamic loader, libc, the tool's own
 * start), interleaved so that drift hits both alike.
 *
 * The one idea: the difference between the two is what a warm get costs a fresh process beyond
 * starting at all.  The tool is the one built beside this benchmark, or --kcache PATH (e.g. an
 * older build).  Callers: bench.c (the full run's floor step and --process-floor).
 *
 * Must not: count the first get (it compiles) or a second get that was not a disk hit.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

double bench_run_quiet(char *const argv[]) {
    double t0 = now_us();
    pid_t p = fork();
    if (p == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 1), dup2(null, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    return now_us() - t0;
}

/*
 * N fresh processes of `kcache --help` (the floor: exec, the dynamic loader, libc, the
 * tool's own start) against N fresh processes of a warm `kcache get SPEC --arch A` (the same
 * cache, one graph, compiled once first), interleaved so that drift hits both alike.
 */
void bench_process_floor(const char *kcache, const char *spec, const char *dir, floor_res *out) {
    memset(out, 0, sizeof *out);
    if (access(kcache, X_OK) != 0) {
        snprintf(out->why, sizeof out->why, "no kcache tool at %s (--kcache PATH)", kcache);
        return;
    }
    const char *slash = strrchr(spec, '/');
    snprintf(out->name, sizeof out->name, "%.*s", (int)strcspn(slash ? slash + 1 : spec, "."),
             slash ? slash + 1 : spec);
    char *help[] = {(char *)kcache, "--help", NULL};
    char *get[] = {(char *)kcache, "--cache-dir", (char *)dir, "get", (char *)spec, "--arch", (char *)arch, NULL};
    if (bench_run_quiet(get) < 0) { /* the one compile */
        snprintf(out->why, sizeof out->why, "'%s --cache-dir %s get %s --arch %s' failed", kcache, dir, spec, arch);
        return;
    }
    char cmd[8192], line[4096] = "";
    snprintf(cmd, sizeof cmd, "'%s' --cache-dir '%s' get '%s' --arch %s --json 2>&1", kcache, dir, spec, arch);
    FILE *p = popen(cmd, "r");
    if (p) {
        if (!fgets(line, sizeof line, p)) line[0] = '\0';
        pclose(p);
    }
    if (!strstr(line, "\"disk\"")) {
        snprintf(out->why, sizeof out->why, "the second get was no disk hit: %.400s", line);
        return;
    }
    int n = quick ? 30 : 200, nh = 0, ng = 0;
    double *vh = calloc((size_t)n, sizeof *vh), *vg = calloc((size_t)n, sizeof *vg);
    for (int i = 0; i < 3; i++) bench_run_quiet(help), bench_run_quiet(get); /* warm the page cache */
    for (int i = 0; i < n; i++) {
        double h = bench_run_quiet(help), g = bench_run_quiet(get);
        if (h >= 0) vh[nh++] = h;
        if (g >= 0) vg[ng++] = g;
    }
    out->help = summarize(vh, nh);
    out->get = summarize(vg, ng);
    out->have = nh > 0 && ng > 0;
    if (!out->have) snprintf(out->why, sizeof out->why, "the runs failed");
    free(vh);
    free(vg);
}

void print_process_floor(const floor_res *pf) {
    if (pf->have)
        printf("process floor (%s, %d fresh processes each): warm `kcache get` %.0f us [%.0f .. %.0f], "
               "`kcache --help` %.0f us [%.0f .. %.0f]: %.2fx the floor (+%.0f us)\n",
               pf->name, pf->get.n, pf->get.med, pf->get.p10, pf->get.p90, pf->help.med, pf->help.p10, pf->help.p90,
               pf->get.med / pf->help.med, pf->get.med - pf->help.med);
    else printf("process floor: not measured (%s)\n", pf->why);
    fflush(stdout);
}

void jfloor(FILE *f, const floor_res *pf) {
    fprintf(f, "\"process_floor\": ");
    if (!pf->have) {
        fprintf(f, "null");
        return;
    }
    fprintf(f, "{\"graph\": \"%s\", ", pf->name);
    jstat(f, "kcache_help", pf->help);
    jstat(f, "warm_get", pf->get);
    jnum(f, "warm_get_over_help", ratio(pf->get.med, pf->help.med), 0);
    jnum(f, "warm_get_minus_help_us", pf->get.med - pf->help.med, 1);
    fprintf(f, "}");
}

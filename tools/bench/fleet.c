/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet.c — kcache-bench --fleet: a fleet's cold start on one machine.  N processes, each a host with
 * its own cache directory, are forked, open their caches against one remote, and wait on one pipe (the
 * barrier: the parent closes its end once every host is ready, and they all go); each then looks up
 * every graph of a cold synthetic manifest (synth.c's graphs, their sources given a fresh nonce per run
 * so that no earlier run's entries answer), compiling on a miss or waiting on another host's lease.
 * Each host records per lookup its time, outcome and NVRTC compiles, and a digest of the image bytes it
 * ended up with (read back from its own cache and checked there), then its own stats and its remote
 * tier's counters, into memory shared with the parent.  The parent adds them up: NVRTC compiles per key
 * (the goal with leases: 1), lookups per second, p50/p99 lookup latency, bytes, failed lookups, and wrong
 * kernels (a host's bytes for a key that no host compiled for that key).  Each remote runs twice, with
 * the build's lease and with remote_lease_ms=0; a remote whose server script has a disruption verb
 * (redis_cluster.sh kill-master, nginx_dav.sh restart) runs a third time with the verb run once half the
 * hosts reported their first lookup (what the parent observes, never a sleep).
 *
 * Called by bench.c's --fleet mode only.  Must not: start a server it cannot stop (every start is paired
 * with its stop, also when a run fails), let a host wait without bound (a host's waits are the library's,
 * each under its deadline or lease), or count what a host did not report.
 */
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fleet.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* The MAC key every host shares: remote entries are verified like any remote hit. */
static const char fleet_mac[] = "kcache-bench fleet shared MAC key, 32+ bytes long";

/* What one host did, written by the host into memory shared with the parent. */
typedef struct host_graph {
    double us;
    int source, units, ok, checked;
    uint64_t digest; /* XXH3-64 over its images' bytes, read back from its own cache */
} host_graph;

typedef struct host_rec {
    int reported, open_failed;
    char err[240];
    host_graph g[FLEET_MAX_GRAPHS];
    uint64_t stats[KC_STAT_COUNT];
    kc_tier_stats tier;
    uint64_t lease[5]; /* kc_lease_stats' counters, in lease_names' order (nlease 0: none in this build) */
    int nlease;
} host_rec;

static const char *const lease_names[5] = {"taken", "waits", "wait_hits", "wait_compiles", "wait_us"};

/* This host's lease counters into rec (a build with kc_cache_lease_stats; else none). */
static void host_lease_stats(kc_cache *c, host_rec *rec) {
#ifdef KC_LEASE_STATS_VERSION
    kc_lease_stats ls = KC_LEASE_STATS_INIT;
    if (kc_cache_lease_stats(c, &ls) != KC_OK) return;
    uint64_t v[5] = {ls.taken, ls.waits, ls.wait_hits, ls.wait_compiles, ls.wait_us};
    memcpy(rec->lease, v, sizeof v);
    rec->nlease = 5;
#else
    (void)c, (void)rec;
#endif
}

/* One run's setting for every host. */
typedef struct run_cfg {
    const fleet_plan *p;
    const char *url, *specs_dir, *lease_env;
    char lease_val[32];
} run_cfg;

/* ---- a host ---- */

/* The digest of the images stored for graph d in c (its entry read back and its images checked); 0 if none. */
static uint64_t host_digest(kc_cache *c, const kc_graph_desc *d) {
    kc_key k;
    kc_entry *e = NULL;
    uint64_t h = 0;
    if (kc_graph_key(d, &k, NULL) != KC_OK || kc_cache_peek(c, &k, arch, &e) != KC_OK) return 0;
    if (kc_entry_resolve(c, e) == KC_OK) {
        const void *b;
        size_t len;
        h = 1;
        for (size_t i = 0; kc_entry_attached_image(e, i, &b, &len) == KC_OK; i++) h = XXH3_64bits_withSeed(b, len, h);
    }
    kc_entry_free(e);
    return h;
}

/* Open this host's cache on `dir` against the run's remote; NULL (why in rec->err) on failure. */
static kc_cache *host_open(const run_cfg *rc, const char *dir, host_rec *rec) {
    if (rc->lease_env) setenv(rc->lease_env, rc->lease_val, 1);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.remote = rc->url;
    o.hmac_key = fleet_mac, o.hmac_key_len = sizeof fleet_mac - 1;
    kc_cache *c = NULL;
    if (kc_cache_open(&c, &o) != KC_OK) {
        snprintf(rec->err, sizeof rec->err, "%s", kc_error_last()->message);
        rec->open_failed = 1;
        return NULL;
    }
    return c;
}

/* Host `h`: open, wait at the barrier, look up every graph, report.  Never returns. */
static void host_main(const run_cfg *rc, int h, host_rec *rec, int barrier_fd, int progress_fd) {
    signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL); /* the parent's handler stops the server: not a host's */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/host%03d", rc->p->root, h);
    mkdir(dir, 0700);
    kc_graph_desc *d[FLEET_MAX_GRAPHS] = {0};
    kc_cache *c = host_open(rc, dir, rec);
    for (int i = 0; c && i < rc->p->graphs; i++) {
        char spec[4300];
        snprintf(spec, sizeof spec, "%s/g%03d.json", rc->specs_dir, i);
        if (kc_graph_desc_load(&d[i], spec) != KC_OK) d[i] = NULL;
    }
    char b;
    if (write(progress_fd, "r", 1) != 1) {} /* ready (opened or not: the parent must not wait for it) */
    while (read(barrier_fd, &b, 1) > 0) {}  /* EOF: every host is ready, go */
    for (int i = 0; c && i < rc->p->graphs; i++) {
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        double t0 = now_us();
        int ok = d[i] && kc_graph_compile(c, d[i], arch, &info) == KC_OK;
        rec->g[i] = (host_graph){now_us() - t0, info.source, info.units_compiled, ok, 0, 0};
        if (!ok && !rec->err[0]) snprintf(rec->err, sizeof rec->err, "%s", d[i] ? kc_error_last()->message : "no spec");
        if (i == 0 && write(progress_fd, "1", 1) != 1) {} /* the parent counts first lookups */
    }
    for (int i = 0; c && i < rc->p->graphs; i++) {
        rec->g[i].digest = rec->g[i].ok && d[i] ? host_digest(c, d[i]) : 0;
        rec->g[i].checked = rec->g[i].digest != 0;
    }
    if (c) {
        kc_cache_remote_flush(c);
        kc_stats st;
        if (kc_cache_stats(c, &st) == KC_OK) memcpy(rec->stats, st.v, sizeof rec->stats);
        rec->tier = (kc_tier_stats)KC_TIER_STATS_INIT;
        if (kc_cache_tier_stats(c, 1, &rec->tier) != KC_OK) rec->tier = (kc_tier_stats)KC_TIER_STATS_INIT;
        host_lease_stats(c, rec);
        kc_cache_close(c);
    }
    for (int i = 0; i < rc->p->graphs; i++) kc_graph_desc_free(d[i]);
    rec->reported = 1;
    _exit(0);
}

/* ---- servers ---- */

/* `bash DIR/NAME.sh VERB SDIR` (output to SDIR/NAME.log); its exit status (-1: not run). */
static int server_cmd(const fleet_plan *p, const char *name, const char *verb, const char *sdir) {
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "bash '%s/%s.sh' %s '%s' >>'%s/%s.log' 2>&1", p->servers_dir, name, verb, sdir, sdir,
             name);
    int st = system(cmd);
    return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

/* A plain redis:// URL's own counters (INFO, through redis-cli): [0] network bytes in, [1] out, [2] commands,
 * [3] microseconds spent in them; -1 when not read. */
static void redis_counters(const char *url, long long v[4]) {
    v[0] = v[1] = -1, v[2] = v[3] = 0;
    char host[256];
    int port;
    if (strncmp(url, "redis://", 8) || strchr(url + 8, '@') || sscanf(url + 8, "%255[^:/]:%d", host, &port) != 2)
        return;
    char cmd[400], line[256];
    snprintf(cmd, sizeof cmd, "redis-cli -h '%s' -p %d INFO all 2>/dev/null", host, port);
    FILE *f = popen(cmd, "r");
    while (f && fgets(line, sizeof line, f)) {
        long long calls, usec;
        sscanf(line, "total_net_input_bytes:%lld", &v[0]);
        sscanf(line, "total_net_output_bytes:%lld", &v[1]);
        if (sscanf(line, "cmdstat_%*[^:]:calls=%lld,usec=%lld", &calls, &usec) == 2) v[2] += calls, v[3] += usec;
    }
    if (f) pclose(f);
}

/* ---- one run ---- */

/* A cold manifest of p->graphs synthetic graphs in `dir`, each source given `nonce` (its own keys); 0, or -1. */
static int cold_manifest(const char *dir, int graphs, const char *nonce) {
    char mpath[4200];
    if (mkdir(dir, 0700) || synth_manifest(dir, graphs, arch, mpath, sizeof mpath)) return -1;
    for (int i = 0; i < graphs; i++) {
        char cu[4300];
        snprintf(cu, sizeof cu, "%s/g%03d.cu", dir, i);
        FILE *f = fopen(cu, "a");
        if (!f) return -1;
        fprintf(f, "// fleet run %s\n", nonce);
        if (fclose(f)) return -1;
    }
    return 0;
}

/* Until every host said it is ready ('r' on the progress pipe) or exited: polled each second, never a hang. */
static void wait_ready(int prog_fd, pid_t *pids, int started) {
    int ready = 0, dead = 0;
    while (ready + dead < started) {
        struct pollfd pf = {prog_fd, POLLIN, 0};
        char b;
        int k = poll(&pf, 1, 1000);
        if (k > 0 && read(prog_fd, &b, 1) == 1) ready += b == 'r';
        else if (k > 0) break; /* EOF: every host is gone */
        for (int h = 0; k == 0 && h < started; h++)
            if (pids[h] > 0 && waitpid(pids[h], NULL, WNOHANG) == pids[h]) pids[h] = 0, dead++;
    }
}

/* Fork the hosts, release them together (once all are ready), run the disruption (if any) once half reported a first lookup. */
static int run_hosts(const run_cfg *rc, host_rec *recs, fleet_run *r, const char *server, const char *sdir) {
    int bar[2], prog[2], n = rc->p->hosts, started = 0;
    if (pipe(bar) || pipe(prog)) return snprintf(r->why, sizeof r->why, "pipe failed"), -1;
    fflush(NULL);
    double t_fork = now_us();
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    for (int h = 0; pids && h < n; h++, started++) {
        pids[h] = fork();
        if (pids[h] == 0) {
            close(bar[1]), close(prog[0]);
            host_main(rc, h, &recs[h], bar[0], prog[1]);
        }
        if (pids[h] < 0) break;
    }
    close(bar[0]), close(prog[1]);
    wait_ready(prog[0], pids, started);
    double t0 = now_us();
    r->ready_s = (t0 - t_fork) / 1e6;
    close(bar[1]); /* the barrier: every host reads EOF now */
    int firsts = 0;
    char b;
    while (read(prog[0], &b, 1) == 1)
        if (b == '1' && ++firsts == (n + 1) / 2 && r->disruption[0]) {
            int st = server_cmd(rc->p, server, r->disruption, sdir);
            r->disrupted = st == 0;
            if (st) snprintf(r->why, sizeof r->why, "%s.sh %s failed (exit %d)", server, r->disruption, st);
        }
    close(prog[0]);
    for (int h = 0; h < started; h++)
        if (pids[h] > 0) waitpid(pids[h], NULL, 0);
    r->wall_s = (now_us() - t0) / 1e6;
    free(pids);
    return started == n ? 0 : (snprintf(r->why, sizeof r->why, "fork failed after %d hosts", started), -1);
}

/* ---- adding up ---- */

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median and the 99th percentile of n samples (sorted here); -1 when none. */
static void percentiles(double *v, int n, double *p50, double *p99) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    *p50 = n ? v[(n - 1) / 2] : -1;
    *p99 = n ? v[(int)(0.99 * (n - 1) + 0.999)] : -1;
}

/* Graph g over all hosts: NVRTC compiles, distinct image sets, wrong kernels (bytes no host compiled). */
static void tally_graph(const host_rec *recs, int n, int g, fleet_run *r, int *compiles) {
    uint64_t seen[FLEET_MAX_HOSTS], made[FLEET_MAX_HOSTS];
    int ns = 0, nm = 0;
    *compiles = 0;
    for (int h = 0; h < n; h++) {
        const host_graph *x = &recs[h].g[g];
        *compiles += x->units;
        if (x->checked && x->source == KC_FROM_COMPILE) made[nm++] = x->digest;
        int k = 0;
        while (x->checked && k < ns && seen[k] != x->digest) k++;
        if (x->checked && k == ns) seen[ns++] = x->digest;
    }
    if (ns > r->distinct_max) r->distinct_max = ns;
    for (int h = 0; h < n; h++) {
        const host_graph *x = &recs[h].g[g];
        if (!recs[h].reported || recs[h].open_failed || !x->ok) continue;
        if (!x->checked) {
            r->unverified++;
            continue;
        }
        int k = 0; /* no host compiled it (a warm remote): the first host's bytes are the reference */
        while (k < nm && made[k] != x->digest) k++;
        if (nm ? k == nm : x->digest != seen[0]) r->wrong++;
    }
}

/* One host's outcome, stats and tier counters into r; its lookups' times into lat[*nl]. */
static void tally_host(const host_rec *x, int graphs, fleet_run *r, double *lat, int *nl, double *rlat, int *nr) {
    if (!x->reported || x->open_failed) {
        r->failed += graphs;
        if (!r->why[0])
            snprintf(r->why, sizeof r->why, "a host %s: %s", x->reported ? "could not open" : "died", x->err);
        return;
    }
    for (int g = 0; g < graphs; g++) {
        const host_graph *y = &x->g[g];
        if (!y->ok) {
            r->failed++;
            if (!r->why[0]) snprintf(r->why, sizeof r->why, "a lookup failed: %s", x->err);
            continue;
        }
        lat[(*nl)++] = y->us;
        if (y->source == KC_FROM_REMOTE) rlat[(*nr)++] = y->us;
        r->remote_hits += y->source == KC_FROM_REMOTE;
        r->compiled += y->source == KC_FROM_COMPILE;
        r->disk_hits += y->source == KC_FROM_DISK;
        r->units_seen += y->units;
    }
    r->units_stats += (long)x->stats[KC_STAT_UNIT_COMPILES];
    r->lookups_stats += (long)(x->stats[KC_STAT_MEMORY_HITS] + x->stats[KC_STAT_HITS] + x->stats[KC_STAT_REMOTE_HITS] +
                               x->stats[KC_STAT_MISSES] + x->stats[KC_STAT_BYPASSES]);
    r->bytes_held += x->stats[KC_STAT_BYTES];
    r->tier_reads += x->tier.hits + x->tier.misses;
    r->tier_writes += x->tier.writes;
    r->tier_errors += x->tier.errors + x->tier.write_errors;
    if (x->nlease > r->nlease) r->nlease = x->nlease; /* the lease counters of this build, summed */
    for (int i = 0; i < x->nlease && i < 8; i++) {
        snprintf(r->lease_names[i], sizeof r->lease_names[0], "%s", lease_names[i]);
        r->lease_stats[i] += x->lease[i];
    }
}

static void tally(const host_rec *recs, const fleet_plan *p, fleet_run *r) {
    int n = p->hosts, nl = 0, nr = 0;
    double *lat = malloc(sizeof *lat * (size_t)(n * p->graphs + 1) * 2), *rlat = lat + n * p->graphs + 1;
    if (!lat) return;
    for (int h = 0; h < n; h++) tally_host(&recs[h], p->graphs, r, lat, &nl, rlat, &nr);
    r->compiles_min = 1 << 30;
    for (int g = 0; g < p->graphs; g++) {
        int c;
        tally_graph(recs, n, g, r, &c);
        if (c < r->compiles_min) r->compiles_min = c;
        if (c > r->compiles_max) r->compiles_max = c;
        r->compiles_mean += (double)c / p->graphs;
    }
    percentiles(lat, nl, &r->p50_us, &r->p99_us);
    percentiles(rlat, nr, &r->remote_p50_us, &r->remote_p99_us);
    r->lookups_per_s = r->wall_s > 0 ? nl / r->wall_s : -1;
    free(lat);
}

/* One run against `url` (server `server` started in `sdir`, or "" for a URL given). */
static void fleet_once(const fleet_plan *p, const char *server, const char *url, const char *sdir, fleet_run *r) {
    static int seq;
    char nonce[64], mdir[4200];
    if (!r->warm) ++seq; /* a warm run: the previous run's manifest again, its entries in the remote */
    snprintf(nonce, sizeof nonce, "%ld-%d-%.0f", (long)getpid(), seq, now_us());
    snprintf(mdir, sizeof mdir, "%s/manifest-%d", p->root, seq);
    r->hosts = p->hosts, r->graphs = p->graphs, r->srv_in = r->srv_out = -1;
    snprintf(r->url, sizeof r->url, "%s", url);
    int lid = kc_config_find("remote_lease_ms");
    const kc_config_row *row = lid >= 0 ? kc_config_row_of(lid) : NULL;
    long def = row ? atol(row->def) : 0;
    run_cfg rc = {p, url, mdir, row ? row->env : NULL, ""};
    r->lease_ms = !row ? -1 : r->leases ? (def > 0 ? def : 30000) : 0;
    snprintf(rc.lease_val, sizeof rc.lease_val, "%ld", r->lease_ms);
    if (!r->warm && cold_manifest(mdir, p->graphs, nonce)) {
        snprintf(r->why, sizeof r->why, "could not write the synthetic manifest in %s", mdir);
        return;
    }
    host_rec *recs = mmap(NULL, sizeof *recs * (size_t)p->hosts, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
                          0);
    if (recs == MAP_FAILED) {
        snprintf(r->why, sizeof r->why, "no shared memory for %d hosts", p->hosts);
        return;
    }
    long long a[4], b[4];
    redis_counters(url, a);
    if (run_hosts(&rc, recs, r, server, sdir) == 0) {
        redis_counters(url, b); /* less than before: the server restarted (not read) */
        if (a[0] >= 0 && b[0] >= a[0] && b[1] >= a[1] && b[2] >= a[2] + 2)
            r->srv_in = b[0] - a[0], r->srv_out = b[1] - a[1], r->srv_cmds = b[2] - a[2] - 1, r->srv_usec = b[3] - a[3];
        tally(recs, p, r);
        r->have = 1;
    }
    munmap(recs, sizeof *recs * (size_t)p->hosts);
    for (int h = 0; h < p->hosts; h++) {
        char hd[4300];
        snprintf(hd, sizeof hd, "%s/host%03d", p->root, h);
        rm_rf(hd);
    }
}

/* The runs of one remote: leases on, off, and disrupted where its script has a verb for it. */
static void fleet_remote(const fleet_plan *p, const char *server, const char *url, const char *sdir,
                         fleet_result *out) {
    const char *verb = !strcmp(server, "redis_cluster") ? "kill-master"
                       : !strcmp(server, "nginx_dav")   ? "restart"
                                                        : NULL;
    int has_lease = kc_config_find("remote_lease_ms") >= 0;
    /* k: 0 cold with the lease, 1 warm (the same manifest again, fresh hosts), 2 cold without, 3 disrupted */
    for (int k = 0; k < (verb ? 4 : 3) && out->nruns < FLEET_MAX_RUNS; k++) {
        if (k == 2 && !has_lease) continue; /* no lease in this build: run 0 was without */
        fleet_run *r = &out->runs[out->nruns++];
        memset(r, 0, sizeof *r);
        r->leases = k != 2 && has_lease;
        r->warm = k == 1;
        snprintf(r->server, sizeof r->server, "%s", *server ? server : "url");
        if (k == 3) snprintf(r->disruption, sizeof r->disruption, "%s", verb);
        snprintf(r->label, sizeof r->label, "%s, %s%s%s", *server ? server : "url",
                 k == 1      ? "warm remote"
                 : r->leases ? "leases"
                             : "no leases",
                 k == 3 ? ", " : "", k == 3 ? verb : "");
        fleet_once(p, server, url, sdir, r);
        print_fleet_run(r, out->nruns == 1);
    }
}

/* The server running now, stopped by on_signal when the benchmark is interrupted (SIGINT, SIGTERM). */
static char live_script[4200], live_dir[4200];
static volatile sig_atomic_t live;
static pid_t live_parent;

/* Stop the server running now (fork and exec: async-signal-safe), then die of the signal. */
static void on_signal(int sig) {
    if (live && getpid() == live_parent) {
        pid_t k = fork();
        if (k == 0) {
            execl("/bin/bash", "bash", live_script, "stop", live_dir, (char *)NULL);
            _exit(127);
        }
        if (k > 0) waitpid(k, NULL, 0);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* What a script that failed to start said (its log), on stderr. */
static void show_log(const char *sdir, const char *name) {
    char path[4300], line[512];
    snprintf(path, sizeof path, "%s/%s.log", sdir, name);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) fprintf(stderr, "  %s.sh: %s", name, line);
    if (f) fclose(f);
}

/*
 * DIR/env's `export NAME=VALUE` lines (a value optionally in single or double quotes) into this process's
 * environment, which the hosts inherit (the server's CA file, credentials); `unset` 1: remove them again.
 */
static void server_env(const char *sdir, int unset) {
    char path[4300], line[4096];
    snprintf(path, sizeof path, "%s/env", sdir);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *eq = strchr(line, '='), *v = eq + 1;
        if (strncmp(line, "export ", 7) || !eq) continue;
        *eq = 0;
        size_t n = strlen(v);
        if (n >= 2 && (v[0] == '\'' || v[0] == '"') && v[n - 1] == v[0]) v[n - 1] = 0, v++;
        if (unset) unsetenv(line + 7);
        else setenv(line + 7, v, 1);
    }
    if (f) fclose(f);
}

/* Start server `name` in a folder of its own, run its remote, stop it (also when interrupted). */
static void fleet_server(const fleet_plan *p, const char *name, fleet_result *out) {
    char script[4200], sdir[4200], upath[4300], url[300] = "";
    snprintf(script, sizeof script, "%s/%s.sh", p->servers_dir, name);
    snprintf(sdir, sizeof sdir, "%s/server-%s", p->root, name);
    char(*skip)[300] = out->skipped[out->nskip < FLEET_MAX_SERVERS ? out->nskip : FLEET_MAX_SERVERS - 1];
    snprintf(skip[0], sizeof skip[0], "%s", name);
    if (access(script, R_OK)) {
        snprintf(skip[1], sizeof skip[1], "no tests/servers/%s.sh in this tree", name);
        out->nskip += out->nskip < FLEET_MAX_SERVERS;
        return;
    }
    mkdir(sdir, 0700);
    snprintf(live_script, sizeof live_script, "%s", script);
    snprintf(live_dir, sizeof live_dir, "%s", sdir);
    live_parent = getpid(), live = 1;
    signal(SIGINT, on_signal), signal(SIGTERM, on_signal);
    int st = server_cmd(p, name, "start", sdir);
    snprintf(upath, sizeof upath, "%s/url", sdir);
    FILE *f = st == 0 ? fopen(upath, "r") : NULL;
    if (f && fgets(url, sizeof url, f)) url[strcspn(url, "\r\n")] = 0;
    if (f) fclose(f);
    if (st || !url[0]) {
        snprintf(skip[1], sizeof skip[1],
                 st == 77 ? "its server is not installed here (%s.sh exit 77)"
                          : "%s.sh start failed (exit %d; its output is on stderr)",
                 name, st);
        out->nskip += out->nskip < FLEET_MAX_SERVERS;
        if (st != 77) show_log(sdir, name);
    } else {
        server_env(sdir, 0);
        fleet_remote(p, name, url, sdir, out);
        server_env(sdir, 1);
    }
    server_cmd(p, name, "stop", sdir);
    live = 0;
    signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL);
}

int fleet_nvrtc_check(void) {
    fflush(NULL);
    pid_t k = fork();
    if (k == 0) {
        if (kc_nvrtc_available() != KC_OK) fprintf(stderr, "kcache-bench: %s\n", kc_error_last()->message);
        _exit(kc_nvrtc_available() == KC_OK ? 0 : 1);
    }
    int st = 0;
    return k < 0 || waitpid(k, &st, 0) != k || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

int bench_fleet(const fleet_plan *p, fleet_result *out) {
    memset(out, 0, sizeof *out);
    if (p->remote) {
        fleet_remote(p, "", p->remote, p->root, out);
    } else {
        char list[1024];
        snprintf(list, sizeof list, "%s", p->servers);
        for (char *save, *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) fleet_server(p, s, out);
    }
    int bad = out->nruns == 0;
    for (int i = 0; i < out->nruns; i++) {
        const fleet_run *r = &out->runs[i];
        bad |= !r->have || r->failed || r->wrong || r->units_seen != r->units_stats || r->distinct_max > 1 ||
               r->lookups_stats != (long)r->hosts * r->graphs || (r->disruption[0] && !r->disrupted);
    }
    return bad;
}

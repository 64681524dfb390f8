/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet.h — the fleet simulation's plan and results (fleet.c runs it, fleet_report.c prints it).
 *
 * One idea: N processes, each a host with its own cache directory, start together on a cold synthetic
 * manifest against one remote, and what they did is read back from their own results and their own stats.
 * Must not: measure anything itself; it only names what the two files share.
 */
#ifndef KCACHE_BENCH_FLEET_H
#define KCACHE_BENCH_FLEET_H

#include <stdint.h>
#include <stdio.h>

#include "bench.h"

#ifndef KC_SERVERS_DIR
#define KC_SERVERS_DIR "tests/servers"
#endif

#define FLEET_MAX_GRAPHS 8
#define FLEET_MAX_HOSTS 1024
#define FLEET_MAX_RUNS 16
#define FLEET_MAX_SERVERS 8

/** What the fleet mode runs: hosts, graphs, and the remote (a URL, or server scripts by name). */
typedef struct fleet_plan {
    int hosts, graphs;
    const char *remote;      /**< a URL given: only it (no servers started) */
    const char *servers;     /**< comma-separated script names under servers_dir */
    const char *servers_dir; /**< tests/servers */
    const char *root;        /**< scratch folder */
} fleet_plan;

/** One run: every host through every graph against one remote, leases on or off, disrupted or not. */
typedef struct fleet_run {
    char label[96], server[32], url[300], disruption[64];
    int leases;    /**< 1: the build's default lease; 0: remote_lease_ms=0 (or no lease in this build) */
    int warm;      /**< 1: the previous run's manifest again (its entries in the remote), fresh hosts */
    long lease_ms; /**< the lease the hosts used (-1: this build has no lease setting) */
    int have;      /**< 0: not measured (why) */
    char why[512];
    int hosts, graphs;
    double wall_s;  /**< barrier release to the last host done */
    double ready_s; /**< the first fork to every host ready (its cache open, its specs read) */
    double lookups_per_s, p50_us, p99_us;
    double remote_p50_us, remote_p99_us; /**< the remote hits' alone */
    int compiles_min, compiles_max;      /**< NVRTC compiles per key over the graphs (goal 1 with leases) */
    double compiles_mean;
    long units_seen, units_stats; /**< NVRTC compiles: what the lookups said, what the hosts' stats counted */
    long lookups_stats;           /**< outcomes the hosts' stats counted (one per lookup) */
    long remote_hits, compiled, disk_hits;
    long failed, wrong,
        unverified;      /**< lookups that failed; kernels not the bytes compiled for their key; not checked */
    int distinct_max;    /**< distinct image sets per key at most (1: every host the same bytes) */
    uint64_t bytes_held; /**< the hosts' stats "bytes", summed: what landed in their caches */
    uint64_t tier_reads, tier_writes, tier_errors; /**< the remote tier's objects read, written, failed (all hosts) */
    uint64_t lease_stats[8];                       /**< the hosts' lease counters (kc_cache_lease_stats), summed */
    char lease_names[8][40];
    int nlease;
    long long srv_in, srv_out;    /**< a plain Redis's own network bytes in/out over the run (-1: not read) */
    long long srv_cmds, srv_usec; /**< its commands over the run, and the microseconds it spent in them */
    int disrupted;                /**< 1: the disruption ran while hosts were running */
} fleet_run;

typedef struct fleet_result {
    int nruns, nskip;
    fleet_run runs[FLEET_MAX_RUNS];
    char skipped[FLEET_MAX_SERVERS][2][300]; /**< server, why */
} fleet_result;

/** Whether NVRTC is there, asked in a child process (this one's settings stay unread until each host reads
 *  its own, after a server's environment is set); 0, or 1 (said on stderr). */
int fleet_nvrtc_check(void);
/** Run the plan (prints as it goes) into *out; 0 when every run was measured and clean, 1 otherwise. */
int bench_fleet(const fleet_plan *p, fleet_result *out);
/** A run's line of the table (and its header when `header`). */
void print_fleet_run(const fleet_run *r, int header);
/** `"fleet": {...}` (no separator after it). */
void json_fleet(FILE *f, const fleet_plan *p, const fleet_result *r);

#endif

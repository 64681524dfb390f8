/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet_report.c — the fleet simulation's table and JSON (fleet.c measures).
 *
 * One idea: print each run as one line of one table (its consistency checks beside its figures), and the
 * same numbers as JSON, so a reader can check what the hosts said against what their stats counted.
 * Must not: compute anything fleet.c did not measure (ratios of what it measured only).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fleet.h"

static void fmt_bytes(double b, char *out, size_t cap) {
    if (b < 0) snprintf(out, cap, "-");
    else if (b >= 1 << 20) snprintf(out, cap, "%.1f MiB", b / (1 << 20));
    else if (b >= 1 << 10) snprintf(out, cap, "%.1f KiB", b / (1 << 10));
    else snprintf(out, cap, "%.0f B", b);
}

void print_fleet_run(const fleet_run *r, int header) {
    if (header)
        printf("%-40s %5s %7s %11s %9s %9s %9s %6s %6s %6s %10s %10s\n", "run", "hosts", "lookups", "NVRTC/key",
               "lookups/s", "p50", "p99", "remote", "failed", "wrong", "held", "wire");
    if (!r->have) {
        printf("%-40s not measured: %s\n", r->label, r->why);
        return;
    }
    char p50[32], p99[32], held[32], wire[32], per_key[32];
    fmt_us(r->p50_us, p50, sizeof p50);
    fmt_us(r->p99_us, p99, sizeof p99);
    fmt_bytes((double)r->bytes_held, held, sizeof held);
    fmt_bytes(r->srv_in < 0 ? -1 : (double)(r->srv_in + r->srv_out), wire, sizeof wire);
    snprintf(per_key, sizeof per_key, r->compiles_min == r->compiles_max ? "%d" : "%d..%d", r->compiles_min,
             r->compiles_max);
    printf("%-40s %5d %7d %11s %9.1f %9s %9s %6ld %6ld %6ld %10s %10s\n", r->label, r->hosts, r->hosts * r->graphs,
           per_key, r->lookups_per_s, p50, p99, r->remote_hits, r->failed, r->wrong, held, wire);
    printf(
        "    %.2f s (hosts ready in %.2f s before); outcomes: %ld compiled, %ld remote, %ld disk; NVRTC compiles said %ld, stats %ld%s; "
        "lookups in stats %ld%s\n",
        r->wall_s, r->ready_s, r->compiled, r->remote_hits, r->disk_hits, r->units_seen, r->units_stats,
        r->units_seen == r->units_stats ? "" : " (DIFFER)", r->lookups_stats,
        r->lookups_stats == (long)r->hosts * r->graphs ? "" : " (not one per lookup)");
    char rp50[32], rp99[32];
    fmt_us(r->remote_p50_us, rp50, sizeof rp50);
    fmt_us(r->remote_p99_us, rp99, sizeof rp99);
    printf("    remote hits alone: p50 %s, p99 %s", rp50, rp99);
    if (r->srv_in >= 0)
        printf(
            "; the Redis: %lld commands, %.1f per lookup, %lld us in them (%.1f us a command), %lld B in, %lld B out",
            r->srv_cmds, (double)r->srv_cmds / (r->hosts * r->graphs), r->srv_usec,
            r->srv_cmds ? (double)r->srv_usec / r->srv_cmds : 0.0, r->srv_in, r->srv_out);
    printf("\n");
    printf("    lease %s; remote objects read %llu, written %llu, errors %llu; distinct images per key at most %d%s%s",
           r->lease_ms < 0 ? "not in this build"
           : r->lease_ms   ? "on"
                           : "off (remote_lease_ms=0)",
           (unsigned long long)r->tier_reads, (unsigned long long)r->tier_writes, (unsigned long long)r->tier_errors,
           r->distinct_max, r->distinct_max > 1 ? " (DIFFER: one key, different bytes)" : "",
           r->unverified ? "; lookups not checked: " : "");
    if (r->unverified) printf("%ld", r->unverified);
    for (int i = 0; i < r->nlease; i++)
        printf("%s%s %llu", i ? ", " : "; lease counters: ", r->lease_names[i], (unsigned long long)r->lease_stats[i]);
    printf("\n");
    if (r->disruption[0])
        printf("    disruption: %s %s once half the hosts had their first lookup%s%s\n", r->server, r->disruption,
               r->disrupted ? "" : " — FAILED: ", r->disrupted ? "" : r->why);
    else if (r->why[0]) printf("    %s\n", r->why);
}

static void json_run(FILE *f, const fleet_run *r) {
    fprintf(f,
            "{\"label\": \"%s\", \"server\": \"%s\", \"leases\": %s, \"warm\": %s, \"lease_ms\": %ld, \"disruption\": ",
            r->label, r->server, r->leases ? "true" : "false", r->warm ? "true" : "false", r->lease_ms);
    if (r->disruption[0]) fprintf(f, "\"%s\", \"disrupted\": %s, ", r->disruption, r->disrupted ? "true" : "false");
    else fprintf(f, "null, ");
    fprintf(f, "\"measured\": %s, ", r->have ? "true" : "false");
    if (!r->have) {
        fprintf(f, "\"why\": \"");
        jesc(f, r->why);
        fprintf(f, "\"}");
        return;
    }
    fprintf(f, "\"hosts\": %d, \"graphs\": %d, \"lookups\": %d, ", r->hosts, r->graphs, r->hosts * r->graphs);
    fprintf(f, "\"nvrtc_compiles_per_key\": {\"min\": %d, \"max\": %d, \"mean\": %.4g}, ", r->compiles_min,
            r->compiles_max, r->compiles_mean);
    fprintf(f, "\"nvrtc_compiles\": %ld, \"nvrtc_compiles_in_stats\": %ld, \"lookups_in_stats\": %ld, ", r->units_seen,
            r->units_stats, r->lookups_stats);
    jnum(f, "wall_s", r->wall_s, 0);
    jnum(f, "ready_s", r->ready_s, 0);
    jnum(f, "lookups_per_s", r->lookups_per_s, 0);
    jnum(f, "p50_us", r->p50_us, 0);
    jnum(f, "p99_us", r->p99_us, 0);
    jnum(f, "remote_hit_p50_us", r->remote_p50_us, 0);
    jnum(f, "remote_hit_p99_us", r->remote_p99_us, 0);
    fprintf(f, "\"compiled\": %ld, \"remote_hits\": %ld, \"disk_hits\": %ld, \"failed\": %ld, \"wrong\": %ld, ",
            r->compiled, r->remote_hits, r->disk_hits, r->failed, r->wrong);
    fprintf(f, "\"unverified\": %ld, \"distinct_images_per_key_max\": %d, \"bytes_held\": %llu, ", r->unverified,
            r->distinct_max, (unsigned long long)r->bytes_held);
    fprintf(f, "\"remote_reads\": %llu, \"remote_writes\": %llu, \"remote_errors\": %llu, ",
            (unsigned long long)r->tier_reads, (unsigned long long)r->tier_writes, (unsigned long long)r->tier_errors);
    if (r->srv_in < 0) fprintf(f, "\"server_bytes_in\": null, \"server_bytes_out\": null, ");
    else
        fprintf(f,
                "\"server_bytes_in\": %lld, \"server_bytes_out\": %lld, \"server_commands\": %lld, "
                "\"server_usec\": %lld, ",
                r->srv_in, r->srv_out, r->srv_cmds, r->srv_usec);
    fprintf(f, "\"lease_stats\": {");
    for (int i = 0; i < r->nlease; i++)
        fprintf(f, "%s\"%s\": %llu", i ? ", " : "", r->lease_names[i], (unsigned long long)r->lease_stats[i]);
    fprintf(f, "}}");
}

void json_fleet(FILE *f, const fleet_plan *p, const fleet_result *r) {
    fprintf(f, "\"fleet\": {\"arch\": \"%s\", \"hosts\": %d, \"graphs\": %d, \"runs\": [", arch, p->hosts, p->graphs);
    for (int i = 0; i < r->nruns; i++) {
        if (i) fprintf(f, ", ");
        json_run(f, &r->runs[i]);
    }
    fprintf(f, "], \"not_run\": [");
    for (int i = 0; i < r->nskip; i++) {
        fprintf(f, "%s{\"server\": \"%s\", \"why\": \"", i ? ", " : "", r->skipped[i][0]);
        jesc(f, r->skipped[i][1]);
        fprintf(f, "\"}");
    }
    fprintf(f, "]}");
}

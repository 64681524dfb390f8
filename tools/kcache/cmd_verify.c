/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_verify.c — `kcache verify`: decode and validate every entry and image, follow every
 * reference from a graph entry or unit record to its image; with --repair, corrupt ones move to
 * v1/quarantine/ (without it, verify only reads: nothing in the directory changes).  Exits 1 when
 * a corrupt entry or a bad reference was found; dangling entries
 * whose image is merely missing (an evicted image: a miss) and stale entries of an older format
 * are reported and left for `kcache gc`.
 *
 * The one idea: the work is the library's (kc_cache_verify); this file only reports it.
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static int cmd_verify(const cli_settings *cs, int argc, char **argv);

static const cli_opt verify_opts[] = {
    {"repair", 0, NULL, "move corrupt entries to v1/quarantine/ (without it, verify only reads)"},
    {"signatures", 0, NULL, "also check every object's signature against KCACHE_KEYRING"},
    {"json", 0, NULL, "print one JSON object"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_verify = {
    "verify",
    "kcache verify [--repair] [--signatures] [--json]",
    "Decode and validate every entry and image (both digests of its bytes); check that\n"
    "every image a graph entry or unit record refers to is present and sound.  It only reads:\n"
    "nothing in the cache directory changes.  --repair: move corrupt ones to v1/quarantine/\n"
    "(lookups already treat them as misses).  Entries whose image is missing (dangling) and\n"
    "entries of an older format (stale) are reported; 'kcache gc' removes them.\n"
    "Exits 1 when a corrupt entry or a bad reference was found.\n"
    "--signatures: also check every object's Ed25519 signature against KCACHE_KEYRING; exits 1\n"
    "when one is unsigned or not signed by a trusted key (KCACHE_LOG=store names them).",
    cmd_verify,
    verify_opts,
    CLI_OPERANDS_NONE};

static int cmd_verify(const cli_settings *cs, int argc, char **argv) {
    cli_args a;
    cli_parse(&cli_cmd_verify, argc, argv, 0, &a);
    cli_opts o = {.json = cli_flag(&a, "json")};
    int sigs = cli_flag(&a, "signatures"), repair = cli_flag(&a, "repair");
    kc_cache *c;
    if ((repair ? cli_open_cache : cli_open_cache_readonly)(cs, &c)) return EXIT_PROBLEM;
    kc_verify_report r = KC_VERIFY_REPORT_INIT;
    kc_signature_report sr = KC_SIGNATURE_REPORT_INIT;
    int rc = kc_cache_verify(c, &r);
    if (rc == KC_OK && sigs) rc = kc_cache_verify_signatures(c, &sr);
    kc_cache_close(c);
    if (rc != KC_OK) return cli_fail("verify failed");
    if (o.json) {
        int first = 1;
        printf("{");
        json_kv_u64(stdout, &first, "checked", r.checked);
        json_kv_u64(stdout, &first, "ok", r.ok);
        json_kv_u64(stdout, &first, "corrupt", r.corrupt);
        json_kv_u64(stdout, &first, "quarantined", r.quarantined);
        json_kv_u64(stdout, &first, "stale", r.stale);
        json_kv_u64(stdout, &first, "images_checked", r.images_checked);
        json_kv_u64(stdout, &first, "refs_checked", r.refs_checked);
        json_kv_u64(stdout, &first, "missing_refs", r.missing_refs);
        json_kv_u64(stdout, &first, "bad_refs", r.bad_refs);
        json_kv_u64(stdout, &first, "dangling", r.dangling);
        if (sigs) {
            json_kv_u64(stdout, &first, "signed_ok", sr.signed_ok);
            json_kv_u64(stdout, &first, "unsigned", sr.unsigned_);
            json_kv_u64(stdout, &first, "signature_refused", sr.refused);
        }
        printf("}\n");
    } else {
        printf("checked %llu, ok %llu, corrupt %llu, quarantined %llu, stale %llu\n", (unsigned long long)r.checked,
               (unsigned long long)r.ok, (unsigned long long)r.corrupt, (unsigned long long)r.quarantined,
               (unsigned long long)r.stale);
        printf("images checked %llu; references checked %llu: %llu missing, %llu bad; %llu dangling entries\n",
               (unsigned long long)r.images_checked, (unsigned long long)r.refs_checked,
               (unsigned long long)r.missing_refs, (unsigned long long)r.bad_refs, (unsigned long long)r.dangling);
        if (r.dangling || r.stale) printf("'kcache gc' removes dangling and stale entries\n");
        if (r.corrupt > r.quarantined && !repair)
            printf("'kcache verify --repair' moves corrupt ones to v1/quarantine/\n");
        if (sigs)
            printf(
                "signatures: %llu signed by a trusted key, %llu unsigned, %llu refused (another key, or not matching)\n",
                (unsigned long long)sr.signed_ok, (unsigned long long)sr.unsigned_, (unsigned long long)sr.refused);
    }
    return r.corrupt || r.bad_refs || sr.unsigned_ || sr.refused ? EXIT_PROBLEM : 0;
}

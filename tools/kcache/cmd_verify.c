/*
 * cmd_verify.c — `kcache verify`: decode and validate every entry; corrupt ones move to
 * v1/quarantine/.  Exits 1 when a corrupt entry was found.
 *
 * The one idea: the work is the library's (kc_cache_verify); this file only reports it.
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>

#include "cli.h"
#include "json.h"

static int cmd_verify(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_verify = {
    "verify", "kcache verify [--json]",
    "Decode and validate every entry; move corrupt ones to v1/quarantine/.\n"
    "Exits 1 when a corrupt entry was found.",
    cmd_verify};

static int cmd_verify(const cli_settings *cs, int argc, char **argv) {
    cli_opts o;
    cli_parse_opts(&cli_cmd_verify, argc, argv, &o, 1, 0, 0);
    kc_cache *c;
    if (cli_open_cache(cs, &c)) return EXIT_PROBLEM;
    kc_verify_report r;
    int rc = kc_cache_verify(c, &r);
    kc_cache_close(c);
    if (rc != KC_OK) return cli_fail("verify failed");
    if (o.json) {
        int first = 1;
        printf("{");
        json_kv_u64(stdout, &first, "checked", r.checked);
        json_kv_u64(stdout, &first, "ok", r.ok);
        json_kv_u64(stdout, &first, "corrupt", r.corrupt);
        json_kv_u64(stdout, &first, "quarantined", r.quarantined);
        printf("}\n");
    } else {
        printf("checked %llu, ok %llu, corrupt %llu, quarantined %llu\n", (unsigned long long)r.checked,
               (unsigned long long)r.ok, (unsigned long long)r.corrupt, (unsigned long long)r.quarantined);
    }
    return r.corrupt ? EXIT_PROBLEM : 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_clear.c — `kcache clear`: remove every entry and the quarantine.
 *
 * The one idea: the work is the library's (kc_cache_clear); no confirmation, no output but
 * "cleared".  Only main.c's command table refers to this file; it opens the cache through
 * cli_open_cache().
 */
#include <stdio.h>

#include "cli.h"

static int cmd_clear(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_clear = {
    "clear",   "kcache clear", "Remove every entry and the quarantine (ccache -C: kcache -C).",
    cmd_clear, NULL,           CLI_OPERANDS_NONE};

static int cmd_clear(const cli_settings *cs, int argc, char **argv) {
    cli_args a;
    cli_parse(&cli_cmd_clear, argc, argv, 0, &a);
    kc_cache *c;
    if (cli_open_cache(cs, &c)) return EXIT_PROBLEM;
    int rc = kc_cache_clear(c);
    kc_cache_close(c);
    if (rc != KC_OK) return cli_fail("clear failed");
    printf("cleared\n");
    return 0;
}

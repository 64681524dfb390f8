/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_keygen.c — `kcache keygen PREFIX`: make an Ed25519 key pair for signing entries
 * (kcache/sign.h): PREFIX.key, the producer's private key (mode 0600, never replaced), and
 * PREFIX.pub, the public key consumers put in their keyring.
 *
 * The one idea: the work is the library's (kc_sign_keygen); this prints the key id and where the
 * two files went.  Only main.c's command table refers to this file; it opens no cache.
 */
#include <stdio.h>

#include "cli.h"

static int cmd_keygen(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_keygen = {
    "keygen",
    "kcache keygen PREFIX",
    "Make an Ed25519 key pair for signing entries: PREFIX.key (the producer's private key, mode\n"
    "0600; an existing one is never replaced) and PREFIX.pub (for the consumers' keyring).",
    cmd_keygen,
    NULL,
    CLI_OPERANDS_FILES};

static int cmd_keygen(const cli_settings *cs, int argc, char **argv) {
    (void)cs;
    cli_args o;
    cli_parse(&cli_cmd_keygen, argc, argv, 1, &o);
    if (o.npos != 1) return cli_usage_error(&cli_cmd_keygen, "name the files' PREFIX", NULL);
    char id[2 * KC_SIGN_KEY_ID_LEN + 1];
    if (kc_sign_keygen(o.pos[0], id) != KC_OK) return cli_fail("keygen failed");
    printf("key %s: private %s.key (keep it on the build host), public %s.pub (for every keyring)\n", id, o.pos[0],
           o.pos[0]);
    return 0;
}

/*
 * main.c — the `kcache` command-line tool: inspect and maintain a cache directory.
 *
 *   kcache [--cache-dir DIR] [--remote URL] [--allow-unsafe-dir] COMMAND [OPTIONS]
 *
 * This file holds only the global options and the table of commands; each command is a
 * cli_cmd (name, usage, help, run) in its own cmd_<name>.c, with its own options and --help,
 * and what several commands share is in cli.c.  The one idea: the global options are parsed
 * once into a cli_settings that is handed to the command, which opens its cache with them
 * through cli_open_cache() — the command line reaches the library as kc_options fields, never
 * through the environment (nothing in the tool writes to it).
 *
 * Output for people goes to stdout; --json output is one JSON value on stdout; errors go to
 * stderr with a non-zero exit (1: the command failed or found a problem; 2: bad usage).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "kcache.h"

extern const cli_cmd cli_cmd_limit;  /* cmd_limit.c */
extern const cli_cmd cli_cmd_config; /* cmd_config.c */

/* The commands, in the order `kcache --help` lists them. */
static const cli_cmd *const commands[] = {
    &cli_cmd_stats, &cli_cmd_ls,        &cli_cmd_show,     &cli_cmd_verify, &cli_cmd_gc,     &cli_cmd_limit,
    &cli_cmd_clear, &cli_cmd_get,       &cli_cmd_prewarm,  &cli_cmd_export, &cli_cmd_import, &cli_cmd_explain,
    &cli_cmd_demo,  &cli_cmd_toolchain, &cli_cmd_coverage, &cli_cmd_keygen, &cli_cmd_sign,   &cli_cmd_config,
};

static void main_usage(FILE *f) {
    fprintf(f, "usage: kcache [--cache-dir DIR] [--remote URL] [--allow-unsafe-dir] COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i]->name, commands[i]->usage);
    fprintf(f, "\n'kcache COMMAND --help' describes a command.\n"
               "--remote redis://[:password@]host:port[/db] adds the fleet's shared tier to any command.\n"
               "--allow-unsafe-dir accepts a cache directory others could write to or swap (as\n"
               "KCACHE_ALLOW_UNSAFE_DIR=1); without it such a directory is refused.\n\n");
    cli_config_env_help(f); /* generated from the settings table (cmd_config.c) */
}

int main(int argc, char **argv) {
    cli_settings s = {NULL, NULL, 0};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--cache-dir") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "kcache: --cache-dir needs a directory\n");
                return EXIT_USAGE;
            }
            s.dir = argv[++i];
        } else if (strncmp(argv[i], "--cache-dir=", 12) == 0) {
            s.dir = argv[i] + 12;
        } else if (strcmp(argv[i], "--remote") == 0 || strncmp(argv[i], "--remote=", 9) == 0) {
            const char *url = argv[i][8] == '=' ? argv[i] + 9 : i + 1 < argc ? argv[++i] : NULL;
            if (!url) {
                fprintf(stderr, "kcache: --remote needs a URL (redis://host:port/db)\n");
                return EXIT_USAGE;
            }
            s.remote = url; /* wins over KCACHE_REMOTE (cli_open_cache) */
        } else if (strcmp(argv[i], "--allow-unsafe-dir") == 0) {
            s.allow_unsafe_dir = 1; /* adds to KCACHE_ALLOW_UNSAFE_DIR */
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            main_usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("kcache %s\n", kc_version());
            return 0;
        } else {
            fprintf(stderr, "kcache: unknown option '%s'\n", argv[i]);
            main_usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (s.dir && !*s.dir) { /* never "the default": `--cache-dir "" clear` must not empty ~/.cache/kcache */
        fprintf(stderr, "kcache: --cache-dir is empty: name a directory, or leave the option out for the default\n");
        return EXIT_USAGE;
    }
    if (i >= argc) {
        main_usage(stderr);
        return EXIT_USAGE;
    }
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (strcmp(argv[i], commands[k]->name) == 0) return commands[k]->run(&s, argc - i, argv + i);
    fprintf(stderr, "kcache: unknown command '%s'\n", argv[i]);
    main_usage(stderr);
    return EXIT_USAGE;
}

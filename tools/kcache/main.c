/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c — the `kcache` command-line tool: inspect and maintain a cache directory.
 *
 *   kcache [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]
 *   kcache -s | -z | -C | -M SIZE | -V | -h        (ccache's short forms)
 *
 * This file holds only the global options (a cli_opt table, parsed with getopt_long) and the
 * table of commands; each command is a cli_cmd (name, usage, help, run, options) in its own
 * cmd_<name>.c, and what several commands share is in cli.c and cli_opt.c.  The one idea: the
 * global options are parsed once into a cli_settings that is handed to the command, which opens
 * its cache with them through cli_open_cache() — the command line reaches the library as
 * kc_options fields, never through the environment (nothing in the tool writes to it).
 * ccache's action options run a command as it would run: -s is `stats`, -C `clear`, -M SIZE
 * `limit SIZE`, -z zeroes the statistics (`stats --zero` without the report); several run in
 * the order given, and no COMMAND may follow them.
 *
 * Output for people goes to stdout; --json output is one JSON value on stdout; errors go to
 * stderr with a non-zero exit (1: the command failed or found a problem; 2: bad usage).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "kcache.h"

extern const cli_cmd cli_cmd_limit;                    /* cmd_limit.c */
extern const cli_cmd cli_cmd_config;                   /* cmd_config.c */
extern const cli_cmd cli_cmd_purge;                    /* cmd_purge.c */
extern const cli_cmd cli_cmd_help, cli_cmd_completion; /* cmd_help.c */
extern const cli_cmd cli_cmd_compile;                  /* cmd_compile.c */

/* The commands, in the order `kcache --help` lists them. */
const cli_cmd *const cli_commands[] = {
    &cli_cmd_stats,
    &cli_cmd_ls,
    &cli_cmd_show,
    &cli_cmd_verify,
    &cli_cmd_gc,
    &cli_cmd_purge,
    &cli_cmd_limit,
    &cli_cmd_clear,
    &cli_cmd_get,
    &cli_cmd_prewarm,
    &cli_cmd_export,
    &cli_cmd_import,
    &cli_cmd_compile,
    &cli_cmd_explain,
    &cli_cmd_demo,
    &cli_cmd_toolchain,
    &cli_cmd_coverage,
    &cli_cmd_keygen,
    &cli_cmd_sign,
    &cli_cmd_config,
    &cli_cmd_help,
    &cli_cmd_completion,
    NULL,
};

const cli_opt cli_global_opts[] = {
    {"cache-dir", 'd', "DIR", "the cache directory (else KCACHE_DIR, else ~/.cache/kcache)"},
    {"remote", 0, "URL", "the fleet's remote tiers, as KCACHE_REMOTE (\"\" turns it off)"},
    {"allow-unsafe-dir", 0, NULL, "accept a directory others could write to or swap"},
    {"show-stats", 's', NULL, "show the statistics (kcache stats)"},
    {"zero-stats", 'z', NULL, "zero the statistics (the event counters)"},
    {"clear", 'C', NULL, "remove every entry (kcache clear)"},
    {"max-size", 'M', "SIZE", "record SIZE as the directory's limit (kcache limit SIZE)"},
    {"version", 'V', NULL, "print the version and exit"},
    {"help", 'h', NULL, "show this help and exit"},
    {NULL, 0, NULL, NULL},
};

void cli_main_usage(FILE *f) {
    fprintf(f, "usage: kcache [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]\n"
               "       kcache -s | -z | -C | -M SIZE | -V | -h\n\ncommands:\n");
    for (size_t i = 0; cli_commands[i]; i++) fprintf(f, "  %-10s %s\n", cli_commands[i]->name, cli_commands[i]->usage);
    fprintf(f, "\nglobal options (before the command):\n");
    cli_print_opts(f, cli_global_opts);
    fprintf(f, "\n'kcache help COMMAND' (or 'kcache COMMAND --help') describes a command; 'kcache help --man'\n"
               "prints the manual page.  --remote URL adds the fleet's shared tiers to any command:\n"
               "redis://[user:password@]host:port[/db], rediss:// (TLS), redis+cluster://host:port,...,\n"
               "http(s)://host/base (WebDAV, bazel-remote), s3://bucket/prefix; docs/fleet.md has\n"
               "each.  --allow-unsafe-dir accepts a cache directory others could write to or\n"
               "swap (as KCACHE_ALLOW_UNSAFE_DIR=1); without it such a directory is refused.\n"
               "Exit status: 0 success, 1 the command failed or found a problem, 2 bad usage.\n\n");
    cli_config_env_help(f); /* generated from the settings table (cmd_config.c) */
}

static int main_usage_error(const char *what) {
    static char m[4 * 1024 + 1]; /* shown escaped: it may quote the command line */
    fprintf(stderr, "kcache: %s; try 'kcache help'\n", cli_shown(what, m, sizeof m));
    return EXIT_USAGE;
}

/* Zero the statistics' event counters, as `stats --zero` does, and say so (ccache -z). */
static int zero_stats(const cli_settings *s) {
    kc_cache *c;
    if (cli_open_cache(s, &c)) return EXIT_PROBLEM;
    int rc = kc_cache_stats_zero(c);
    kc_cache_close(c);
    if (rc != KC_OK) return cli_fail("cannot zero the statistics");
    printf("statistics zeroed\n");
    return 0;
}

/* Run one of ccache's action options ('s', 'z', 'C', 'M' with its SIZE). */
static int run_action(const cli_settings *s, int ch, char *size) {
    char name_stats[] = "stats", name_clear[] = "clear", name_limit[] = "limit", dashes[] = "--";
    char *av[4] = {NULL, dashes, size, NULL}; /* `limit -- SIZE`: a SIZE such as "--json" is a value, never an option */
    switch (ch) {
    case 's': av[0] = name_stats, av[1] = NULL; return cli_cmd_stats.run(s, 1, av);
    case 'C': av[0] = name_clear, av[1] = NULL; return cli_cmd_clear.run(s, 1, av);
    case 'M': av[0] = name_limit; return cli_cmd_limit.run(s, 3, av);
    default: return zero_stats(s);
    }
}

/* Parse the global options into *s and the actions; the index of the command, or -(exit code) - 1. */
static int parse_globals(int argc, char **argv, cli_settings *s, int *actions, char **sizes, int *nact) {
    struct option lo[sizeof cli_global_opts / sizeof cli_global_opts[0]];
    size_t n = 0;
    for (; cli_global_opts[n].name; n++)
        lo[n] = (struct option){cli_global_opts[n].name, cli_global_opts[n].arg ? required_argument : no_argument, NULL,
                                cli_global_opts[n].letter ? cli_global_opts[n].letter : 256 + (int)n};
    lo[n] = (struct option){NULL, 0, NULL, 0};
    opterr = 0;
    int ch;
    char what[160];
    while ((ch = getopt_long(argc, argv, "+:d:szCM:Vh", lo, NULL)) != -1) {
        if (ch == 'd') s->dir = optarg;
        else if (ch >= 256 && strcmp(cli_global_opts[ch - 256].name, "remote") == 0)
            s->remote = optarg;                      /* wins over KCACHE_REMOTE (cli_open_cache) */
        else if (ch >= 256) s->allow_unsafe_dir = 1; /* the one other row without a letter */
        else if (ch == 'V') return printf("kcache %s\n", kc_version()), -1;
        else if (ch == 'h') return cli_main_usage(stdout), -1;
        else if (strchr("szCM", ch) && *nact < 8) sizes[*nact] = optarg, actions[(*nact)++] = ch;
        else {
            const char *w = argv[optind - 1];
            if (ch == ':') snprintf(what, sizeof what, "option '%s' needs a value", w);
            else if (optopt && optopt < 256) snprintf(what, sizeof what, "unknown option '-%c'", optopt);
            else snprintf(what, sizeof what, "unknown or ambiguous option '%.*s'", (int)strcspn(w, "="), w);
            return -main_usage_error(what) - 1;
        }
    }
    return optind;
}

int main(int argc, char **argv) {
    cli_settings s = {NULL, NULL, 0};
    int actions[8], nact = 0;
    char *sizes[8];
    int i = parse_globals(argc, argv, &s, actions, sizes, &nact);
    if (i < 0) return -i - 1;
    if (s.dir && !*s.dir) /* never "the default": `--cache-dir "" clear` must not empty ~/.cache/kcache */
        return main_usage_error("--cache-dir is empty: name a directory, or leave the option out for the default");
    if (nact) {
        if (i < argc)
            return main_usage_error("-s, -z, -C and -M are commands of their own: give no COMMAND after them");
        int rc = 0;
        for (int k = 0; k < nact && rc == 0; k++) rc = run_action(&s, actions[k], sizes[k]);
        return rc;
    }
    if (i >= argc) {
        cli_main_usage(stderr);
        return EXIT_USAGE;
    }
    for (size_t k = 0; cli_commands[k]; k++)
        if (strcmp(argv[i], cli_commands[k]->name) == 0) return cli_commands[k]->run(&s, argc - i, argv + i);
    char shown[1024];
    fprintf(stderr,
            "kcache: unknown command '%s'; try 'kcache help'\ncommands:", cli_shown(argv[i], shown, sizeof shown));
    for (size_t k = 0; cli_commands[k]; k++) fprintf(stderr, " %s", cli_commands[k]->name);
    fprintf(stderr, "\n");
    return EXIT_USAGE;
}

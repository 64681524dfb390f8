/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_help.c — `kcache help [COMMAND]` (a command's help, or the tool's), `kcache help --man`
 * (the manual page kcache(1)) and `kcache completion bash|zsh` (the shell completion script).
 *
 * The one idea: all three are printed from the tables (cli_commands and cli_global_opts in
 * main.c, each command's options, the settings table), so the help, the manual and the
 * completions cannot disagree with what the parser accepts; the build writes the manual and the
 * completion scripts with these commands (tools/kcache/CMakeLists.txt).
 * Only main.c's command table refers to this file.  Must not: open a cache.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int cmd_help(const cli_settings *cs, int argc, char **argv);
static int cmd_completion(const cli_settings *cs, int argc, char **argv);

static const cli_opt help_opts[] = {
    {"man", 0, NULL, "print the manual page kcache(1) (troff; read it with man -l -)"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_help = {"help",
                              "kcache help [COMMAND] [--man]",
                              "Without COMMAND, describe the tool: its commands, global options and environment.\n"
                              "With COMMAND, describe that command, as 'kcache COMMAND --help' does.",
                              cmd_help,
                              help_opts,
                              CLI_OPERANDS_WORDS};

const cli_cmd cli_cmd_completion = {
    "completion",
    "kcache completion bash|zsh",
    "Print the completion script for the shell: commands, global options and each command's\n"
    "options, files where a command takes files.  Installed with kcache as\n"
    "share/bash-completion/completions/kcache and share/zsh/vendor-completions/_kcache; to try\n"
    "it in the running shell: source <(kcache completion bash).",
    cmd_completion,
    NULL,
    CLI_OPERANDS_WORDS};

static int cmd_help(const cli_settings *cs, int argc, char **argv) {
    (void)cs;
    cli_args a;
    cli_parse(&cli_cmd_help, argc, argv, 1, &a);
    if (cli_flag(&a, "man")) {
        if (a.npos) return cli_usage_error(&cli_cmd_help, "--man takes no COMMAND", a.pos[0]);
        cli_print_man(stdout);
        return 0;
    }
    if (a.npos == 0) {
        cli_main_usage(stdout);
        return 0;
    }
    for (size_t k = 0; cli_commands[k]; k++)
        if (strcmp(a.pos[0], cli_commands[k]->name) == 0) {
            cli_print_help(cli_commands[k]);
            return 0;
        }
    char what[256];
    size_t o = (size_t)snprintf(what, sizeof what, "unknown command '%.32s' (commands:", a.pos[0]);
    for (size_t k = 0; cli_commands[k] && o < sizeof what; k++)
        o += (size_t)snprintf(what + o, sizeof what - o, " %s", cli_commands[k]->name);
    if (o < sizeof what - 1) snprintf(what + o, sizeof what - o, ")");
    return cli_usage_error(&cli_cmd_help, what, NULL);
}

static int cmd_completion(const cli_settings *cs, int argc, char **argv) {
    (void)cs;
    cli_args a;
    cli_parse(&cli_cmd_completion, argc, argv, 1, &a);
    if (a.npos != 1) return cli_usage_error(&cli_cmd_completion, "name the shell: bash or zsh", NULL);
    if (cli_print_completion(stdout, a.pos[0]) != 0)
        return cli_usage_error(&cli_cmd_completion, "no completion for this shell (bash, zsh)", a.pos[0]);
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The uroce command line's commands that live outside main.c. */
#ifndef UROCE_CLI_H
#define UROCE_CLI_H

#include <stdbool.h>

/* launch.c: `uroce env [-d DEV]` prints the shell exports a program needs to run over
 * uroce; `uroce exec [-d DEV] [--] PROGRAM [ARGS...]` runs it so. @p sock: -S, or NULL.
 * @return the exit status (exec returns only when the program cannot be run: 127 not
 * found, 126 not runnable; 1 no libraries or no daemon, said on stderr; 2 usage). */
int uroce_cli_env(const char *sock, int argc, char **argv);
int uroce_cli_exec(const char *sock, int argc, char **argv);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* The uroce command line's commands that live outside main.c. */
#ifndef UROCE_CLI_H
#define UROCE_CLI_H

#include <stdbool.h>

#include <infiniband/verbs.h>

/* launch.c: `uroce env [-d DEV]` prints the shell exports a program needs to run over
 * uroce; `uroce exec [-d DEV] [--] PROGRAM [ARGS...]` runs it so. @p sock: -S, or NULL.
 * @return the exit status (exec returns only when the program cannot be run: 127 not
 * found, 126 not runnable; 1 no libraries or no daemon, said on stderr; 2 usage). */
int uroce_cli_env(const char *sock, int argc, char **argv);
int uroce_cli_exec(const char *sock, int argc, char **argv);

/* res.c: `uroce res [show] [TYPE] [--json]`, `uroce link [show] [--json]`. @return the
 * exit status (1 the daemon refused, 2 usage). */
struct uroce_client_ctx;
int uroce_cli_res(struct uroce_client_ctx *ctx, int argc, char **argv);
int uroce_cli_link(struct uroce_client_ctx *ctx, int argc, char **argv);

/* main.c: shared with res.c. A JSON string with its quotes; the port state's name as
 * ibv_devinfo prints it ("PORT_ACTIVE"); an IB MTU's bytes (0: not one). */
void uroce_cli_json_str(const char *s);
const char *uroce_cli_port_state_str(enum ibv_port_state s);
int uroce_cli_mtu_bytes(enum ibv_mtu m);

#endif

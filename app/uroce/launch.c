/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `uroce env` and `uroce exec`: an unmodified RDMA program over uroce. Such a program
 * links libibverbs.so.1 and librdmacm.so.1; uroce's drop-in ones live apart from the
 * system's (<libdir>/uroce, never shadowing them), so the program needs LD_LIBRARY_PATH
 * to find them, and UROCE_SOCKET when it is to use one daemon of several. These say
 * both, after checking that the libraries are there and a daemon answers, so that what
 * is missing is said here rather than by the program's "no devices found".
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "uroce_client.h"
#include "uroce_ctrl.h"

/* Where the drop-in libraries are: $UROCE_LIBDIR if set; the build tree's when this
 * uroce is the build tree's (run before any install); else the installed directory.
 * Writes a colon-separated list into @p out. */
static void dropin_dirs(char *out, size_t len)
{
	const char *env = getenv("UROCE_LIBDIR");
	char self[PATH_MAX];
	size_t root = strlen(UROCE_BUILD_ROOT);

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return;
	}
	if (realpath("/proc/self/exe", self) && !strncmp(self, UROCE_BUILD_ROOT, root) &&
	    self[root] == '/') {
		snprintf(out, len, "%s/lib/verbs:%s/lib/rdmacm", UROCE_BUILD_ROOT,
			 UROCE_BUILD_ROOT);
		return;
	}
	snprintf(out, len, "%s", UROCE_INSTALL_LIBDIR);
}

/* Whether @p name is in one of the directories of @p dirs. */
static bool in_dirs(const char *dirs, const char *name)
{
	char path[PATH_MAX];
	const char *d = dirs;

	while (*d) {
		size_t n = strcspn(d, ":");

		snprintf(path, sizeof(path), "%.*s/%s", (int)n, d, name);
		if (access(path, R_OK) == 0)
			return true;
		d += n + (d[n] == ':');
	}
	return false;
}

/*
 * What a program needs: the library path, and the socket when one daemon is meant (-S,
 * or -d DEV: the daemon whose device that is); with neither, the libraries find every
 * daemon themselves, as ibv_devices lists them. Checks that the libraries are there and
 * that a daemon answers. @return 0, or 1 with the reason on stderr.
 */
static int prepare(const char *sock, const char *dev, char *dirs, size_t dirs_len,
		   char *sock_out, size_t sock_len)
{
	struct uroce_client_daemon *found = NULL;
	bool explicit_list;
	int n, i;

	dropin_dirs(dirs, dirs_len);
	if (!in_dirs(dirs, "libibverbs.so.1") || !in_dirs(dirs, "librdmacm.so.1")) {
		fprintf(stderr,
			"uroce: the drop-in libibverbs.so.1 and librdmacm.so.1 are not in %s: "
			"install uroce (meson install), run the build tree's uroce, or set "
			"UROCE_LIBDIR\n",
			dirs);
		return 1;
	}
	sock_out[0] = 0;
	if (sock && !dev) {
		struct uroce_client_ctx *ctx = uroce_client_open(sock);

		if (!ctx) {
			fprintf(stderr, "uroce: no uroced answers at %s: %s\n", sock,
				strerror(errno));
			return 1;
		}
		uroce_client_close(ctx);
		snprintf(sock_out, sock_len, "%s", sock);
		return 0;
	}
	if (sock) /* -S with -d: look for the device among that socket's daemon */
		setenv(UROCE_CTRL_SOCKET_ENV, sock, 1);
	n = uroce_client_discover(&found, &explicit_list);
	if (n <= 0) {
		fprintf(stderr,
			"uroce: no uroced running (looked for %s%s): start uroced, or name its "
			"socket with -S or %s\n",
			explicit_list ? "$" UROCE_CTRL_SOCKET_ENV "=" :
					UROCE_CLIENT_SOCKET_DIR "/*.sock",
			explicit_list ? getenv(UROCE_CTRL_SOCKET_ENV) : "", UROCE_CTRL_SOCKET_ENV);
		free(found);
		return 1;
	}
	if (!dev) {
		free(found);
		return 0;
	}
	for (i = 0; i < n && strcmp(found[i].name, dev); i++)
		;
	if (i == n) {
		fprintf(stderr, "uroce: no device %s; running:", dev);
		for (i = 0; i < n; i++)
			fprintf(stderr, " %s (%s)", found[i].name, found[i].sock);
		fprintf(stderr, "\n");
		free(found);
		return 1;
	}
	snprintf(sock_out, sock_len, "%s", found[i].sock);
	free(found);
	return 0;
}

/* [-d DEV] [--]: the device option both commands take; @return the index of what
 * follows, or -1 after a usage message. */
static int parse_dev(const char *what, int argc, char **argv, const char **dev)
{
	int i = 0;

	*dev = NULL;
	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "--"))
			return i + 1;
		if (!strcmp(argv[i], "-d") && i + 1 < argc) {
			*dev = argv[i + 1];
			i += 2;
			continue;
		}
		fprintf(stderr, "uroce %s: unknown option '%s'\n", what, argv[i]);
		return -1;
	}
	return i;
}

/* Prints a shell word of @p s, single-quoted. */
static void shell_word(const char *s)
{
	putchar('\'');
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

int uroce_cli_env(const char *sock, int argc, char **argv)
{
	char dirs[PATH_MAX * 2], chosen[sizeof(((struct uroce_client_daemon *)0)->sock)];
	const char *dev;
	int at = parse_dev("env", argc, argv, &dev);

	if (at < 0)
		return 2;
	if (at != argc) {
		fprintf(stderr, "uroce env: unexpected '%s'\n", argv[at]);
		return 2;
	}
	if (prepare(sock, dev, dirs, sizeof(dirs), chosen, sizeof(chosen)))
		return 1;
	printf("export LD_LIBRARY_PATH=");
	shell_word(dirs);
	printf("\"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\"\n");
	if (chosen[0]) {
		printf("export %s=", UROCE_CTRL_SOCKET_ENV);
		shell_word(chosen);
		putchar('\n');
	}
	return 0;
}

int uroce_cli_exec(const char *sock, int argc, char **argv)
{
	char dirs[PATH_MAX * 2], chosen[sizeof(((struct uroce_client_daemon *)0)->sock)];
	char path[PATH_MAX * 3];
	const char *dev, *old = getenv("LD_LIBRARY_PATH");
	int at = parse_dev("exec", argc, argv, &dev);

	if (at < 0)
		return 2;
	if (at == argc) {
		fprintf(stderr, "uroce exec: no program given (uroce exec [-d DEV] -- PROGRAM "
				"[ARGS...])\n");
		return 2;
	}
	if (prepare(sock, dev, dirs, sizeof(dirs), chosen, sizeof(chosen)))
		return 1;
	snprintf(path, sizeof(path), "%s%s%s", dirs, old && *old ? ":" : "", old ? old : "");
	setenv("LD_LIBRARY_PATH", path, 1);
	if (chosen[0])
		setenv(UROCE_CTRL_SOCKET_ENV, chosen, 1);
	execvp(argv[at], argv + at);
	/* As a shell says it: 127 not found, 126 found but not runnable. */
	fprintf(stderr, "uroce exec: %s: %s\n", argv[at], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

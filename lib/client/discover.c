/* SPDX-License-Identifier: BSD-3-Clause */
/* Discovery: which uroced instances run, the socket, name and node GUID of each. Shared by
 * the drop-in libibverbs (one ibv_device per daemon) and librdmacm (which must know the
 * socket behind each ibv_device to open its CM session there). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "uroce_client.h"
#include "uroce_ctrl.h"

/* Connects (HELLO) to learn the device's name and node GUID. @return 0 or errno. */
static int discover_probe(const char *sock, struct uroce_client_daemon *d)
{
	struct uroce_client_ctx *cl = uroce_client_open(sock);
	struct ibv_device_attr attr;
	int rc;

	if (!cl)
		return errno;
	rc = uroce_client_query_device(cl, &attr);
	if (rc == 0) {
		snprintf(d->sock, sizeof(d->sock), "%s", sock);
		snprintf(d->name, sizeof(d->name), "%s", uroce_client_dev_name(cl));
		d->guid = attr.node_guid;
	}
	uroce_client_close(cl);
	return rc;
}

static int discover_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool discover_push(char ***v, size_t *n, size_t *cap, const char *s)
{
	if (*n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 8;
		char **nv = realloc(*v, ncap * sizeof(**v));

		if (!nv)
			return false;
		*v = nv;
		*cap = ncap;
	}
	(*v)[*n] = strdup(s);
	if ((*v)[*n])
		(*n)++;
	return true;
}

/* The sockets to try: $UROCE_SOCKET (a colon-separated list) or every socket in
 * UROCE_CLIENT_SOCKET_DIR, sorted. @return how many (each malloc'd). */
static size_t discover_candidates(char ***out, bool explicit_list)
{
	char **v = NULL;
	size_t n = 0, cap = 0;

	if (explicit_list) {
		char *dup = strdup(getenv(UROCE_CTRL_SOCKET_ENV)), *save = NULL, *tok;

		for (tok = dup ? strtok_r(dup, ":", &save) : NULL; tok;
		     tok = strtok_r(NULL, ":", &save))
			if (!discover_push(&v, &n, &cap, tok))
				break;
		free(dup);
	} else {
		DIR *d = opendir(UROCE_CLIENT_SOCKET_DIR);
		struct dirent *e;

		while (d && (e = readdir(d))) {
			char path[108];
			struct stat st;

			if (snprintf(path, sizeof(path), "%s/%s", UROCE_CLIENT_SOCKET_DIR,
				     e->d_name) >= (int)sizeof(path) ||
			    stat(path, &st) != 0 || !S_ISSOCK(st.st_mode))
				continue;
			if (!discover_push(&v, &n, &cap, path))
				break;
		}
		if (d)
			closedir(d);
		if (n > 1)
			qsort(v, n, sizeof(*v), discover_cmp_str);
	}
	*out = v;
	return n;
}

static bool discover_name_taken(const struct uroce_client_daemon *d, size_t n,
				const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].name, name) == 0)
			return true;
	return false;
}

/* Daemons that report the same name (every uroced says "uroce0" today) are told apart
 * by number: the first keeps its name, the next ones take the lowest free <base><N>. */
static void discover_unique_names(struct uroce_client_daemon *d, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		char base[64], name[64];
		size_t len;

		if (!discover_name_taken(d, i, d[i].name))
			continue;
		snprintf(base, sizeof(base), "%s", d[i].name);
		len = strlen(base);
		while (len && isdigit((unsigned char)base[len - 1]))
			base[--len] = 0;
		for (unsigned int k = 0;; k++) {
			snprintf(name, sizeof(name), "%.50s%u", base, k);
			if (!discover_name_taken(d, n, name))
				break;
		}
		snprintf(d[i].name, sizeof(d[i].name), "%s", name);
	}
}

int uroce_client_discover(struct uroce_client_daemon **out, bool *explicit_list)
{
	const char *env = getenv(UROCE_CTRL_SOCKET_ENV);
	struct uroce_client_daemon *found;
	char **socks;
	size_t n, nfound = 0;

	*explicit_list = env && *env;
	n = discover_candidates(&socks, *explicit_list);
	found = calloc(n ? n : 1, sizeof(*found));
	for (size_t i = 0; i < n; i++) {
		int rc = found ? discover_probe(socks[i], &found[nfound]) : ENOMEM;

		if (rc == 0)
			nfound++;
		else if (*explicit_list)
			fprintf(stderr, "uroce: %s: %s\n", socks[i], strerror(rc));
		free(socks[i]);
	}
	free(socks);
	if (!found)
		return -ENOMEM;
	discover_unique_names(found, nfound);
	*out = found;
	return (int)nfound;
}

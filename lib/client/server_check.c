/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Whom an application hands its memory: the process on the other end of the control
 * socket gets the memfds of every MR. While no uroced runs, anyone who may create a file
 * where the socket goes (a sticky /tmp, a folder of their own there) can bind one and
 * serve the applications that come. So the server must be, as the kernel tells it
 * (SO_PEERCRED, fixed at connect):
 *   - root, or this process's own user (who could read its memory anyway), or
 *   - the owner of the socket's folder, if root gave the folder to that user: the folder
 *     is writable by its owner only and its parent belongs to root and is writable by
 *     root only (so only root made it or handed it over), and every folder above the
 *     parent belongs to root and is writable by others only if sticky (so none of them
 *     can be replaced). This is a daemon run as control.user with its socket folder
 *     /run/uroce given to that user; a folder that anyone could have created (in /tmp)
 *     names nobody.
 * The folder is judged by its real path, after the connect: nobody but root and its owner
 * can change those folders, so what the check sees is what the connect went through.
 *
 * An application may also name the uid it trusts, as it sees it, in $UROCE_SERVER_UID: in
 * a user namespace that does not map root (unshare -Ur, a rootless container) the kernel
 * shows the daemon's root as the overflow uid, 65534, which the rules above cannot tell
 * from a squatter's nobody. Only the application's own environment can say so.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_internal.h"

/* Writable by group or others. */
#define CL_WRITABLE_BY_OTHERS (S_IWGRP | S_IWOTH)

/* The uid root gave the folder of @p path to (see above), or -1 when none. */
static long folder_delegate(const char *path)
{
	char real[PATH_MAX], *end;
	struct stat st;
	long owner;
	int depth;

	if (!realpath(path, real))
		return -1;
	end = strrchr(real, '/');
	if (!end || end == real)
		return -1; /* a socket in / is root's, or nobody's */
	*end = '\0'; /* the folder */
	if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode) || (st.st_mode & CL_WRITABLE_BY_OTHERS))
		return -1;
	owner = (long)st.st_uid;
	/* Upwards: the parent (depth 1) must be root's and writable by root only; the
	 * folders above it, root's and not writable by others unless sticky. */
	for (depth = 1; (end = strrchr(real, '/')) != NULL; depth++) {
		end[end == real] = '\0';
		if (stat(real, &st) != 0 || st.st_uid != 0)
			return -1;
		if ((st.st_mode & CL_WRITABLE_BY_OTHERS) && (depth == 1 || !(st.st_mode & S_ISVTX)))
			return -1;
		if (end == real)
			break;
	}
	return owner;
}

/* The uid $UROCE_SERVER_UID names, or -1 (unset, or not a number). */
static long trusted_uid(void)
{
	const char *v = getenv("UROCE_SERVER_UID");
	char *end;
	unsigned long uid;

	if (!v || !*v)
		return -1;
	errno = 0;
	uid = strtoul(v, &end, 10);
	return errno || *end || uid > UINT32_MAX ? -1 : (long)uid;
}

int cl_server_check(int sock, const char *path)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return -errno;
	if (cred.uid == 0 || cred.uid == geteuid() || (long)cred.uid == trusted_uid() ||
	    (long)cred.uid == folder_delegate(path))
		return 0;
	fprintf(stderr,
		"uroce: %s is served by uid %u, which is not root, not this user, and not a "
		"user root gave its folder to: refused (a socket left for applications to find "
		"while uroced was down? $UROCE_SERVER_UID names a uid to trust)\n",
		path, (unsigned)cred.uid);
	return -EACCES;
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_fixture.h"

/* The socket file exists from bind(); connections are accepted from listen() on. */
static bool accepts(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool ok;

	if (s < 0)
		return false;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ok = connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(s);
	return ok;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool vfx_reference(void)
{
	const char *r = getenv("UROCE_VERBS_REFERENCE");

	return r && strcmp(r, "0") != 0 && r[0] != '\0';
}

int vfx_gid_index(void)
{
	const char *g = getenv("UROCE_VERBS_GID_INDEX");

	return g ? atoi(g) : 1;
}

int vfx_daemon_start(struct vfx_daemon *d, const char *ipv4, const char *extra_set,
		     char *why, size_t whylen)
{
	const char *bin = getenv("UROCED");
	char ipset[64], sockset[160], extra[512];
	const char *argv[40];
	int argc = 0;
	pid_t parent = getpid();
	uint64_t t0;

	memset(d, 0, sizeof(*d));
	if (vfx_reference())
		return 0;
	if (!bin) {
		snprintf(why, whylen, "set UROCED to the uroced binary");
		return -1;
	}
	snprintf(d->prefix, sizeof(d->prefix), "uvfx%d", (int)getpid());
	snprintf(d->sock, sizeof(d->sock), "/tmp/uroce-vfx-%d.sock", (int)getpid());
	snprintf(ipset, sizeof(ipset), "host.ipv4=%s", ipv4);
	snprintf(sockset, sizeof(sockset), "control.socket=%s", d->sock);
	snprintf(extra, sizeof(extra), "%s", extra_set ? extra_set : "lcore.idle_yield_us=2");
	unlink(d->sock);
	d->pid = fork();
	if (d->pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		return -1;
	}
	if (d->pid == 0) {
		char fp[64];
		const char *fixed[] = {
			bin, "--no-pci", "--no-huge", "-m", "256", fp, "--log-level=lib.eal:error",
			"--vdev=net_null0,no-rx=1", "--", "--set", ipset, "--set", sockset, "--set",
			"log.level=warning", "--set", "lcore.idle_sleep_us=200"};

		/* The daemon goes with the test process, however that ends (Criterion runs no
		 * fini after a failed init, and a crash runs none at all). */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
			_exit(126);
		snprintf(fp, sizeof(fp), "--file-prefix=%s", d->prefix);
		for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
			argv[argc++] = fixed[i];
		/* @p extra_set: settings separated by spaces, each its own --set. */
		for (char *tok = strtok(extra, " "); tok && argc < 38; tok = strtok(NULL, " ")) {
			argv[argc++] = "--set";
			argv[argc++] = tok;
		}
		argv[argc] = NULL;
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	t0 = mono_ns();
	while (mono_ns() - t0 < 20000000000ull) {
		struct stat st;
		int status;

		if (stat(d->sock, &st) == 0 && accepts(d->sock)) {
			setenv("UROCE_SOCKET", d->sock, 1);
			return 0;
		}
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			snprintf(why, whylen, "uroced (%s) exited with status 0x%x", bin, status);
			d->pid = 0;
			return -1;
		}
		usleep(10000);
	}
	snprintf(why, whylen, "uroced did not accept connections on %s in 20 s", d->sock);
	vfx_daemon_stop(d);
	return -1;
}

void vfx_daemon_stop(struct vfx_daemon *d)
{
	int status;

	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		waitpid(d->pid, &status, 0);
	}
	d->pid = 0;
	if (d->sock[0])
		unlink(d->sock);
}

int vfx_check_library(char *why, size_t whylen)
{
	const char *want = getenv("UROCE_VERBS_LIB");
	char want_real[PATH_MAX], got_real[PATH_MAX], line[PATH_MAX + 128];
	Dl_info info;
	FILE *f;
	int rc = 0;

	if (vfx_reference())
		return 0;
	if (!want || !realpath(want, want_real)) {
		snprintf(why, whylen, "UROCE_VERBS_LIB (%s) does not name the build's libibverbs",
			 want ? want : "unset");
		return -1;
	}
	/* The object the executable's reference to ibv_open_device resolved to. */
	if (!dladdr((void *)(uintptr_t)ibv_open_device, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, got_real)) {
		snprintf(why, whylen, "dladdr(ibv_open_device) failed");
		return -1;
	}
	if (strcmp(got_real, want_real) != 0) {
		snprintf(why, whylen, "ibv_open_device comes from %s, not the build's %s", got_real,
			 want_real);
		return -1;
	}
	/* No other libibverbs loaded beside it (e.g. the system's, through a dependency). */
	f = fopen("/proc/self/maps", "r");
	if (!f) {
		snprintf(why, whylen, "/proc/self/maps: %s", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');

		if (!path || !strstr(path, "libibverbs"))
			continue;
		path[strcspn(path, "\n")] = '\0';
		if (!realpath(path, got_real) || strcmp(got_real, want_real) != 0) {
			snprintf(why, whylen, "another libibverbs is mapped: %s", path);
			rc = -1;
			break;
		}
	}
	fclose(f);
	return rc;
}

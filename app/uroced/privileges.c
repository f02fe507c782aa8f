/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * control.user: once started, the daemon runs as that user with only the capabilities it
 * still needs. Start-up wants root: hugepages and the EAL's files, af_packet and af_xdp
 * sockets (CAP_NET_RAW), the XDP program and the kernel interface's tap, addresses and
 * sysctls (CAP_NET_ADMIN), the device node (CAP_MKNOD). Serving wants almost nothing:
 * applications' memory comes as descriptors they pass, a capture file as a descriptor
 * the administrator's `uroce` opened, and the port's sockets are open. What is left is
 * undoing at exit what start-up did to the host (below, privileges_needed), so a bug a
 * client reaches runs as a user who owns nothing but the daemon's own socket folder.
 *
 * The user's uid, its group, no supplementary group; every capability not kept leaves
 * the bounding set too, and no_new_privs is set, so neither an exec nor a setuid binary
 * gives any back. capset(2) and prctl(2) are called directly: the few calls do not
 * warrant a dependency on libcap.
 */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "uroced.h"

/* The capabilities a capset(2) sets, one bit each (the kernel has fewer than 64). */
typedef uint64_t cap_mask_t;
#define CAP_BIT(c) ((cap_mask_t)1 << (c))

int uroced_user_resolve(struct uroced *d)
{
	const char *name = d->conf.control.user;
	struct passwd *pw;

	if (!name[0])
		return 0;
	errno = 0;
	pw = getpwnam(name);
	if (!pw) {
		UROCED_ERR(d, "control.user: no user %s%s%s", name, errno ? ": " : "",
			   errno ? strerror(errno) : "");
		return -EINVAL;
	}
	if (pw->pw_uid == 0) {
		UROCED_ERR(d, "control.user %s is root: leave it empty to run as root", name);
		return -EINVAL;
	}
	d->run_uid = pw->pw_uid;
	d->run_gid = pw->pw_gid;
	d->have_run_user = true;
	return 0;
}

/*
 * What the daemon still does with privilege once it serves, measured (doc/security.md):
 * af_packet, memif and null ports, applications, admin commands and the tap's frames
 * need none. CAP_NET_ADMIN stays only to put back at exit what start-up changed: the
 * port interface's rp_filter and arp_ignore that host.kernel_iface set (their
 * /proc/sys/net files are writable with CAP_NET_ADMIN in the netns), and the XDP
 * program af_xdp attached to the interface (detached by netlink), which would otherwise
 * outlive the daemon and take the interface's frames.
 */
static cap_mask_t privileges_needed(const struct uroced *d)
{
	cap_mask_t keep = 0;

	if (uroced_kernel_restores_at_exit(d))
		keep |= CAP_BIT(CAP_NET_ADMIN);
	if (d->port_open && !strcmp(d->port.driver, "net_af_xdp"))
		keep |= CAP_BIT(CAP_NET_ADMIN);
	return keep;
}

static void cap_names(cap_mask_t caps, char *buf, size_t size)
{
	static const struct {
		int cap;
		const char *name;
	} names[] = {{CAP_NET_ADMIN, "cap_net_admin"}, {CAP_NET_RAW, "cap_net_raw"}};
	size_t n = 0;

	snprintf(buf, size, "none");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (caps & CAP_BIT(names[i].cap))
			n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s",
					      n ? "," : "", names[i].name);
}

/* The effective and permitted sets of the calling thread become @p caps, the inheritable
 * set empty. @return 0 or -errno. */
static int caps_set(cap_mask_t caps)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {0};

	for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++) {
		data[i].effective = (uint32_t)(caps >> (32 * i));
		data[i].permitted = (uint32_t)(caps >> (32 * i));
	}
	return syscall(SYS_capset, &hdr, data) == 0 ? 0 : -errno;
}

/* Whether the socket's folder is the user's: clients trust a daemon of root, of their
 * own uid, or of the owner of the socket's folder (lib/client, server_check.c). */
static int socket_dir_owned(const struct uroced *d)
{
	char dir[sizeof(d->socket_path)], *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", d->socket_path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (stat(dir, &st) != 0) {
		int rc = -errno;

		UROCED_ERR(d, "control.user: folder %s: %s", dir, strerror(-rc));
		return rc;
	}
	if (st.st_uid != d->run_uid) {
		UROCED_ERR(d,
			   "control.user %s: the socket's folder %s belongs to uid %u: give it "
			   "to %s (applications trust a daemon only if it is root or owns the "
			   "folder of its socket)",
			   d->conf.control.user, dir, (unsigned)st.st_uid, d->conf.control.user);
		return -EPERM;
	}
	return 0;
}

int uroced_privileges_drop(struct uroced *d)
{
	const uid_t uid = d->run_uid;
	const gid_t gid = d->run_gid;
	cap_mask_t keep;
	char names[64];
	int rc, cap;

	if (!d->have_run_user)
		return 0;
	rc = socket_dir_owned(d);
	if (rc)
		return rc;
	keep = privileges_needed(d);
	/* Kept across setresuid() by this thread (it serves everything); the EAL's threads
	 * lose them all there. */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0)
		goto fail_errno;
	/* While CAP_SETPCAP is still ours. EINVAL: past the kernel's last capability. */
	for (cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		if (!(keep & CAP_BIT(cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
			goto fail_errno;
	/* glibc applies these to every thread of the process. */
	if (setgroups(1, &gid) != 0 || setresgid(gid, gid, gid) != 0 ||
	    setresuid(uid, uid, uid) != 0)
		goto fail_errno;
	rc = caps_set(keep);
	if (rc)
		goto fail;
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) != 0 ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		goto fail_errno;
	/* The drop must hold: root is out of reach for good. */
	if (setuid(0) == 0 || geteuid() != uid || getegid() != gid) {
		UROCED_ERR(d, "control.user %s: root could be regained", d->conf.control.user);
		return -EPERM;
	}
	cap_names(keep, names, sizeof(names));
	UROCED_INFO(d, "running as user %s (uid %u, gid %u), capabilities: %s",
		    d->conf.control.user, (unsigned)uid, (unsigned)gid, names);
	return 0;
fail_errno:
	rc = -errno;
fail:
	UROCED_ERR(d, "control.user %s: cannot become that user: %s%s", d->conf.control.user,
		   strerror(-rc), geteuid() ? " (start uroced as root to use control.user)" : "");
	return rc;
}

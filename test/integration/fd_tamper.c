/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fd_tamper SOCKET IPV4: a hostile client of uroced, speaking the control protocol itself.
 * It takes every descriptor the daemon hands out (HELLO's, a completion channel's, a CM
 * channel's), then, on each, clears O_NONBLOCK (F_SETFL 0: for every holder of the same
 * open file) and writes 2^64 - 2, the most an eventfd holds, so that a write by any other
 * holder would block. Then it has the daemon signal the CM channel (RESOLVE_ADDR of the
 * daemon's own IPV4 queues ADDR_RESOLVED), prints
 *   fd_tamper: tampered
 * and holds everything until it is killed. One line per descriptor says what the kernel
 * let it do. shared_fds.sh runs it under another uid beside a tenant.
 * Exit: 2 on a setup failure (the daemon refused it, or did not answer in 5 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "uroce_ctrl.h"

static int sock;
static uint32_t seq;

static void die(const char *what, long rc)
{
	fprintf(stderr, "fd_tamper: %s: %s\n", what, strerror((int)-rc));
	exit(2);
}

/* One request and its reply: the reply's payload in @p rep, its descriptors in @p fds.
 * @return the reply's status, or -errno of the receive (-EAGAIN: no reply in 5 s). */
static int call(uint16_t cmd, const void *req, uint32_t len, void *rep, uint32_t rep_len,
		int *fds, unsigned int max_fds)
{
	unsigned int nfds = 0;
	long rc = uroce_ctrl_call(sock, ++seq, cmd, req, len, NULL, 0, rep, rep_len, fds, max_fds,
				  &nfds);

	if (rc == -EAGAIN)
		return (int)rc; /* no answer within SO_RCVTIMEO */
	if (rc == -EPROTO || rc == -EPIPE || rc == -ECONNRESET || rc == -ENOMEM ||
	    (rc == 0 && nfds != max_fds))
		die(uroce_ctrl_cmd_name(cmd), rc ? rc : -EPROTO);
	return (int)rc;
}

/* What a hostile holder of @p fd can do to the other holders of its open file. */
static void tamper(const char *what, int fd)
{
	const uint64_t most = 0xfffffffffffffffeull;
	int rc_fl = fcntl(fd, F_SETFL, 0);
	int err_fl = errno;
	ssize_t w = write(fd, &most, sizeof(most));
	int err_w = errno;

	printf("fd_tamper: %s: F_SETFL 0 %s, write 2^64-2 %s\n", what,
	       rc_fl == 0 ? "done" : strerror(err_fl),
	       w == (ssize_t)sizeof(most) ? "went in" : strerror(err_w));
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 5};
	struct uroce_ctrl_hello_req hello = {.version = UROCE_CTRL_VERSION, .name = "fd_tamper"};
	struct uroce_ctrl_hello_rep hello_rep;
	struct uroce_ctrl_handle channel, cm_channel, cm_id;
	struct uroce_ctrl_cm_create_id_req id_req = {
		.ps = RDMA_PS_TCP, .qp_type = IBV_QPT_RC, .uid = 1};
	struct uroce_ctrl_cm_addr_req addr = {0};
	struct sockaddr_in *dst = (struct sockaddr_in *)&addr.dst;
	int hello_fds[3], channel_fd, cm_fd, rc;

	if (argc != 3 || strlen(argv[1]) >= sizeof(sa.sun_path) ||
	    inet_pton(AF_INET, argv[2], &dst->sin_addr) != 1) {
		fprintf(stderr, "usage: fd_tamper SOCKET IPV4\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		die("connect", -errno);
	/* A frozen daemon answers nothing: say so instead of waiting with it. */
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	hello.pid = getpid();
	rc = call(UROCE_CTRL_HELLO, &hello, sizeof(hello), &hello_rep, sizeof(hello_rep),
		  hello_fds, 3);
	if (rc)
		die("HELLO", rc);
	rc = call(UROCE_CTRL_CREATE_CHANNEL, NULL, 0, &channel, sizeof(channel), &channel_fd, 1);
	if (rc)
		die("CREATE_CHANNEL", rc);
	rc = call(UROCE_CTRL_CM_CREATE_CHANNEL, NULL, 0, &cm_channel, sizeof(cm_channel), &cm_fd,
		  1);
	if (rc)
		die("CM_CREATE_CHANNEL", rc);
	id_req.channel = cm_channel.handle;
	rc = call(UROCE_CTRL_CM_CREATE_ID, &id_req, sizeof(id_req), &cm_id, sizeof(cm_id), NULL,
		  0);
	if (rc)
		die("CM_CREATE_ID", rc);

	tamper("HELLO fd 1 (async events)", hello_fds[1]);
	tamper("HELLO fd 2 (wake-up)", hello_fds[2]);
	tamper("CREATE_CHANNEL fd (completion events)", channel_fd);
	tamper("CM_CREATE_CHANNEL fd (CM events)", cm_fd);

	/* An event for the CM channel: the daemon writes its descriptor now. */
	addr.id = cm_id.handle;
	dst->sin_family = AF_INET;
	rc = call(UROCE_CTRL_CM_RESOLVE_ADDR, &addr, sizeof(addr), NULL, 0, NULL, 0);
	printf("fd_tamper: CM_RESOLVE_ADDR: %s\n", rc ? strerror(-rc) : "done");
	printf("fd_tamper: tampered\n");
	fflush(stdout);
	for (;;)
		pause();
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A plain TCP program for rsockets' preload library (librspreload.so turns its socket
 * calls into rsocket calls): the server echoes what one client sends; the client sends
 * BYTES of a pseudo-random pattern in 1..64 KiB pieces while reading the echo back (poll
 * on one socket, as event-driven programs do), and compares every byte.
 *
 *   tcp_echo server ADDR PORT        prints "tcp_echo: listening", then serves one client
 *   tcp_echo client ADDR PORT BYTES  prints "tcp_echo: BYTES bytes echoed intact"
 * Exit 0 when every byte came back as sent.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static uint8_t pattern(size_t i)
{
	return (uint8_t)((i * 2654435761u) >> 13);
}

static int serve(const struct sockaddr_in *sa)
{
	static uint8_t buf[65536];
	int ls, c, one = 1;
	ssize_t n;
	size_t total = 0;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (const struct sockaddr *)sa, sizeof(*sa)) || listen(ls, 1)) {
		perror("tcp_echo: listen");
		return 1;
	}
	printf("tcp_echo: listening\n");
	fflush(stdout);
	c = accept(ls, NULL, NULL);
	if (c < 0) {
		perror("tcp_echo: accept");
		return 1;
	}
	while ((n = read(c, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(c, buf + off, (size_t)(n - off));

			if (w <= 0) {
				perror("tcp_echo: write");
				return 1;
			}
			off += w;
		}
		total += (size_t)n;
	}
	if (n < 0) {
		perror("tcp_echo: read");
		return 1;
	}
	printf("tcp_echo: server echoed %zu bytes\n", total);
	close(c);
	close(ls);
	return 0;
}

static int client(const struct sockaddr_in *sa, size_t bytes)
{
	static uint8_t out[65536], in[65536];
	size_t sent = 0, got = 0, piece = 1;
	int s = socket(AF_INET, SOCK_STREAM, 0);

	if (s < 0 || connect(s, (const struct sockaddr *)sa, sizeof(*sa))) {
		perror("tcp_echo: connect");
		return 1;
	}
	while (got < bytes) {
		short want = POLLIN | (sent < bytes ? POLLOUT : 0);
		struct pollfd p = {.fd = s, .events = want};

		if (poll(&p, 1, 10000) <= 0) {
			fprintf(stderr, "tcp_echo: stuck 10 s (%zu sent, %zu back)\n", sent, got);
			return 1;
		}
		if ((p.revents & POLLOUT) && sent < bytes) {
			size_t len = piece < bytes - sent ? piece : bytes - sent;
			ssize_t w;

			for (size_t i = 0; i < len; i++)
				out[i] = pattern(sent + i);
			w = send(s, out, len, MSG_DONTWAIT);
			if (w < 0 && errno != EAGAIN) {
				perror("tcp_echo: send");
				return 1;
			}
			if (w > 0)
				sent += (size_t)w;
			piece = piece * 2 + 1 > sizeof(out) ? 1 : piece * 2 + 1;
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r = recv(s, in, sizeof(in), MSG_DONTWAIT);

			if (r == 0 || (r < 0 && errno != EAGAIN)) {
				fprintf(stderr, "tcp_echo: connection ended after %zu bytes back\n",
					got);
				return 1;
			}
			for (ssize_t i = 0; i < r; i++)
				if (in[i] != pattern(got + (size_t)i)) {
					fprintf(stderr, "tcp_echo: byte %zu differs\n",
						got + (size_t)i);
					return 1;
				}
			if (r > 0)
				got += (size_t)r;
		}
	}
	close(s);
	printf("tcp_echo: %zu bytes echoed intact\n", got);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};

	if (argc < 4 || inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1 ||
	    (strcmp(argv[1], "client") == 0 && argc < 5)) {
		fprintf(stderr, "usage: tcp_echo server|client ADDR PORT [BYTES]\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)atoi(argv[3]));
	if (strcmp(argv[1], "server") == 0)
		return serve(&sa);
	return client(&sa, strtoull(argv[4], NULL, 0));
}

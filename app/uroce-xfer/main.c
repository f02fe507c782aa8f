/* SPDX-License-Identifier: BSD-3-Clause */
/* uroce-xfer [-S socket] MODE [options] [server]: the command line. */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfer.h"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: uroce-xfer [-S socket] MODE [options] [server]\n"
"  Server when no server address is given, client otherwise; the exchange runs over TCP\n"
"  (port -p, default 18515). The daemon's socket: -S, else $UROCE_SOCKET.\n"
"\n"
"Modes:\n"
"  rc_pingpong   as rdma-core's ibv_rc_pingpong (wire-compatible exchange; defaults\n"
"                -s 4096 -n 1000 -m 1024 -r 500)\n"
"  ud_pingpong   as ibv_ud_pingpong (-s 2048; size <= the port's active MTU)\n"
"  ops           data-verifying exerciser between two uroce-xfer (client drives)\n"
"  bw            RDMA WRITE bandwidth (RC; -s 65536 -n 5000 -w 32 -m 4096)\n"
"  lat           SEND ping-pong latency (RC; -s 8 -n 10000): median, p99\n"
"  verbs_op      peer of test/vm/guest/verbs-op, pyverbs in the rxe VM\n"
"                (--op write_imm|send_imm|write|send|read|fadd|cswap,\n"
"                -s 2048 -n 5, port -p 18600 by default)\n"
"\n"
"Options:\n"
"  -S, --socket=PATH    uroced's control socket\n"
"  -p, --port=PORT      TCP port of the exchange\n"
"  -i, --ib-port=N      port (default 1)\n"
"  -d, --ib-dev=NAME    accepted for compatibility (there is one device)\n"
"  -g, --gid-idx=N      GID index (default: the first IPv4 RoCE v2 GID)\n"
"  -s, --size=BYTES     message size\n"
"  -n, --iters=N        iterations (pingpong, bw, lat, verbs_op)\n"
"  -m, --mtu=BYTES      path MTU: 256, 512, 1024, 2048, 4096\n"
"  -r, --rx-depth=N     receives posted at a time (pingpong)\n"
"  -e, --events         sleep on CQ events between polls (pingpong, lat, bw)\n"
"  -l, --sl=N           accepted for compatibility\n"
"  -t, --timeout=SEC    longest wait for any progress (default 30)\n"
"  -v, --verbose        one line per case (ops)\n"
"  ops:\n"
"  -T, --transports=L   rc,uc,ud or all (default all)\n"
"  -O, --ops=L          send,send_imm,write,write_imm,read,fadd,cswap or all (default all)\n"
"  -z, --sizes=L        sizes, k/M suffixes (default 0,1,63,64,1000,1024,1025,4096,65536,1M,8M)\n"
"  -c, --count=N        messages per size (default 20; cut so a case stays under -B)\n"
"  -B, --max-bytes=N    bytes per case (default 32M)\n"
"  -x, --seed=N         data seed (default: from the clock; printed)\n"
"  -L, --lossy          the daemons inject loss: UC/UD are checked for corruption and\n"
"                       duplicates, not for completeness (RC stays exact)\n"
"  -w, --window=N       outstanding WRs (ops, bw)\n"
"  --op=OP              verbs_op's operation\n"
"  --pause-us=N         lat: the timing side waits N us before each message (the\n"
"                       latency of a message after silence: the daemons asleep)\n"
"  --spoil              ops client: flip one byte of the last message of every SEND and\n"
"                       WRITE case after posting it (the checker must then fail them)\n");
}

/* One option; returns 0, or the exit status to leave with. */
static int take_opt(int c, struct xfer_opts *o, bool *port_set)
{
	char *end;

	switch (c) {
	case 'S': o->socket = optarg; break;
	case 'p': o->port = atoi(optarg); *port_set = true; break;
	case 'i': o->ib_port = atoi(optarg); break;
	case 'd': break;
	case 'g': o->gid_index = atoi(optarg); break;
	case 's': o->size = strtol(optarg, NULL, 0); break;
	case 'n': o->iters = strtol(optarg, NULL, 0); break;
	case 'm': o->mtu = atoi(optarg); break;
	case 'r': o->rx_depth = atoi(optarg); break;
	case 'e': o->events = true; break;
	case 'l': break;
	case 't': o->timeout_ms = atoi(optarg) * 1000; break;
	case 'v': o->verbose = true; xfer_verbose = true; break;
	case 'T': o->transports = optarg; break;
	case 'O': o->ops = optarg; break;
	case 'z': o->sizes = optarg; break;
	case 'c': o->count = strtol(optarg, NULL, 0); break;
	case 'B':
		o->max_bytes = strtol(optarg, &end, 0);
		if (*end == 'k' || *end == 'K')
			o->max_bytes <<= 10;
		else if (*end == 'm' || *end == 'M')
			o->max_bytes <<= 20;
		break;
	case 'x': o->seed = strtoull(optarg, NULL, 0); break;
	case 'L': o->lossy = true; break;
	case 'w': o->window = atoi(optarg); break;
	case 'o': o->op = optarg; break;
	case 'P': o->spoil = true; break;
	case 'U': o->pause_us = strtol(optarg, NULL, 0); break;
	case 'h': usage(stdout); return 100;
	default: usage(stderr); return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "socket", 1, NULL, 'S' }, { "port", 1, NULL, 'p' }, { "ib-port", 1, NULL, 'i' },
		{ "ib-dev", 1, NULL, 'd' }, { "gid-idx", 1, NULL, 'g' }, { "size", 1, NULL, 's' },
		{ "iters", 1, NULL, 'n' }, { "mtu", 1, NULL, 'm' }, { "rx-depth", 1, NULL, 'r' },
		{ "events", 0, NULL, 'e' }, { "sl", 1, NULL, 'l' }, { "timeout", 1, NULL, 't' },
		{ "verbose", 0, NULL, 'v' }, { "transports", 1, NULL, 'T' },
		{ "ops", 1, NULL, 'O' }, { "sizes", 1, NULL, 'z' }, { "count", 1, NULL, 'c' },
		{ "max-bytes", 1, NULL, 'B' }, { "seed", 1, NULL, 'x' }, { "lossy", 0, NULL, 'L' },
		{ "window", 1, NULL, 'w' }, { "op", 1, NULL, 'o' }, { "help", 0, NULL, 'h' },
		{ "spoil", 0, NULL, 'P' }, { "pause-us", 1, NULL, 'U' },
		{ NULL, 0, NULL, 0 }
	};
	/* '+': stop at the first positional argument (the mode, then the server), so that
	 * options may come before and after each. */
	const char *sopts = "+S:p:i:d:g:s:n:m:r:el:t:vT:O:z:c:B:x:Lw:h";
	const char *mode = NULL;
	struct xfer_opts o;
	bool port_set = false;
	int c, r;

	memset(&o, 0, sizeof(o));
	o.port = XFER_DEFAULT_PORT;
	o.ib_port = 1;
	o.gid_index = -1;
	o.size = -1;
	o.iters = -1;
	o.timeout_ms = XFER_DEFAULT_TIMEOUT_MS;
	o.transports = "all";
	o.ops = "all";
	o.sizes = "0,1,63,64,1000,1024,1025,4096,65536,1M,8M";
	o.count = 20;
	o.max_bytes = 32l << 20;
	o.window = 32;

	while (optind < argc) {
		while ((c = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
			r = take_opt(c, &o, &port_set);
			if (r)
				return r == 100 ? 0 : r;
		}
		if (optind >= argc)
			break;
		if (!mode) {
			mode = argv[optind++];
		} else if (!o.server) {
			o.server = argv[optind++];
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!mode) {
		usage(stderr);
		return 2;
	}
	if (o.timeout_ms <= 0)
		o.timeout_ms = XFER_DEFAULT_TIMEOUT_MS;
	if (o.window <= 0)
		o.window = 32;
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!strcmp(mode, "rc_pingpong"))
		return xfer_rc_pingpong(&o);
	if (!strcmp(mode, "ud_pingpong"))
		return xfer_ud_pingpong(&o);
	if (!strcmp(mode, "ops"))
		return xfer_ops(&o);
	if (!strcmp(mode, "bw"))
		return xfer_bw(&o);
	if (!strcmp(mode, "lat"))
		return xfer_lat(&o);
	if (!strcmp(mode, "verbs_op")) {
		if (!port_set)
			o.port = 18600;
		return xfer_verbs_op(&o);
	}
	xfer_err("unknown mode '%s'", mode);
	usage(stderr);
	return 2;
}

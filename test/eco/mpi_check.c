/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An MPI job whose results are checked, for test/eco: a ping-pong of 100 sizes up to
 * 1 MiB (rank 1 adds one to every byte it returns), an allreduce of 1000 doubles and an
 * alltoall of @p argv[1] bytes in all (default 64 MiB). Rank 0 prints "mpi_check: ok" and
 * the job exits 0 only if every byte is what it must be.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PINGPONG_MAX (1 << 20)

static unsigned char pattern(size_t i, int seed)
{
	return (unsigned char)(i * 7 + (size_t)seed * 13 + (i >> 8));
}

static int pingpong(int rank, unsigned char *buf)
{
	int bad = 0;

	for (int it = 0; it < 100; it++) {
		int len = (it * 9973) % PINGPONG_MAX + 1;

		if (rank == 0) {
			for (int i = 0; i < len; i++)
				buf[i] = pattern((size_t)i, it);
			MPI_Send(buf, len, MPI_BYTE, 1, it, MPI_COMM_WORLD);
			MPI_Recv(buf, len, MPI_BYTE, 1, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			for (int i = 0; i < len; i++)
				if (buf[i] != (unsigned char)(pattern((size_t)i, it) + 1)) {
					bad++;
					break;
				}
		} else if (rank == 1) {
			MPI_Recv(buf, len, MPI_BYTE, 0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			for (int i = 0; i < len; i++)
				buf[i]++;
			MPI_Send(buf, len, MPI_BYTE, 0, it, MPI_COMM_WORLD);
		}
	}
	return bad;
}

static int allreduce(int rank, int size)
{
	double v[1000], s[1000];

	for (int i = 0; i < 1000; i++)
		v[i] = rank * 1000.0 + i;
	MPI_Allreduce(v, s, 1000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < 1000; i++) {
		double want = 0;

		for (int r = 0; r < size; r++)
			want += r * 1000.0 + i;
		if (s[i] != want)
			return 1;
	}
	return 0;
}

/* Block r of rank q's send buffer goes to rank r: its bytes say (q, r, offset). */
static int alltoall(int rank, int size, size_t total)
{
	size_t per = total / (size_t)size;
	unsigned char *a = malloc(per * (size_t)size), *b = malloc(per * (size_t)size);
	int bad = 0;

	if (!a || !b || per > (size_t)2147483647) {
		free(a);
		free(b);
		return 1;
	}
	for (int r = 0; r < size; r++)
		for (size_t i = 0; i < per; i++)
			a[(size_t)r * per + i] = pattern(i, rank * 64 + r);
	MPI_Alltoall(a, (int)per, MPI_BYTE, b, (int)per, MPI_BYTE, MPI_COMM_WORLD);
	for (int q = 0; q < size && !bad; q++)
		for (size_t i = 0; i < per; i++)
			if (b[(size_t)q * per + i] != pattern(i, q * 64 + rank)) {
				bad = 1;
				break;
			}
	free(a);
	free(b);
	return bad;
}

int main(int argc, char **argv)
{
	size_t total = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)64 << 20;
	int rank, size, bad = 0, all = 0;
	unsigned char *buf = malloc(PINGPONG_MAX);

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (!buf || size < 2)
		bad++;
	else
		bad += pingpong(rank, buf) + allreduce(rank, size) + alltoall(rank, size, total);
	MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_check: %s (%d errors), %d ranks, alltoall of %zu bytes\n",
		       all ? "FAILED" : "ok", all, size, total);
	free(buf);
	MPI_Finalize();
	return all != 0;
}

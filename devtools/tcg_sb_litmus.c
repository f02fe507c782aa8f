// SPDX-License-Identifier: BSD-3-Clause
/*
 * A store-buffering litmus test between code in a TCG guest and a host thread, over an
 * ivshmem region both map: does the guest's full barrier order its store before its
 * load, as the virtio rings need against QEMU's I/O thread? Run by tcg_sb_litmus.sh.
 *
 *   tcg_sb_litmus guest ITERATIONS          (in the VM: maps the ivshmem BAR)
 *   tcg_sb_litmus host SHM_FILE ITERATIONS  (on the host: maps the same file)
 *
 * Iteration k on each side: wait until the other side finished k - 1; store k to its own
 * word; full barrier; load the other side's word. With both barriers in effect one of
 * the two loads sees k; both seeing less is a store passing a load. The host prints how
 * often that happened. Exit: 0, 1 on a setup error.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SHM_SIZE (8u << 20)
#define LOG_SLOTS (1u << 20)

/* The shared region's layout; each word on its own cache line. */
struct litmus_shm {
	volatile uint32_t guest_word, pad0[15];
	volatile uint32_t host_word, pad1[15];
	volatile uint32_t guest_done, pad2[15];
	volatile uint32_t host_done, pad3[15];
	volatile uint32_t guest_loaded[LOG_SLOTS]; /* what the guest's load saw in k */
};
_Static_assert(sizeof(struct litmus_shm) <= SHM_SIZE, "the layout fits the region");

/* The ivshmem-plain device (1af4:1110): its BAR 2 is the shared memory. */
static void *map_ivshmem(void)
{
	const char *base = "/sys/bus/pci/devices";
	DIR *dir = opendir(base);
	struct dirent *e;
	char path[512], id[16];

	while (dir && (e = readdir(dir))) {
		snprintf(path, sizeof(path), "%s/%s/device", base, e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		int ok = fgets(id, sizeof(id), f) && !strncmp(id, "0x1110", 6);
		fclose(f);
		if (!ok)
			continue;
		snprintf(path, sizeof(path), "%s/%s/enable", base, e->d_name);
		int fd = open(path, O_WRONLY);
		if (fd >= 0) {
			if (write(fd, "1", 1) != 1)
				perror(path);
			close(fd);
		}
		snprintf(path, sizeof(path), "%s/%s/resource2", base, e->d_name);
		fd = open(path, O_RDWR | O_SYNC);
		void *m = fd < 0 ? MAP_FAILED :
				   mmap(NULL, SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			perror(path);
			exit(1);
		}
		return m;
	}
	fprintf(stderr, "tcg_sb_litmus: no ivshmem device (1af4:1110)\n");
	exit(1);
}

static void run_guest(struct litmus_shm *s, uint32_t iterations)
{
	for (uint32_t k = 1; k <= iterations; k++) {
		while (s->host_done < k - 1)
			;
		s->guest_word = k;
		/* Linux's smp_mb() and virtio_mb() on x86-64 */
		__asm__ volatile("lock; addl $0,-4(%%rsp)" ::: "memory", "cc");
		s->guest_loaded[k % LOG_SLOTS] = s->host_word;
		s->guest_done = k;
	}
}

static uint64_t run_host(struct litmus_shm *s, uint32_t iterations)
{
	uint64_t reordered = 0;

	for (uint32_t k = 1; k <= iterations; k++) {
		while (s->guest_done < k - 1)
			;
		s->host_word = k;
		__atomic_thread_fence(__ATOMIC_SEQ_CST); /* QEMU's smp_mb() */
		uint32_t loaded = s->guest_word;
		s->host_done = k;
		if (loaded < k) { /* we missed the guest's store k: did it miss ours? */
			while (s->guest_done < k)
				;
			if (s->guest_loaded[k % LOG_SLOTS] < k)
				reordered++;
		}
	}
	return reordered;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "guest")) {
		uint32_t n = (uint32_t)strtoul(argv[2], NULL, 0);
		run_guest(map_ivshmem(), n);
		printf("guest: %u iterations\n", n);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "host")) {
		uint32_t n = (uint32_t)strtoul(argv[3], NULL, 0);
		int fd = open(argv[2], O_RDWR);
		void *m = fd < 0 ? MAP_FAILED :
				   mmap(NULL, SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			perror(argv[2]);
			return 1;
		}
		memset(m, 0, sizeof(struct litmus_shm));
		printf("host: %u iterations, both loads stale (a store passed a load): %llu\n", n,
		       (unsigned long long)run_host(m, n));
		return 0;
	}
	fprintf(stderr, "usage: tcg_sb_litmus guest N | host SHM_FILE N\n");
	return 1;
}

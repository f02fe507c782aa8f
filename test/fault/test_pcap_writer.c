/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/capture's writer: what it writes reads back byte for byte and ns for ns through
 * our reader and through tshark; errors are sticky and reported. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "uroce_capture.h"

#define NFRAMES 1000

static char tmp_path[64];

static void make_tmp(void)
{
	int fd;

	strcpy(tmp_path, "/tmp/uroce-pcapw-XXXXXX");
	fd = mkstemp(tmp_path);
	cr_assert_geq(fd, 0);
	close(fd);
}

static void rm_tmp(void)
{
	unlink(tmp_path);
}

/* Frame i: a length from 14 to 9000 and bytes that depend on i and position. */
static uint32_t frame_len(uint32_t i)
{
	return 14 + (i * 7919u) % 8987u;
}

static void fill_frame(uint8_t *buf, uint32_t i, uint32_t len)
{
	for (uint32_t k = 0; k < len; k++)
		buf[k] = (uint8_t)(i * 31u + k * 7u + (k >> 8));
}

/* Times that exercise the nanosecond field: 0, the edges of a second, up to 2106. */
static uint64_t frame_ts(uint32_t i)
{
	if (i == 0)
		return 0;
	if (i == 1)
		return 999999999ull;
	if (i == 2)
		return (uint64_t)UINT32_MAX * 1000000000ull + 999999999ull;
	return 1700000000ull * 1000000000ull + (uint64_t)i * 1234567ull + (i & 1);
}

static void write_frames(uint32_t snaplen)
{
	struct uroce_pcap_writer w;
	static uint8_t buf[9100];

	cr_assert_eq(uroce_pcap_writer_open(&w, tmp_path, snaplen), 0);
	for (uint32_t i = 0; i < NFRAMES; i++) {
		uint32_t len = frame_len(i);

		fill_frame(buf, i, len);
		cr_assert_eq(uroce_pcap_writer_write(&w, frame_ts(i), buf, len, len + (i % 3)), 0);
		if (i == NFRAMES / 2)
			cr_assert_eq(uroce_pcap_writer_flush(&w), 0);
	}
	cr_assert_eq(w.records, NFRAMES);
	cr_assert_eq(uroce_pcap_writer_close(&w), 0);
}

Test(capture, write_then_read_back_exact_bytes_and_timestamps, .init = make_tmp, .fini = rm_tmp)
{
	struct uroce_pcap_reader *r = malloc(sizeof(*r));
	struct uroce_pcap_record rec;
	static uint8_t want[9100];
	uint32_t i = 0;

	cr_assert_not_null(r);
	write_frames(0);
	cr_assert_eq(uroce_pcap_open(r, tmp_path), 0);
	cr_expect(r->nanosecond);
	cr_expect(!r->swapped);
	while (uroce_pcap_next(r, &rec) == 1) {
		uint32_t len = frame_len(i);

		fill_frame(want, i, len);
		cr_assert_eq(rec.ts_ns, frame_ts(i), "frame %u: ts %lu", i,
			     (unsigned long)rec.ts_ns);
		cr_assert_eq(rec.caplen, len);
		cr_assert_eq(rec.origlen, len + (i % 3));
		cr_assert_eq(memcmp(rec.data, want, len), 0, "frame %u bytes differ", i);
		i++;
	}
	cr_expect_eq(i, NFRAMES);
	uroce_pcap_close(r);
	free(r);
}

Test(capture, snaplen_cuts_records_and_keeps_origlen, .init = make_tmp, .fini = rm_tmp)
{
	struct uroce_pcap_reader *r = malloc(sizeof(*r));
	struct uroce_pcap_record rec;
	static uint8_t want[9100];
	uint32_t i = 0;

	cr_assert_not_null(r);
	write_frames(100);
	cr_assert_eq(uroce_pcap_open(r, tmp_path), 0);
	while (uroce_pcap_next(r, &rec) == 1) {
		uint32_t len = frame_len(i);

		fill_frame(want, i, len);
		cr_assert_eq(rec.caplen, len < 100 ? len : 100);
		cr_assert_eq(rec.origlen, len + (i % 3));
		cr_assert_eq(memcmp(rec.data, want, rec.caplen), 0);
		i++;
	}
	cr_expect_eq(i, NFRAMES);
	uroce_pcap_close(r);
	free(r);
}

Test(capture, tshark_reads_the_file, .init = make_tmp, .fini = rm_tmp)
{
	char cmd[256], line[256];
	FILE *p;
	uint32_t i = 0;

	if (system("command -v tshark >/dev/null 2>&1") != 0)
		cr_skip_test("tshark is not installed");
	write_frames(0);
	snprintf(cmd, sizeof(cmd),
		 "tshark -n -r %s -T fields -e frame.cap_len -e frame.len -e frame.time_epoch "
		 "2>/dev/null", tmp_path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p) != NULL) {
		unsigned caplen, len;
		unsigned long long sec, nsec;
		uint64_t ts = frame_ts(i);

		cr_assert_eq(sscanf(line, "%u %u %llu.%9llu", &caplen, &len, &sec, &nsec), 4,
			     "tshark line %u: %s", i, line);
		cr_expect_eq(caplen, frame_len(i));
		cr_expect_eq(len, frame_len(i) + (i % 3));
		cr_expect_eq(sec, ts / 1000000000u, "frame %u: %s", i, line);
		cr_expect_eq(nsec, ts % 1000000000u, "frame %u: %s", i, line);
		i++;
	}
	cr_expect_eq(pclose(p), 0);
	cr_expect_eq(i, NFRAMES, "tshark counted %u frames", i);
}

Test(capture, errors_are_sticky_and_reported_at_close)
{
	struct uroce_pcap_writer w;
	uint8_t buf[1500] = {0};
	int rc;

	/* /dev/full: every write fails with ENOSPC once the buffer goes out. */
	cr_assert_eq(uroce_pcap_writer_open(&w, "/dev/full", 0), 0);
	cr_expect_eq(uroce_pcap_writer_write(&w, 1, buf, sizeof(buf), sizeof(buf)), 0);
	cr_expect_eq(uroce_pcap_writer_flush(&w), -ENOSPC);
	cr_expect_eq(uroce_pcap_writer_write(&w, 2, buf, sizeof(buf), sizeof(buf)), -ENOSPC);
	cr_expect_eq(w.records, 1);
	cr_expect_eq(uroce_pcap_writer_flush(&w), -ENOSPC);
	cr_expect_eq(uroce_pcap_writer_close(&w), -ENOSPC);

	/* Without an explicit flush the error is still reported by close. */
	cr_assert_eq(uroce_pcap_writer_open(&w, "/dev/full", 0), 0);
	for (int i = 0; i < 10; i++)
		uroce_pcap_writer_write(&w, 1, buf, sizeof(buf), sizeof(buf));
	cr_expect_eq(uroce_pcap_writer_close(&w), -ENOSPC);

	/* A frame bigger than the buffer goes straight to write(2): the error is immediate. */
	uint8_t *big = calloc(1, UROCE_PCAP_SNAPLEN_MAX);
	cr_assert_not_null(big);
	cr_assert_eq(uroce_pcap_writer_open(&w, "/dev/full", 0), 0);
	rc = uroce_pcap_writer_write(&w, 1, big, UROCE_PCAP_SNAPLEN_MAX, UROCE_PCAP_SNAPLEN_MAX);
	cr_expect_eq(rc, -ENOSPC);
	cr_expect_eq(uroce_pcap_writer_close(&w), -ENOSPC);
	free(big);
}

Test(capture, bad_arguments)
{
	struct uroce_pcap_writer w;
	uint8_t buf[64] = {0};

	cr_expect_eq(uroce_pcap_writer_open(&w, "/nonexistent-dir/x.pcap", 0), -ENOENT);
	cr_expect_eq(uroce_pcap_writer_open(&w, "/dev/null", UROCE_PCAP_SNAPLEN_MAX + 1), -EINVAL);
	cr_assert_eq(uroce_pcap_writer_open(&w, "/dev/null", 0), 0);
	cr_expect_eq(w.snaplen, UROCE_PCAP_SNAPLEN_MAX);
	cr_expect_eq(uroce_pcap_writer_write(&w, 0, buf, 64, 63), -EINVAL);
	cr_expect_eq(uroce_pcap_writer_write(&w, (uint64_t)UINT32_MAX * 1000000000ull +
					     1000000000ull, buf, 64, 64), -EOVERFLOW);
	/* Neither is sticky: they are the caller's mistakes, not the file's. */
	cr_expect_eq(uroce_pcap_writer_write(&w, 0, buf, 64, 64), 0);
	cr_expect_eq(uroce_pcap_writer_close(&w), 0);
	cr_expect_eq(uroce_pcap_writer_close(&w), -EINVAL);
}

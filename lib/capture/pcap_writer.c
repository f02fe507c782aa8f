/* SPDX-License-Identifier: BSD-3-Clause */
/* Writing classic pcap files: the 24-byte file header with the nanosecond magic, then a
 * 16-byte header and the bytes per record, all in host byte order (readers swap). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "uroce_capture.h"

#define PCAP_MAGIC_NS 0xa1b23c4du
#define WRITE_BUF (256u * 1024) /* a system call per 256 KiB: ~60 full-size frames */

/* Remembers the first error only: it is the cause, later ones are consequences. */
static int fail(struct uroce_pcap_writer *w, int err)
{
	if (w->err == 0)
		w->err = err;
	return w->err;
}

static int put(struct uroce_pcap_writer *w, const void *p, size_t n)
{
	if (n != 0 && fwrite(p, 1, n, w->f) != n)
		return fail(w, errno != 0 ? -errno : -EIO);
	return 0;
}

int uroce_pcap_writer_open(struct uroce_pcap_writer *w, const char *path, uint32_t snaplen)
{
	/* close-on-exec: the daemon's children must not hold it */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0) {
		memset(w, 0, sizeof(*w));
		return -errno;
	}
	return uroce_pcap_writer_open_fd(w, fd, snaplen);
}

int uroce_pcap_writer_open_fd(struct uroce_pcap_writer *w, int fd, uint32_t snaplen)
{
	uint32_t hdr[6];
	uint16_t ver[2] = {2, 4};
	int rc;

	memset(w, 0, sizeof(*w));
	if (snaplen > UROCE_PCAP_SNAPLEN_MAX) {
		close(fd);
		return -EINVAL;
	}
	w->snaplen = snaplen != 0 ? snaplen : UROCE_PCAP_SNAPLEN_MAX;
	w->f = fdopen(fd, "wb");
	if (w->f == NULL) {
		rc = -errno;
		close(fd);
		return rc;
	}
	/* A large buffer of our own size; stdio's default (4 KiB) means a write per frame. */
	setvbuf(w->f, NULL, _IOFBF, WRITE_BUF);
	hdr[0] = PCAP_MAGIC_NS;
	memcpy(&hdr[1], ver, sizeof(ver)); /* version 2.4 */
	hdr[2] = 0;                        /* thiszone: GMT */
	hdr[3] = 0;                        /* sigfigs */
	hdr[4] = w->snaplen;
	hdr[5] = UROCE_PCAP_LINKTYPE_ETHERNET;
	errno = 0;
	rc = put(w, hdr, sizeof(hdr));
	if (rc != 0) {
		fclose(w->f);
		w->f = NULL;
	}
	return rc;
}

int uroce_pcap_writer_write(struct uroce_pcap_writer *w, uint64_t ts_ns,
			    const uint8_t *data, uint32_t caplen, uint32_t origlen)
{
	uint32_t rec[4];
	uint64_t sec = ts_ns / 1000000000u;
	uint32_t n = caplen < w->snaplen ? caplen : w->snaplen;

	if (w->err != 0)
		return w->err;
	if (w->f == NULL || caplen > origlen)
		return -EINVAL;
	if (sec > UINT32_MAX)
		return -EOVERFLOW;
	rec[0] = (uint32_t)sec;
	rec[1] = (uint32_t)(ts_ns % 1000000000u);
	rec[2] = n;
	rec[3] = origlen;
	errno = 0;
	if (put(w, rec, sizeof(rec)) != 0 || put(w, data, n) != 0)
		return w->err;
	w->records++;
	w->truncated += n < caplen;
	return 0;
}

int uroce_pcap_writer_flush(struct uroce_pcap_writer *w)
{
	if (w->err != 0)
		return w->err;
	if (w->f == NULL)
		return -EINVAL;
	errno = 0;
	if (fflush(w->f) != 0)
		return fail(w, errno != 0 ? -errno : -EIO);
	return 0;
}

int uroce_pcap_writer_close(struct uroce_pcap_writer *w)
{
	if (w->f == NULL)
		return w->err != 0 ? w->err : -EINVAL;
	uroce_pcap_writer_flush(w);
	errno = 0;
	if (fclose(w->f) != 0)
		fail(w, errno != 0 ? -errno : -EIO);
	w->f = NULL;
	return w->err;
}

/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_CAPTURE_H
#define UROCE_CAPTURE_H

/**
 * @file
 * Classic pcap files (the format tcpdump, tshark and Wireshark read): reading Ethernet
 * captures record by record. Both byte orders and both time resolutions (micro- and
 * nanosecond magic) are understood; other link types are refused at open.
 *
 * Writing (the daemon's capture tap, tests): nanosecond-resolution files in host byte
 * order with the Ethernet link type, as `tcpdump --time-stamp-precision=nano -w` makes
 * them. Records go through a stdio buffer, so a write costs a memcpy and the system call
 * happens once per buffer; uroce_pcap_writer_flush() pushes the buffer out (the daemon
 * calls it when idle, so a capture is readable while it runs). Errors are sticky: the
 * first failure (a full disk, say) is remembered, every later call returns it and
 * writes nothing, and close reports it, so a caller that checks only close still learns
 * that its capture is incomplete. A writer is used by one thread at a time.
 */

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UROCE_PCAP_LINKTYPE_ETHERNET 1
#define UROCE_PCAP_SNAPLEN_MAX 262144u

struct uroce_pcap_record {
	uint64_t ts_ns;       /**< capture time, ns since the epoch */
	uint32_t caplen;      /**< bytes in @ref data */
	uint32_t origlen;     /**< bytes the frame had on the wire */
	const uint8_t *data;  /**< valid until the next call on the reader */
};

struct uroce_pcap_reader {
	FILE *f;
	int swapped;          /* file written in the other byte order */
	int nanosecond;       /* timestamps in ns rather than us */
	uint32_t linktype;
	uint64_t index;       /* records read so far */
	uint8_t buf[UROCE_PCAP_SNAPLEN_MAX];
};

/** @return 0, or -errno (-EINVAL: not a pcap file; -EPROTONOSUPPORT: not Ethernet). */
int uroce_pcap_open(struct uroce_pcap_reader *r, const char *path);
/** @return 1 and @p rec filled, 0 at the end of the file, or -EINVAL on a damaged record. */
int uroce_pcap_next(struct uroce_pcap_reader *r, struct uroce_pcap_record *rec);
void uroce_pcap_close(struct uroce_pcap_reader *r);

struct uroce_pcap_writer {
	FILE *f;
	uint32_t snaplen;     /* records are cut to this many bytes */
	int err;              /* first error, -errno; 0 while all is well (sticky) */
	uint64_t records;     /* records written (accepted into the buffer) */
	uint64_t truncated;   /* of which cut to snaplen */
};

/**
 * Creates (or truncates) @p path and writes the file header. @p snaplen is the most
 * bytes kept per frame, written into the header; 0 means UROCE_PCAP_SNAPLEN_MAX.
 * @return 0, or -errno (-EINVAL: snaplen above UROCE_PCAP_SNAPLEN_MAX; fopen's errno).
 */
int uroce_pcap_writer_open(struct uroce_pcap_writer *w, const char *path, uint32_t snaplen);
/**
 * The same on a file descriptor open for writing (a process that may not open the path
 * itself is handed it: uroced's capture). The writer owns @p fd from the call on, and
 * closes it on any failure. @return 0 or -errno (-EINVAL: snaplen; fdopen's errno).
 */
int uroce_pcap_writer_open_fd(struct uroce_pcap_writer *w, int fd, uint32_t snaplen);
/**
 * Appends one frame captured at @p ts_ns (ns since the epoch) that had @p origlen bytes
 * on the wire, of which @p caplen are at @p data. Bytes beyond the snaplen are left out
 * (the record keeps @p origlen, as tcpdump -s does).
 * @return 0, or -errno: -EINVAL (caplen > origlen, or no file), -EOVERFLOW (a time
 * after 2106, which the format's 32-bit seconds cannot hold), or the sticky error.
 */
int uroce_pcap_writer_write(struct uroce_pcap_writer *w, uint64_t ts_ns,
			    const uint8_t *data, uint32_t caplen, uint32_t origlen);
/** Pushes buffered records to the kernel. @return 0 or the sticky -errno. */
int uroce_pcap_writer_flush(struct uroce_pcap_writer *w);
/** Flushes and closes (always closes). @return 0, or the first error the writer met. */
int uroce_pcap_writer_close(struct uroce_pcap_writer *w);

#ifdef __cplusplus
}
#endif

#endif

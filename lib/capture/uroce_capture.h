/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_CAPTURE_H
#define UROCE_CAPTURE_H

/**
 * @file
 * Classic pcap files (the format tcpdump, tshark and Wireshark read): reading Ethernet
 * captures record by record. Both byte orders and both time resolutions (micro- and
 * nanosecond magic) are understood; other link types are refused at open.
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

#ifdef __cplusplus
}
#endif

#endif

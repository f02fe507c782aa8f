/* SPDX-License-Identifier: BSD-3-Clause */
/* The classic libpcap file format: a 24-byte file header, then per record a 16-byte
 * header (seconds, sub-seconds, captured length, original length) and the bytes. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "uroce_capture.h"

#define PCAP_MAGIC_US 0xa1b2c3d4u
#define PCAP_MAGIC_NS 0xa1b23c4du

static uint32_t field32(const struct uroce_pcap_reader *r, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return r->swapped ? __builtin_bswap32(v) : v;
}

int uroce_pcap_open(struct uroce_pcap_reader *r, const char *path)
{
	uint8_t hdr[24];
	uint32_t magic;

	memset(r, 0, offsetof(struct uroce_pcap_reader, buf));
	r->f = fopen(path, "rb");
	if (r->f == NULL)
		return -errno;
	if (fread(hdr, 1, sizeof(hdr), r->f) != sizeof(hdr))
		goto bad;
	memcpy(&magic, hdr, 4);
	if (magic == PCAP_MAGIC_US || magic == PCAP_MAGIC_NS) {
		r->swapped = 0;
	} else if (__builtin_bswap32(magic) == PCAP_MAGIC_US ||
		   __builtin_bswap32(magic) == PCAP_MAGIC_NS) {
		r->swapped = 1;
		magic = __builtin_bswap32(magic);
	} else {
		goto bad;
	}
	r->nanosecond = magic == PCAP_MAGIC_NS;
	r->linktype = field32(r, hdr + 20) & 0x0fffffff; /* top bits: FCS length flags */
	if (r->linktype != UROCE_PCAP_LINKTYPE_ETHERNET) {
		fclose(r->f);
		r->f = NULL;
		return -EPROTONOSUPPORT;
	}
	return 0;
bad:
	fclose(r->f);
	r->f = NULL;
	return -EINVAL;
}

int uroce_pcap_next(struct uroce_pcap_reader *r, struct uroce_pcap_record *rec)
{
	uint8_t hdr[16];
	size_t n = fread(hdr, 1, sizeof(hdr), r->f);
	uint32_t sec, frac;

	if (n == 0 && feof(r->f))
		return 0;
	if (n != sizeof(hdr))
		return -EINVAL;
	sec = field32(r, hdr);
	frac = field32(r, hdr + 4);
	rec->caplen = field32(r, hdr + 8);
	rec->origlen = field32(r, hdr + 12);
	if (rec->caplen > UROCE_PCAP_SNAPLEN_MAX || rec->caplen > rec->origlen)
		return -EINVAL;
	if (fread(r->buf, 1, rec->caplen, r->f) != rec->caplen)
		return -EINVAL;
	rec->ts_ns = (uint64_t)sec * 1000000000u + (uint64_t)frac * (r->nanosecond ? 1 : 1000);
	rec->data = r->buf;
	r->index++;
	return 1;
}

void uroce_pcap_close(struct uroce_pcap_reader *r)
{
	if (r->f != NULL)
		fclose(r->f);
	r->f = NULL;
}

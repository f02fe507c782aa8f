/* SPDX-License-Identifier: BSD-3-Clause */
/* Test support: every frame of every capture in $UROCE_PCAP_DIR, loaded into memory. */
#ifndef UROCE_TEST_PCAP_CORPUS_H
#define UROCE_TEST_PCAP_CORPUS_H

#include <stdint.h>

struct corpus_frame {
	char file[256];    /* capture's file name, without directory */
	uint32_t number;   /* 1-based frame number, as tshark counts */
	uint32_t len;
	uint8_t *data;
};

struct corpus {
	struct corpus_frame *frames;
	uint32_t count;
	uint32_t files;
};

/* Loads all *.pcap files of $UROCE_PCAP_DIR (sorted by name); aborts the test with a
 * message if the directory or a file cannot be read. */
void corpus_load(struct corpus *c);
void corpus_free(struct corpus *c);

#endif

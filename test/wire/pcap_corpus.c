/* SPDX-License-Identifier: BSD-3-Clause */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "pcap_corpus.h"
#include "uroce_capture.h"

static int is_pcap(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return n > 5 && strcmp(d->d_name + n - 5, ".pcap") == 0;
}

void corpus_load(struct corpus *c)
{
	static struct uroce_pcap_reader r;
	const char *dir = getenv("UROCE_PCAP_DIR");
	struct dirent **names;
	int n;

	memset(c, 0, sizeof(*c));
	cr_assert_not_null(dir, "UROCE_PCAP_DIR is not set (meson test sets it)");
	n = scandir(dir, &names, is_pcap, alphasort);
	cr_assert_gt(n, 0, "no .pcap files in %s", dir);
	for (int i = 0; i < n; i++) {
		struct uroce_pcap_record rec;
		char path[4096];
		uint32_t number = 0;
		int rc;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		rc = uroce_pcap_open(&r, path);
		cr_assert_eq(rc, 0, "%s: cannot open: %d", path, rc);
		while ((rc = uroce_pcap_next(&r, &rec)) == 1) {
			struct corpus_frame *f;

			c->frames = realloc(c->frames, (c->count + 1) * sizeof(*c->frames));
			cr_assert_not_null(c->frames);
			f = &c->frames[c->count++];
			snprintf(f->file, sizeof(f->file), "%s", names[i]->d_name);
			f->number = ++number;
			f->len = rec.caplen;
			f->data = malloc(rec.caplen);
			cr_assert_not_null(f->data);
			memcpy(f->data, rec.data, rec.caplen);
		}
		cr_assert_eq(rc, 0, "%s: damaged record after frame %u", path, number);
		uroce_pcap_close(&r);
		free(names[i]);
		c->files++;
	}
	free(names);
}

void corpus_free(struct corpus *c)
{
	for (uint32_t i = 0; i < c->count; i++)
		free(c->frames[i].data);
	free(c->frames);
	memset(c, 0, sizeof(*c));
}

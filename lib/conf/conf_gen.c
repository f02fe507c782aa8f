/* SPDX-License-Identifier: BSD-3-Clause */
/* Prints what the uroced.conf table generates: the default file (config/uroced.conf), the
 * key reference (doc/config.md) and the man page uroced.conf(5) (the build makes it from
 * doc/man/uroced.conf.5.in). test_conf checks both committed files against it:
 *   build/lib/conf/uroce-conf-gen --defaults > config/uroced.conf
 *   build/lib/conf/uroce-conf-gen --markdown   (paste into doc/config.md)
 *   build/lib/conf/uroce-conf-gen --man TEMPLATE   (its line "@KEYS@" becomes the keys) */
#include <stdio.h>
#include <string.h>

#include "uroce_conf.h"

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--defaults") == 0) {
		uroce_conf_print_defaults(stdout);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--markdown") == 0) {
		uroce_conf_table_markdown(&uroce_conf_uroced, stdout);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--man") == 0) {
		FILE *f = fopen(argv[2], "re");
		char line[1024];

		if (!f) {
			perror(argv[2]);
			return 1;
		}
		while (fgets(line, sizeof(line), f)) {
			if (strcmp(line, "@KEYS@\n") == 0)
				uroce_conf_table_man(&uroce_conf_uroced, stdout);
			else
				fputs(line, stdout);
		}
		fclose(f);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--check") == 0) {
		struct uroce_conf c;
		char err[512];

		uroce_conf_defaults(&c);
		if (uroce_conf_load(&c, argv[2], err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		uroce_conf_print(&c, stdout);
		return 0;
	}
	fprintf(stderr, "usage: %s --defaults | --markdown | --man TEMPLATE | --check FILE\n",
		argv[0]);
	return 2;
}

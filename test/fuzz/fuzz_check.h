/* SPDX-License-Identifier: BSD-3-Clause */
/* What the fuzz targets share: a failed oracle traps, so libFuzzer keeps the input. */
#ifndef UROCE_FUZZ_CHECK_H
#define UROCE_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond))                                                               \
			__builtin_trap();                                                  \
	} while (0)

#endif

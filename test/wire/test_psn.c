/* SPDX-License-Identifier: BSD-3-Clause */
/* 24-bit PSN arithmetic across the 2^24 wrap (IBA 9.7.1). */
#include <criterion/criterion.h>

#include "uroce_wire.h"

Test(psn, add_wraps_at_2_24)
{
	cr_expect_eq(uroce_psn_add(0xffffff, 1), 0);
	cr_expect_eq(uroce_psn_add(0xfffff0, 0x20), 0x10);
	cr_expect_eq(uroce_psn_add(0, -1), 0xffffff);
	cr_expect_eq(uroce_psn_add(5, -10), 0xfffffb);
	cr_expect_eq(uroce_psn_add(0x123456, 0), 0x123456);
}

Test(psn, diff_is_signed_and_circular)
{
	cr_expect_eq(uroce_psn_diff(0, 0xffffff), 1);
	cr_expect_eq(uroce_psn_diff(0xffffff, 0), -1);
	cr_expect_eq(uroce_psn_diff(0x10, 0xfffff0), 0x20);
	cr_expect_eq(uroce_psn_diff(0xfffff0, 0x10), -0x20);
	cr_expect_eq(uroce_psn_diff(0x7fffff, 0), 0x7fffff);  /* largest "after" */
	cr_expect_eq(uroce_psn_diff(0x800000, 0), -0x800000); /* half way counts as before */
	/* Inputs with bits above 24 (a careless caller) are reduced like the wire would. */
	cr_expect_eq(uroce_psn_diff(0x1000005, 3), 2);
}

Test(psn, before_after_agree_with_diff_everywhere_near_the_wrap)
{
	/* Every pair within a window of +-4096 around the wrap and around zero. */
	static const uint32_t centres[] = {0, 0xffffff, 0x800000, 0x7fffff};

	for (size_t c = 0; c < sizeof(centres) / sizeof(centres[0]); c++) {
		for (int32_t d = -4096; d <= 4096; d++) {
			uint32_t a = uroce_psn_add(centres[c], d);
			uint32_t b = centres[c];

			cr_assert_eq(uroce_psn_diff(a, b), d, "a=%06x b=%06x d=%d", a, b, d);
			cr_assert_eq(uroce_psn_after(a, b), d > 0);
			cr_assert_eq(uroce_psn_before(a, b), d < 0);
			cr_assert_eq(uroce_psn_add(b, uroce_psn_diff(a, b)), a);
		}
	}
}

Test(psn, diff_is_antisymmetric_except_at_half_the_space)
{
	for (uint32_t a = 0; a < (1u << 24); a += 65521) {
		for (uint32_t b = 3; b < (1u << 24); b += 104729) {
			int32_t d = uroce_psn_diff(a, b);

			if (d == -0x800000)
				continue;
			cr_assert_eq(uroce_psn_diff(b, a), -d, "a=%06x b=%06x", a, b);
		}
	}
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* RoCEv2 GIDs of IPv4 addresses: ::ffff:a.b.c.d, RFC 4291 2.5.5.2. */
#include <arpa/inet.h>
#include <string.h>

#include <criterion/criterion.h>

#include "uroce_wire.h"

Test(gid, from_ipv4_is_the_v4_mapped_address)
{
	static const uint8_t want[UROCE_GID_LEN] = {[10] = 0xff, 0xff, 198, 18, 0, 2};
	uint8_t gid[UROCE_GID_LEN];
	struct in_addr a;

	/* Every byte is written, whatever was there. */
	memset(gid, 0xa5, sizeof(gid));
	cr_assert_eq(inet_pton(AF_INET, "198.18.0.2", &a), 1);
	uroce_gid_from_ipv4(gid, &a);
	cr_assert_arr_eq(gid, want, UROCE_GID_LEN);
}

Test(gid, from_ipv4_matches_inet_pton_of_the_mapped_form)
{
	uint8_t gid[UROCE_GID_LEN], ref[UROCE_GID_LEN];

	uroce_gid_from_ipv4(gid, (const uint8_t[4]){10, 0, 0, 1});
	cr_assert_eq(inet_pton(AF_INET6, "::ffff:10.0.0.1", ref), 1);
	cr_assert_arr_eq(gid, ref, UROCE_GID_LEN);
}

Test(gid, is_ipv4_only_for_the_v4_mapped_prefix)
{
	static const char *const v4[] = {"::ffff:10.0.0.1", "::ffff:0.0.0.0", "::ffff:224.0.0.5",
					 "::ffff:255.255.255.255"};
	static const char *const not_v4[] = {"::", "::1", "::10.0.0.1", "fe80::ffff:a00:1",
					     "::fffe:10.0.0.1", "::1:ffff:10.0.0.1", "ff02::1",
					     "2001:db8::ffff:a00:1", "0:ffff::ffff:a00:1"};
	uint8_t gid[UROCE_GID_LEN];

	for (size_t i = 0; i < sizeof(v4) / sizeof(v4[0]); i++) {
		cr_assert_eq(inet_pton(AF_INET6, v4[i], gid), 1);
		cr_expect(uroce_gid_is_ipv4(gid), "%s", v4[i]);
	}
	for (size_t i = 0; i < sizeof(not_v4) / sizeof(not_v4[0]); i++) {
		cr_assert_eq(inet_pton(AF_INET6, not_v4[i], gid), 1);
		cr_expect_not(uroce_gid_is_ipv4(gid), "%s", not_v4[i]);
	}
}

Test(gid, ipv4_gives_back_the_address_in_network_order)
{
	uint8_t gid[UROCE_GID_LEN];
	struct in_addr a, back;

	cr_assert_eq(inet_pton(AF_INET, "192.0.2.33", &a), 1);
	uroce_gid_from_ipv4(gid, &a);
	cr_assert(uroce_gid_is_ipv4(gid));
	cr_assert_eq(uroce_gid_ipv4(gid), gid + 12, "a view into the GID, not a copy");
	memcpy(&back, uroce_gid_ipv4(gid), 4);
	cr_assert_eq(back.s_addr, a.s_addr);
	cr_assert_eq(uroce_gid_ipv4(gid)[0], 192);
	cr_assert_eq(uroce_gid_ipv4(gid)[3], 33);
}

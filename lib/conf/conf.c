/* SPDX-License-Identifier: BSD-3-Clause */
/* The table-driven parser and printer. A parse works on a copy of the object and copies
 * it back only when the whole text was good: all or nothing. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "uroce_conf.h"

#define MSG_LEN 512

/* ---- small helpers ------------------------------------------------------------------- */

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static char *trim(char *s)
{
	char *e;

	while (is_blank(*s))
		s++;
	e = s + strlen(s);
	while (e > s && is_blank(e[-1]))
		*--e = '\0';
	return s;
}

static void msgf(char *msg, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void msgf(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
}

/* Values quoted in messages are cut, so one absurd line cannot push the line number and
 * key out of the message. */
static const char *cut(const char *v, char *buf, size_t len)
{
	size_t n = strlen(v);

	if (n < len)
		return v;
	memcpy(buf, v, len - 4);
	strcpy(buf + len - 4, "...");
	return buf;
}

static void *field(void *obj, size_t off)
{
	return (char *)obj + off;
}

static const void *cfield(const void *obj, size_t off)
{
	return (const char *)obj + off;
}

/* ---- values -------------------------------------------------------------------------- */

/* Decimal or octal digits only: no sign, no space, no 0x, no suffix. */
static int parse_u64(const char *s, unsigned base, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (*s < '0' || d >= base)
			return -1;
		if (v > (UINT64_MAX - d) / base)
			return -2;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

/* Octal as C writes it: 0 alone, else with a leading 0. */
static const char *octal(uint64_t v, char *buf, size_t len)
{
	snprintf(buf, len, v == 0 ? "0" : "0%llo", (unsigned long long)v);
	return buf;
}

static int set_uint(const struct uroce_conf_key *k, void *obj, const char *v, char *msg,
		    size_t len)
{
	unsigned base = k->type == UROCE_CONF_OCTAL ? 8 : 10;
	uint64_t x = 0;
	char c[64], lo[32], hi[32];
	int rc = parse_u64(v, base, &x);

	if (rc == -1) {
		msgf(msg, len, "'%s' is not %s", cut(v, c, sizeof(c)),
		     base == 8 ? "an octal number (digits 0-7)" : "an unsigned decimal integer");
		return -1;
	}
	if (base == 10 && v[0] == '0' && v[1] != '\0') {
		/* 0660 in a decimal key is most likely someone expecting octal. */
		msgf(msg, len, "'%s' has a leading zero (the value is decimal)",
		     cut(v, c, sizeof(c)));
		return -1;
	}
	if (rc == -2 || x < k->min || x > k->max) {
		if (base == 8)
			msgf(msg, len, "%s is out of range %s..%s", cut(v, c, sizeof(c)),
			     octal(k->min, lo, sizeof(lo)), octal(k->max, hi, sizeof(hi)));
		else
			msgf(msg, len, "%s is out of range %llu..%llu", cut(v, c, sizeof(c)),
			     (unsigned long long)k->min, (unsigned long long)k->max);
		return -1;
	}
	if (k->size == 8) {
		memcpy(field(obj, k->off), &x, 8);
	} else {
		uint32_t y = (uint32_t)x;

		memcpy(field(obj, k->off), &y, 4);
	}
	return 0;
}

static int set_bool(const struct uroce_conf_key *k, void *obj, const char *v, char *msg,
		    size_t len)
{
	static const char *const yes[] = {"yes", "true", "1"}, *const no[] = {"no", "false", "0"};
	char c[64];

	for (size_t i = 0; i < 3; i++) {
		if (strcasecmp(v, yes[i]) == 0 || strcasecmp(v, no[i]) == 0) {
			*(bool *)field(obj, k->off) = strcasecmp(v, yes[i]) == 0;
			return 0;
		}
	}
	msgf(msg, len, "'%s' is not a boolean (yes, no, true, false, 1, 0)", cut(v, c, sizeof(c)));
	return -1;
}

static int set_double(const struct uroce_conf_key *k, void *obj, const char *v, char *msg,
		      size_t len)
{
	char c[64], *end;
	double x;

	/* strtod alone would take "nan", "inf", hex floats and leading spaces. */
	if (*v == '\0' || strspn(v, "0123456789.eE+-") != strlen(v) ||
	    strpbrk(v, "0123456789") == NULL)
		goto bad;
	errno = 0;
	x = strtod(v, &end);
	if (*end != '\0' || !isfinite(x))
		goto bad;
	if (!(x >= k->dmin && x <= k->dmax)) {
		msgf(msg, len, "%s is out of range %g..%g", cut(v, c, sizeof(c)), k->dmin, k->dmax);
		return -1;
	}
	memcpy(field(obj, k->off), &x, sizeof(x));
	return 0;
bad:
	msgf(msg, len, "'%s' is not a number", cut(v, c, sizeof(c)));
	return -1;
}

static int set_choice(const struct uroce_conf_key *k, void *obj, const char *v, char *msg,
		      size_t len)
{
	char c[64];
	size_t n;

	for (int i = 0; k->choices[i] != NULL; i++) {
		if (strcmp(v, k->choices[i]) == 0) {
			memcpy(field(obj, k->off), &i, sizeof(i));
			return 0;
		}
	}
	n = (size_t)snprintf(msg, len, "'%s' is not one of:", cut(v, c, sizeof(c)));
	for (int i = 0; k->choices[i] != NULL && n < len; i++)
		n += (size_t)snprintf(msg + n, len - n, "%s %s", i ? "," : "", k->choices[i]);
	return -1;
}

static int set_string(const struct uroce_conf_key *k, void *obj, const char *v, char *msg,
		      size_t len)
{
	size_t n = strlen(v);

	if (n >= k->size) {
		msgf(msg, len, "too long: %zu bytes, at most %zu", n, k->size - 1);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
			msgf(msg, len, "control character 0x%02x in the value",
			     (unsigned char)v[i]);
			return -1;
		}
		if (v[i] == '"') {
			msgf(msg, len, "a double quote inside a value is not allowed");
			return -1;
		}
	}
	/* The whole array: no stale bytes of an older value, so configs compare with memcmp. */
	memset(field(obj, k->off), 0, k->size);
	memcpy(field(obj, k->off), v, n);
	return 0;
}

static int host_ip(int af, const void *a)
{
	const uint8_t *b = a;

	if (af == AF_INET) {
		static const uint8_t any[4], bcast[4] = {255, 255, 255, 255};

		return memcmp(b, any, 4) != 0 && memcmp(b, bcast, 4) != 0 && (b[0] & 0xf0) != 0xe0;
	}
	static const uint8_t any6[16];

	return memcmp(b, any6, 16) != 0 && b[0] != 0xff;
}

static int set_ip_list(const struct uroce_conf_key *k, void *obj, const char *v, char *msg,
		       size_t len)
{
	int af = k->type == UROCE_CONF_IPV4 ? AF_INET : AF_INET6;
	size_t asz = af == AF_INET ? sizeof(struct in_addr) : sizeof(struct in6_addr);
	const char *kind = af == AF_INET ? "IPv4" : "IPv6";
	uint8_t addrs[64][16];
	uint32_t n = 0;
	char item[64], c[64];
	const char *p = v;

	while (is_blank(*p))
		p++;
	/* An empty value is an empty list; otherwise every element must be there. */
	while (*p != '\0') {
		const char *e = strchr(p, ',');
		size_t il = e != NULL ? (size_t)(e - p) : strlen(p);
		char *a;

		if (il >= sizeof(item)) {
			memcpy(item, p, sizeof(item) - 4);
			strcpy(item + sizeof(item) - 4, "...");
			msgf(msg, len, "'%s' is not an %s address", trim(item), kind);
			return -1;
		}
		memcpy(item, p, il);
		item[il] = '\0';
		a = trim(item);
		if (*a == '\0') {
			msgf(msg, len, "empty element in the list");
			return -1;
		}
		if (n == k->max || n == sizeof(addrs) / sizeof(addrs[0])) {
			msgf(msg, len, "more than %llu addresses", (unsigned long long)k->max);
			return -1;
		}
		if (inet_pton(af, a, addrs[n]) != 1) {
			msgf(msg, len, "'%s' is not an %s address", cut(a, c, sizeof(c)), kind);
			return -1;
		}
		if (!host_ip(af, addrs[n])) {
			msgf(msg, len,
			     "%s is not a host address (unspecified, multicast or broadcast)", a);
			return -1;
		}
		for (uint32_t i = 0; i < n; i++) {
			if (memcmp(addrs[i], addrs[n], asz) == 0) {
				msgf(msg, len, "%s is listed twice", a);
				return -1;
			}
		}
		n++;
		if (e == NULL)
			break;
		p = e + 1;
		if (*p == '\0') { /* "a," */
			msgf(msg, len, "empty element in the list");
			return -1;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		memcpy((char *)field(obj, k->off) + i * asz, addrs[i], asz);
	memset((char *)field(obj, k->off) + n * asz, 0, (k->max - n) * asz);
	memcpy(field(obj, k->count_off), &n, sizeof(n));
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int set_mac(const struct uroce_conf_key *k, void *obj, const char *v, char *msg,
		   size_t len)
{
	static const uint8_t zero[6];
	uint8_t m[6];
	char c[64];

	if (*v == '\0') {
		memset(field(obj, k->off), 0, 6);
		return 0;
	}
	if (strlen(v) != 17)
		goto bad;
	for (int i = 0; i < 6; i++) {
		int hi = hexval(v[3 * i]), lo = hexval(v[3 * i + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && v[3 * i + 2] != v[2]))
			goto bad;
		m[i] = (uint8_t)(hi << 4 | lo);
	}
	if (v[2] != ':' && v[2] != '-')
		goto bad;
	if (m[0] & 1) {
		msgf(msg, len, "%s is a multicast address", v);
		return -1;
	}
	if (memcmp(m, zero, 6) == 0) {
		msgf(msg, len, "%s is not a host address (leave the value empty for the default)",
		     v);
		return -1;
	}
	memcpy(field(obj, k->off), m, 6);
	return 0;
bad:
	msgf(msg, len, "'%s' is not a MAC address (like 02:00:00:00:00:01)", cut(v, c, sizeof(c)));
	return -1;
}

static int set_value(const struct uroce_conf_key *k, void *obj, const char *v, char *msg,
		     size_t len)
{
	switch (k->type) {
	case UROCE_CONF_STRING:
		return set_string(k, obj, v, msg, len);
	case UROCE_CONF_UINT:
	case UROCE_CONF_OCTAL:
		return set_uint(k, obj, v, msg, len);
	case UROCE_CONF_BOOL:
		return set_bool(k, obj, v, msg, len);
	case UROCE_CONF_DOUBLE:
		return set_double(k, obj, v, msg, len);
	case UROCE_CONF_CHOICE:
		return set_choice(k, obj, v, msg, len);
	case UROCE_CONF_IPV4:
	case UROCE_CONF_IPV6:
		return set_ip_list(k, obj, v, msg, len);
	case UROCE_CONF_MAC:
		return set_mac(k, obj, v, msg, len);
	}
	msgf(msg, len, "key of unknown type");
	return -1;
}

void uroce_conf_format_value(const struct uroce_conf_key *k, const void *obj, char *buf,
			     size_t len)
{
	const void *p = cfield(obj, k->off);
	uint64_t u = 0;
	size_t n = 0;

	buf[0] = '\0';
	switch (k->type) {
	case UROCE_CONF_STRING:
		snprintf(buf, len, "%s", (const char *)p);
		break;
	case UROCE_CONF_UINT:
	case UROCE_CONF_OCTAL:
		if (k->size == 8) {
			memcpy(&u, p, 8);
		} else {
			uint32_t y;

			memcpy(&y, p, 4);
			u = y;
		}
		if (k->type == UROCE_CONF_OCTAL)
			octal(u, buf, len);
		else
			snprintf(buf, len, "%llu", (unsigned long long)u);
		break;
	case UROCE_CONF_BOOL:
		snprintf(buf, len, "%s", *(const bool *)p ? "yes" : "no");
		break;
	case UROCE_CONF_DOUBLE: {
		double x;

		memcpy(&x, p, sizeof(x));
		/* The shortest form that reads back as the same double. */
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(buf, len, "%.*g", prec, x);
			if (strtod(buf, NULL) == x)
				break;
		}
		break;
	}
	case UROCE_CONF_CHOICE: {
		int i;

		memcpy(&i, p, sizeof(i));
		snprintf(buf, len, "%s", k->choices[i]);
		break;
	}
	case UROCE_CONF_IPV4:
	case UROCE_CONF_IPV6: {
		int af = k->type == UROCE_CONF_IPV4 ? AF_INET : AF_INET6;
		size_t asz = af == AF_INET ? sizeof(struct in_addr) : sizeof(struct in6_addr);
		uint32_t cnt;
		char a[INET6_ADDRSTRLEN];

		memcpy(&cnt, cfield(obj, k->count_off), sizeof(cnt));
		for (uint32_t i = 0; i < cnt && i < k->max && n < len; i++) {
			inet_ntop(af, (const char *)p + i * asz, a, sizeof(a));
			n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", a);
		}
		break;
	}
	case UROCE_CONF_MAC: {
		const uint8_t *m = p;
		static const uint8_t zero[6];

		if (memcmp(m, zero, 6) != 0)
			snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3],
				 m[4], m[5]);
		break;
	}
	}
}

/* ---- keys ---------------------------------------------------------------------------- */

static int section_known(const struct uroce_conf_table *t, const char *s)
{
	for (size_t i = 0; i < t->nkeys; i++)
		if (strcmp(t->keys[i].section, s) == 0)
			return 1;
	return 0;
}

static long find_key(const struct uroce_conf_table *t, const char *sec, size_t seclen,
		     const char *name)
{
	for (size_t i = 0; i < t->nkeys; i++)
		if (strlen(t->keys[i].section) == seclen &&
		    strncmp(t->keys[i].section, sec, seclen) == 0 &&
		    strcmp(t->keys[i].name, name) == 0)
			return (long)i;
	return -1;
}

/* Edit distance, for "did you mean": keys are short, so the quadratic cost is nothing. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[80];

	if (la >= 79 || lb >= 79)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

static void unknown_key(const struct uroce_conf_table *t, const char *full, char *msg,
			size_t len)
{
	char best[128] = "", c[64], kn[128];
	size_t bd = 3;

	for (size_t i = 0; i < t->nkeys; i++) {
		size_t d;

		snprintf(kn, sizeof(kn), "%s.%s", t->keys[i].section, t->keys[i].name);
		d = distance(full, kn);
		if (d < bd) {
			bd = d;
			snprintf(best, sizeof(best), "%s", kn);
		}
	}
	if (best[0] != '\0')
		msgf(msg, len, "unknown key %s (did you mean %s?)", cut(full, c, sizeof(c)), best);
	else
		msgf(msg, len, "unknown key %s", cut(full, c, sizeof(c)));
}

static int key_chars_ok(const char *k)
{
	return *k != '\0' && strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789_.") == strlen(k);
}

/* Splits "value  # comment" or "\"value\" # comment"; NULL and a message when malformed. */
static char *value_of(char *v, char *msg, size_t len)
{
	char *e;

	v = trim(v);
	if (*v == '"') {
		e = strchr(v + 1, '"');
		if (e == NULL) {
			msgf(msg, len, "unterminated quoted value");
			return NULL;
		}
		*e = '\0';
		for (char *r = e + 1; *r != '\0'; r++) {
			if (*r == '#')
				break;
			if (!is_blank(*r)) {
				msgf(msg, len, "text after the closing quote");
				return NULL;
			}
		}
		return v + 1;
	}
	/* A comment starts at a '#' at the beginning or after white space: "a#b" is a value. */
	for (e = v; *e != '\0'; e++) {
		if (*e == '#' && (e == v || is_blank(e[-1]))) {
			*e = '\0';
			break;
		}
	}
	return trim(v);
}

/* One "key = value" line (or --set assignment). @p section: the current section, or NULL. */
static int assign(const struct uroce_conf_table *t, void *obj, char *line,
		  const char *section, int cmdline, long *idx, char *msg, size_t len)
{
	char *eq = strchr(line, '='), *key, *val, *dot, c[64];
	char kmsg[MSG_LEN];
	long i;

	*idx = -1;
	if (eq == NULL) {
		msgf(msg, len, "expected %s: '%s'",
		     cmdline ? "section.key=value" : "key = value or [section]",
		     cut(trim(line), c, sizeof(c)));
		return -1;
	}
	*eq = '\0';
	key = trim(line);
	if (*key == '\0') {
		msgf(msg, len, "no key before '='");
		return -1;
	}
	if (!key_chars_ok(key)) {
		msgf(msg, len, "'%s' is not a key (lower-case letters, digits, '_', '.')",
		     cut(key, c, sizeof(c)));
		return -1;
	}
	dot = strchr(key, '.');
	if (dot != NULL) {
		i = find_key(t, key, (size_t)(dot - key), dot + 1);
		if (i < 0) {
			unknown_key(t, key, msg, len);
			return -1;
		}
	} else if (cmdline || section == NULL) {
		msgf(msg, len, "key %s outside a section: write section.%s%s", key, key,
		     cmdline ? "" : ", or put it under a [section] header");
		return -1;
	} else {
		char full[160];

		i = find_key(t, section, strlen(section), key);
		if (i < 0) {
			snprintf(full, sizeof(full), "%s.%s", section, key);
			unknown_key(t, full, msg, len);
			return -1;
		}
	}
	*idx = i;
	val = value_of(eq + 1, kmsg, sizeof(kmsg));
	if (val == NULL || set_value(&t->keys[i], obj, val, kmsg, sizeof(kmsg)) != 0) {
		msgf(msg, len, "%s.%s: %s", t->keys[i].section, t->keys[i].name, kmsg);
		return -1;
	}
	return 0;
}

/* ---- the public engine --------------------------------------------------------------- */

void uroce_conf_table_defaults(const struct uroce_conf_table *t, void *obj)
{
	char msg[MSG_LEN];

	memset(obj, 0, t->obj_size);
	for (size_t i = 0; i < t->nkeys; i++) {
		if (set_value(&t->keys[i], obj, t->keys[i].def, msg, sizeof(msg)) != 0) {
			/* A bug in the table, which the tests catch: no configuration exists. */
			fprintf(stderr, "uroce_conf: default of %s.%s: %s\n", t->keys[i].section,
				t->keys[i].name, msg);
			abort();
		}
	}
}

static void fail(char *err, size_t errlen, const char *name, unsigned line, const char *msg)
{
	if (errlen == 0)
		return;
	if (line != 0)
		snprintf(err, errlen, "%s:%u: %s", name, line, msg);
	else
		snprintf(err, errlen, "%s: %s", name, msg);
}

int uroce_conf_table_parse(const struct uroce_conf_table *t, void *obj, const char *text,
			   size_t len, const char *name, char *err, size_t errlen)
{
	char *work = malloc(t->obj_size), *line = malloc(UROCE_CONF_LINE_MAX + 1);
	unsigned *seen = calloc(t->nkeys, sizeof(*seen));
	char section[64] = "", msg[MSG_LEN];
	int have_section = 0, rc = -EINVAL;
	unsigned lineno = 0;
	size_t pos = 0;

	if (errlen > 0)
		err[0] = '\0';
	if (work == NULL || line == NULL || seen == NULL) {
		fail(err, errlen, name, 0, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	memcpy(work, obj, t->obj_size);
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl != NULL ? (size_t)(nl - (text + pos)) : len - pos;
		char *s;
		long idx;

		lineno++;
		if (n > UROCE_CONF_LINE_MAX) {
			msgf(msg, sizeof(msg), "line longer than %d bytes", UROCE_CONF_LINE_MAX);
			goto bad;
		}
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos += n + (nl != NULL);
		if (memchr(line, '\0', n) != NULL) {
			msgf(msg, sizeof(msg), "NUL byte in the line");
			goto bad;
		}
		if (n > 0 && line[n - 1] == '\r')
			line[n - 1] = '\0'; /* files edited on Windows */
		s = trim(line);
		if (*s == '\0' || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *e = strchr(s, ']'), *r, *sec;

			if (e == NULL) {
				msgf(msg, sizeof(msg), "section header without ']'");
				goto bad;
			}
			*e = '\0';
			for (r = e + 1; is_blank(*r); r++)
				;
			if (*r != '\0' && *r != '#') {
				msgf(msg, sizeof(msg), "text after the section header");
				goto bad;
			}
			sec = trim(s + 1);
			if (!section_known(t, sec)) {
				size_t m = 0;
				char c[64];

				m += (size_t)snprintf(
					msg, sizeof(msg),
					"unknown section [%s]; sections:", cut(sec, c, sizeof(c)));
				for (size_t i = 0; i < t->nkeys && m < sizeof(msg); i++)
					if (i == 0 ||
					    strcmp(t->keys[i].section, t->keys[i - 1].section) != 0)
						m += (size_t)snprintf(msg + m, sizeof(msg) - m,
								      " %s", t->keys[i].section);
				goto bad;
			}
			snprintf(section, sizeof(section), "%s", sec);
			have_section = 1;
			continue;
		}
		if (assign(t, work, s, have_section ? section : NULL, 0, &idx, msg, sizeof(msg)) !=
		    0)
			goto bad;
		if (seen[idx] != 0) {
			msgf(msg, sizeof(msg), "%s.%s is set twice (first on line %u)",
			     t->keys[idx].section, t->keys[idx].name, seen[idx]);
			goto bad;
		}
		seen[idx] = lineno;
	}
	memcpy(obj, work, t->obj_size);
	rc = 0;
	goto out;
bad:
	fail(err, errlen, name, lineno, msg);
out:
	free(work);
	free(line);
	free(seen);
	return rc;
}

int uroce_conf_table_load(const struct uroce_conf_table *t, void *obj, const char *path,
			  char *err, size_t errlen)
{
	FILE *f = fopen(path, "rbe");
	char *buf = NULL;
	size_t n;
	int rc;

	if (errlen > 0)
		err[0] = '\0';
	if (f == NULL) {
		rc = -errno;
		goto syserr;
	}
	buf = malloc(UROCE_CONF_FILE_MAX + 1);
	if (buf == NULL) {
		rc = -ENOMEM;
		goto syserr;
	}
	n = fread(buf, 1, UROCE_CONF_FILE_MAX + 1, f);
	if (ferror(f)) {
		rc = -EIO;
		goto syserr;
	}
	if (n > UROCE_CONF_FILE_MAX) {
		rc = -EFBIG;
		snprintf(buf, 64, "larger than %u bytes", UROCE_CONF_FILE_MAX);
		fail(err, errlen, path, 0, buf);
		goto out;
	}
	rc = uroce_conf_table_parse(t, obj, buf, n, path, err, errlen);
	goto out;
syserr:
	fail(err, errlen, path, 0, strerror(-rc));
out:
	free(buf);
	if (f != NULL)
		fclose(f);
	return rc;
}

int uroce_conf_table_set(const struct uroce_conf_table *t, void *obj,
			 const char *assignment, char *err, size_t errlen)
{
	size_t n = strlen(assignment);
	char *work, *line, msg[MSG_LEN], name[96], c[72];
	long idx;
	int rc = -EINVAL;

	if (errlen > 0)
		err[0] = '\0';
	snprintf(name, sizeof(name), "--set %s", cut(assignment, c, sizeof(c)));
	if (n > UROCE_CONF_LINE_MAX) {
		fail(err, errlen, name, 0, "too long");
		return -EINVAL;
	}
	work = malloc(t->obj_size);
	line = strdup(assignment);
	if (work == NULL || line == NULL) {
		free(work);
		free(line);
		fail(err, errlen, name, 0, "out of memory");
		return -ENOMEM;
	}
	memcpy(work, obj, t->obj_size);
	if (strpbrk(line, "\n\r") != NULL) {
		fail(err, errlen, name, 0, "line break in the value");
	} else if (assign(t, work, line, NULL, 1, &idx, msg, sizeof(msg)) != 0) {
		fail(err, errlen, name, 0, msg);
	} else {
		memcpy(obj, work, t->obj_size);
		rc = 0;
	}
	free(work);
	free(line);
	return rc;
}

static void describe(const struct uroce_conf_key *k, char *buf, size_t len)
{
	char lo[32], hi[32];
	size_t n;

	switch (k->type) {
	case UROCE_CONF_STRING:
		snprintf(buf, len, "string, at most %zu bytes", k->size - 1);
		break;
	case UROCE_CONF_UINT:
		if (k->max == UINT64_MAX)
			snprintf(buf, len, "unsigned 64-bit integer");
		else
			snprintf(buf, len, "integer, %llu..%llu", (unsigned long long)k->min,
				 (unsigned long long)k->max);
		break;
	case UROCE_CONF_OCTAL:
		snprintf(buf, len, "octal, %s..%s", octal(k->min, lo, sizeof(lo)),
			 octal(k->max, hi, sizeof(hi)));
		break;
	case UROCE_CONF_BOOL:
		snprintf(buf, len, "yes or no");
		break;
	case UROCE_CONF_DOUBLE:
		snprintf(buf, len, "number, %g..%g", k->dmin, k->dmax);
		break;
	case UROCE_CONF_CHOICE:
		n = (size_t)snprintf(buf, len, "one of");
		for (int i = 0; k->choices[i] != NULL && n < len; i++)
			n += (size_t)snprintf(buf + n, len - n, "%s %s", i ? "," : "",
					      k->choices[i]);
		break;
	case UROCE_CONF_IPV4:
	case UROCE_CONF_IPV6:
		snprintf(buf, len, "up to %llu %s addresses, comma-separated",
			 (unsigned long long)k->max, k->type == UROCE_CONF_IPV4 ? "IPv4" : "IPv6");
		break;
	case UROCE_CONF_MAC:
		snprintf(buf, len, "MAC address, like 02:00:00:00:00:01");
		break;
	}
}

/* Quotes are needed for what an unquoted value cannot say. */
static int needs_quotes(const struct uroce_conf_key *k, const char *v)
{
	return k->type == UROCE_CONF_STRING &&
	       (*v == '\0' || is_blank(*v) || is_blank(v[strlen(v) - 1]) || strchr(v, '#') != NULL);
}

void uroce_conf_table_print(const struct uroce_conf_table *t, const void *obj, FILE *out)
{
	char v[UROCE_CONF_LINE_MAX], d[256];

	if (t->title != NULL)
		fprintf(out, "%s\n", t->title);
	for (size_t i = 0; i < t->nkeys; i++) {
		const struct uroce_conf_key *k = &t->keys[i];

		if (i == 0 || strcmp(k->section, t->keys[i - 1].section) != 0)
			fprintf(out, "\n[%s]\n", k->section);
		uroce_conf_format_value(k, obj, v, sizeof(v));
		describe(k, d, sizeof(d));
		fprintf(out, "\n# %s\n# (%s)\n", k->doc, d);
		if (needs_quotes(k, v))
			fprintf(out, "%s = \"%s\"\n", k->name, v);
		else if (*v == '\0')
			fprintf(out, "%s =\n", k->name);
		else
			fprintf(out, "%s = %s\n", k->name, v);
	}
}

void uroce_conf_table_markdown(const struct uroce_conf_table *t, FILE *out)
{
	char d[256];

	for (size_t i = 0; i < t->nkeys; i++) {
		const struct uroce_conf_key *k = &t->keys[i];

		if (i == 0 || strcmp(k->section, t->keys[i - 1].section) != 0)
			fprintf(out, "%s### [%s]\n\n| key | type | default | meaning |\n"
				"|---|---|---|---|\n", i == 0 ? "" : "\n", k->section);
		describe(k, d, sizeof(d));
		fprintf(out, "| `%s` | %s | %s%s%s | %s |\n", k->name, d, *k->def ? "`" : "",
			*k->def ? k->def : "(empty)", *k->def ? "`" : "", k->doc);
	}
}

/* Text for roff: a backslash is \e, a '-' is \- (a minus, not a hyphen that may break
 * the line: these are option names and values), and a line never starts with '.' or '\''
 * (a request). */
static void man_text(const char *s, FILE *out)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", out);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", out);
		else if (*s == '-')
			fputs("\\-", out);
		else
			fputc(*s, out);
	}
}

void uroce_conf_table_man(const struct uroce_conf_table *t, FILE *out)
{
	char d[256];

	for (size_t i = 0; i < t->nkeys; i++) {
		const struct uroce_conf_key *k = &t->keys[i];

		if (i == 0 || strcmp(k->section, t->keys[i - 1].section) != 0) {
			fputs(".SS [", out);
			man_text(k->section, out);
			fputs("]\n", out);
		}
		describe(k, d, sizeof(d));
		fputs(".TP\n.BR ", out);
		man_text(k->name, out);
		fputs(" \" = ", out);
		man_text(*k->def ? k->def : "(empty)", out);
		fputs("\"\n", out);
		man_text(k->doc, out);
		fputs(k->doc[0] && k->doc[strlen(k->doc) - 1] == '.' ? "\n(" : ".\n(", out);
		man_text(d, out);
		fputs(")\n", out);
	}
}

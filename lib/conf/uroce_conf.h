/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_CONF_H
#define UROCE_CONF_H

/**
 * @file
 * uroced's configuration file, and the table-driven parser that reads it.
 *
 * The file: `key = value` lines, `#` (or `;`) comments on their own line or after a
 * value (after white space, outside quotes), blank lines, `[section]` headers. A key is
 * `name` under a section header or `section.name` anywhere; `--set section.name=value`
 * on the command line goes through the same parser. A string value may be written in
 * double quotes (to keep an empty value, leading spaces or a `#`); it cannot contain a
 * double quote or a control character.
 *
 * Strict: an unknown section or key, a malformed or out-of-range value and a key set twice
 * in one file are errors with `file:line: key: message`, and the daemon refuses to start.
 * A wrong setting that is silently ignored costs more than a refused start. A parse that
 * fails leaves the configuration as it was (all or nothing).
 *
 * One table lists every key with its type, range, default and a one-line description;
 * the same table parses, fills the defaults (the default text goes through the parser
 * too), prints a commented configuration file (config/uroced.conf is that output, and a
 * test keeps the two equal) and prints the reference in doc/config.md. Adding a key is one
 * struct field and one table line.
 *
 * Order of precedence: uroce_conf_defaults(), then the file (uroce_conf_load), then each
 * `--set` (uroce_conf_set), each replacing what came before (a list is replaced whole).
 * The daemon owns what the values mean; this library only checks their form and range.
 */

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the generic engine ------------------------------------------------------------- */

enum uroce_conf_type {
	UROCE_CONF_STRING, /**< char[size], NUL-terminated, at most size - 1 bytes */
	UROCE_CONF_UINT,   /**< uint32_t or uint64_t (size 4 or 8), decimal, min..max */
	UROCE_CONF_OCTAL,  /**< the same, written in octal (file modes) */
	UROCE_CONF_BOOL,   /**< bool: yes/no, true/false, 1/0 (any case) */
	UROCE_CONF_DOUBLE, /**< double, dmin..dmax, finite */
	UROCE_CONF_CHOICE, /**< int: index of the value in choices[] */
	UROCE_CONF_IPV4,   /**< struct in_addr[max], count in a uint32_t at count_off */
	UROCE_CONF_IPV6,   /**< struct in6_addr[max], count at count_off */
	UROCE_CONF_MAC,    /**< uint8_t[6]; all zero: not set (written as an empty value) */
};

struct uroce_conf_key {
	const char *section;
	const char *name;
	enum uroce_conf_type type;
	size_t off;          /**< of the value in the configured struct */
	size_t size;         /**< STRING: bytes of the array; UINT, OCTAL: 4 or 8 */
	size_t count_off;    /**< IPV4, IPV6: of the uint32_t element count */
	uint64_t min, max;   /**< UINT, OCTAL: range; IPV4, IPV6: max = most elements */
	double dmin, dmax;   /**< DOUBLE: range */
	const char *const *choices; /**< CHOICE: names, NULL-terminated */
	const char *def;     /**< the default, written as in the file */
	const char *doc;     /**< one line: what it is, what the default means */
};

struct uroce_conf_table {
	const struct uroce_conf_key *keys;
	size_t nkeys;
	size_t obj_size;     /**< bytes of the struct the keys fill */
	const char *title;   /**< first comment lines of a printed file */
};

/** Lines longer than this (and files larger than UROCE_CONF_FILE_MAX) are errors. */
#define UROCE_CONF_LINE_MAX 4096
#define UROCE_CONF_FILE_MAX (1u << 20)

/** Fills @p obj with every key's default (zeroing it first). */
void uroce_conf_table_defaults(const struct uroce_conf_table *t, void *obj);
/**
 * Parses @p len bytes of @p text (need not be NUL-terminated) into @p obj, over what is
 * there. @p name is the file name used in messages.
 * @return 0, or -EINVAL with "name:line: message" in @p err (@p errlen bytes, always
 * NUL-terminated when errlen > 0); @p obj is then unchanged. -ENOMEM.
 */
int uroce_conf_table_parse(const struct uroce_conf_table *t, void *obj, const char *text,
			   size_t len, const char *name, char *err, size_t errlen);
/** Reads and parses the file @p path. @return as parse, or -errno when it cannot be read
 *  (-EFBIG above UROCE_CONF_FILE_MAX), with "path: reason" in @p err. */
int uroce_conf_table_load(const struct uroce_conf_table *t, void *obj, const char *path,
			  char *err, size_t errlen);
/** One `section.name=value` (a command-line override). @return as parse; the message
 *  starts with "--set <assignment>:". */
int uroce_conf_table_set(const struct uroce_conf_table *t, void *obj,
			 const char *assignment, char *err, size_t errlen);
/** Prints @p obj as a configuration file, each key with its description and range. */
void uroce_conf_table_print(const struct uroce_conf_table *t, const void *obj, FILE *out);
/** Prints the key reference as Markdown tables, one per section. */
void uroce_conf_table_markdown(const struct uroce_conf_table *t, FILE *out);
/** Prints the key reference as roff for a man page (man(7)): a subsection per section, a
 *  tagged paragraph per key with its default, type and range. */
void uroce_conf_table_man(const struct uroce_conf_table *t, FILE *out);
/** Formats one key's value in @p obj as the file would write it (unquoted). */
void uroce_conf_format_value(const struct uroce_conf_key *k, const void *obj, char *buf,
			     size_t len);

/* ---- uroced's configuration --------------------------------------------------------- */

#define UROCE_CONF_MAX_ADDRS 8
#define UROCE_CONF_NAME_LEN 64    /* port names, group names, with the NUL */
#define UROCE_CONF_SOCKET_LEN 108 /* sizeof(sun_path) */
#define UROCE_CONF_PATH_LEN 256

enum uroce_conf_log_level {
	UROCE_CONF_LOG_ERROR,
	UROCE_CONF_LOG_WARNING,
	UROCE_CONF_LOG_INFO,
	UROCE_CONF_LOG_DEBUG,
	UROCE_CONF_LOG__COUNT
};

/** Every key of uroced.conf; the descriptions are in the table (conf_uroced.c) and in
 *  doc/config.md. Ranges are checked by the parser; all values here are in range. */
struct uroce_conf {
	struct {
		char name[UROCE_CONF_NAME_LEN]; /**< DPDK port name; "": the first port */
		uint32_t mtu;
		uint32_t rx_ring;
		uint32_t tx_ring;
		uint32_t vlan;                  /**< 0: untagged */
	} port;
	struct {
		uint32_t n_ipv4;
		struct in_addr ipv4[UROCE_CONF_MAX_ADDRS];
		uint32_t n_ipv6;
		struct in6_addr ipv6[UROCE_CONF_MAX_ADDRS];
		uint8_t mac[6];                 /**< all zero: the port's own */
		char kernel_iface[16];          /**< IFNAMSIZ; "": no kernel interface */
		uint32_t kernel_prefix_len;
	} host;
	struct {
		char socket[UROCE_CONF_SOCKET_LEN];
		uint32_t socket_mode;
		char socket_group[UROCE_CONF_NAME_LEN]; /**< "": the daemon's group */
		char admin_group[UROCE_CONF_NAME_LEN];  /**< "": root only administers */
		uint32_t max_clients;
		char user[UROCE_CONF_NAME_LEN]; /**< "": keeps the identity it started with */
	} control;
	/** Per user (uid), over all of the user's connections, and (client_*) per
	 *  connection within that; 0: no limit. Objects beyond a limit are refused with
	 *  EAGAIN (as the rdma cgroup controller), bytes with ENOMEM (as RLIMIT_MEMLOCK). */
	struct {
		uint32_t clients;
		uint32_t pds, mrs;
		uint64_t mr_bytes;
		uint32_t regions, channels, cqs, srqs, qps, ahs, cm_ids, mappings;
		uint32_t client_pds, client_mrs;
		uint64_t client_mr_bytes;
		uint32_t client_regions, client_channels, client_cqs, client_srqs, client_qps,
			client_ahs, client_cm_ids;
	} limits;
	struct {
		uint32_t ack_coalesce;
		uint32_t max_unacked_psns;
		uint32_t max_pkts_per_ack;
		uint32_t tx_burst;              /**< 0: a QP sends until done */
		uint32_t zero_copy_min;         /**< bytes; 0 (default): payloads always copied */
		uint64_t seed;                  /**< 0: unpredictable (getrandom) */
	} transport;
	struct {
		uint32_t response_timeout;      /**< IBA: 4.096 us * 2^x */
		uint32_t max_retries;
		uint32_t timewait_ms;
	} cm;
	struct {
		uint32_t idle_sleep_us;         /**< 0: never sleep */
		uint32_t idle_nap_us;           /**< longest nap of a port without wake-up */
		uint32_t idle_after_us;
		uint32_t idle_yield_us;         /**< 0: never yield */
		uint32_t control_poll_us;
	} lcore;
	struct {
		double rx_drop, rx_dup, rx_reorder, rx_corrupt;
		double tx_drop, tx_dup, tx_reorder, tx_corrupt;
		uint64_t seed;
	} fault;
	struct {
		char file[UROCE_CONF_PATH_LEN]; /**< "": no capture */
		uint32_t snaplen;
	} capture;
	struct {
		enum uroce_conf_log_level level;
	} log;
	struct {
		bool dpdk;
		char prometheus_listen[64]; /**< "ADDRESS:PORT"; "": none */
	} telemetry;
};

/** The table of uroced.conf. */
extern const struct uroce_conf_table uroce_conf_uroced;

void uroce_conf_defaults(struct uroce_conf *c);
/** The file at @p path over @p c (see uroce_conf_table_load). */
int uroce_conf_load(struct uroce_conf *c, const char *path, char *err, size_t errlen);
/** Text already in memory (see uroce_conf_table_parse). */
int uroce_conf_parse(struct uroce_conf *c, const char *text, size_t len, const char *name,
		     char *err, size_t errlen);
/** `--set key=value`: @p assignment is "section.name=value". */
int uroce_conf_set(struct uroce_conf *c, const char *assignment, char *err, size_t errlen);
/** Prints @p c as a commented configuration file (parses back to the same @p c). */
void uroce_conf_print(const struct uroce_conf *c, FILE *out);
/** Prints the defaults as a commented file: what config/uroced.conf holds. */
void uroce_conf_print_defaults(FILE *out);
/** "error", "warning", "info" or "debug": the level's name in uroced.conf, in uroce
 *  log-level and in uroced's messages; "?" when @p l is not a level. */
const char *uroce_conf_log_level_name(enum uroce_conf_log_level l);
/** The level named @p name (exactly, as uroce_conf_log_level_name() spells it), or -1. */
int uroce_conf_log_level_from_name(const char *name);

#ifdef __cplusplus
}
#endif

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCED_LOG_H
#define UROCED_LOG_H

/*
 * uroced's logging (log.c): DPDK's rte_log, one log type per component: "uroced" (the
 * daemon's own files) and "uroced.rnic" (lib/rnic, through its ops->log). Lines read
 * "uroced: <level>: ..." on stderr. Their level is log.level at start and
 * `uroce log-level` at run time, both as enum uroce_conf_log_level.
 */

#include <stdarg.h>

#include "uroce_conf.h"

/* The rte_log types of a daemon (struct uroced's log). */
struct uroced_log {
	int daemon_type; /* "uroced" */
	int rnic_type;	 /* "uroced.rnic" */
};

/* Registers both types with rte_log (before the EAL starts: its --log-level options then
 * apply to them) at level INFO; a type rte_log cannot register logs as the EAL's. */
void uroced_log_open(struct uroced_log *log);
enum uroced_log_module { UROCED_LOG_DAEMON, UROCED_LOG_RNIC };
void uroced_log_set_level(const struct uroced_log *log, int level);
void uroced_vlog(const struct uroced_log *log, enum uroced_log_module m, int level, const char *fmt,
		 va_list ap) __attribute__((format(printf, 4, 0)));
void uroced_log(const struct uroced_log *log, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* @p d: a struct uroced *. */
#define UROCED_ERR(d, ...)  uroced_log(&(d)->log, UROCE_CONF_LOG_ERROR, __VA_ARGS__)
#define UROCED_WARN(d, ...) uroced_log(&(d)->log, UROCE_CONF_LOG_WARNING, __VA_ARGS__)
#define UROCED_INFO(d, ...) uroced_log(&(d)->log, UROCE_CONF_LOG_INFO, __VA_ARGS__)
#define UROCED_DBG(d, ...)  uroced_log(&(d)->log, UROCE_CONF_LOG_DEBUG, __VA_ARGS__)

#endif

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

enum uroced_log_module { UROCED_LOG_DAEMON, UROCED_LOG_RNIC };
void uroced_log_set_level(int level);
void uroced_vlog(enum uroced_log_module m, int level, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
void uroced_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define UROCED_ERR(...)	 uroced_log(UROCE_CONF_LOG_ERROR, __VA_ARGS__)
#define UROCED_WARN(...) uroced_log(UROCE_CONF_LOG_WARNING, __VA_ARGS__)
#define UROCED_INFO(...) uroced_log(UROCE_CONF_LOG_INFO, __VA_ARGS__)
#define UROCED_DBG(...)	 uroced_log(UROCE_CONF_LOG_DEBUG, __VA_ARGS__)

#endif

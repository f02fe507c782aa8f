/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uroced's log lines (log.h): every file of the daemon logs here, and nothing here calls
 * back into them.
 */
#include <stdarg.h>
#include <stdio.h>

#include <rte_log.h>

#include "log.h"

RTE_LOG_REGISTER(uroced_logtype_daemon, uroced, INFO);
RTE_LOG_REGISTER(uroced_logtype_rnic, uroced.rnic, INFO);

/* enum uroce_conf_log_level as rte_log's levels. */
static uint32_t rte_level(int level)
{
	switch (level) {
	case UROCE_CONF_LOG_ERROR:
		return RTE_LOG_ERR;
	case UROCE_CONF_LOG_WARNING:
		return RTE_LOG_WARNING;
	case UROCE_CONF_LOG_INFO:
		return RTE_LOG_INFO;
	default:
		return RTE_LOG_DEBUG;
	}
}

void uroced_log_set_level(int level)
{
	rte_log_set_level(uroced_logtype_daemon, rte_level(level));
	rte_log_set_level(uroced_logtype_rnic, rte_level(level));
}

void uroced_vlog(enum uroced_log_module m, int level, const char *fmt, va_list ap)
{
	int type = m == UROCED_LOG_RNIC ? uroced_logtype_rnic : uroced_logtype_daemon;
	char line[1024];
	int n;

	if (!rte_log_can_log((uint32_t)type, rte_level(level)))
		return;
	n = snprintf(line, sizeof(line), "uroced: %s: ", uroce_conf_log_level_name(level));
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	rte_log(rte_level(level), (uint32_t)type, "%s\n", line);
}

void uroced_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	uroced_vlog(UROCED_LOG_DAEMON, level, fmt, ap);
	va_end(ap);
}

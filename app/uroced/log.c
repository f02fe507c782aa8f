/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uroced's log lines (log.h): every file of the daemon logs here, and nothing here calls
 * back into them.
 */
#include <stdarg.h>
#include <stdio.h>

#include <rte_log.h>

#include "log.h"

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

/* What RTE_LOG_REGISTER does in a constructor, into the daemon's context. */
static int log_type(const char *name)
{
	int type = rte_log_register_type_and_pick_level(name, RTE_LOG_INFO);

	return type < 0 ? RTE_LOGTYPE_EAL : type;
}

void uroced_log_open(struct uroced_log *log)
{
	log->daemon_type = log_type("uroced");
	log->rnic_type = log_type("uroced.rnic");
}

void uroced_log_set_level(const struct uroced_log *log, int level)
{
	rte_log_set_level((uint32_t)log->daemon_type, rte_level(level));
	rte_log_set_level((uint32_t)log->rnic_type, rte_level(level));
}

void uroced_vlog(const struct uroced_log *log, enum uroced_log_module m, int level, const char *fmt,
		 va_list ap)
{
	int type = m == UROCED_LOG_RNIC ? log->rnic_type : log->daemon_type;
	char line[1024];
	int n;

	if (!rte_log_can_log((uint32_t)type, rte_level(level)))
		return;
	n = snprintf(line, sizeof(line), "uroced: %s: ", uroce_conf_log_level_name(level));
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	rte_log(rte_level(level), (uint32_t)type, "%s\n", line);
}

void uroced_log(const struct uroced_log *log, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	uroced_vlog(log, UROCED_LOG_DAEMON, level, fmt, ap);
	va_end(ap);
}

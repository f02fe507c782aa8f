/* SPDX-License-Identifier: BSD-3-Clause */
/* Every exported symbol that uroce does not offer, in one place. Each fails the way
 * rdma-core fails for a device without the feature: int verbs return EOPNOTSUPP (errno
 * set too), pointer verbs return NULL with errno EOPNOTSUPP, void ones do nothing. None
 * touches its arguments, so none can crash on them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "uverbs.h"

/* ---- public verbs uroce does not offer ------------------------------------------------ */

/* dma-buf memory: there is no device DMA, only shared memory. */
UV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					   uint64_t iova, int fd, int access)
{
	(void)pd, (void)offset, (void)length, (void)iova, (void)fd, (void)access;
	return uv_null(EOPNOTSUPP);
}

/* Device memory: none. */
UV_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context, (void)dm_handle;
	return uv_null(EOPNOTSUPP);
}

UV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}

/* Enhanced connection establishment (vendor options exchanged over CM): none. */
UV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return uv_err(EOPNOTSUPP);
}

UV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return uv_err(EOPNOTSUPP);
}

/* ---- IBVERBS_PRIVATE_34: the provider interface ------------------------------------------ */

/* Providers (libmlx5, libefa... which perftest links) register from their constructors:
 * accepted and ignored, so they load; they never see a device to bind to. */
UV_EXPORT void verbs_register_driver_34(const struct verbs_device_ops *ops)
{
	(void)ops;
}

UV_EXPORT bool verbs_allow_disassociate_destroy;

UV_EXPORT void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
{
	(void)ctx, (void)level, (void)fmt;
}

UV_EXPORT void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
					      size_t alloc_size,
					      struct verbs_context *context_offset,
					      uint32_t driver_id)
{
	(void)device, (void)cmd_fd, (void)alloc_size, (void)context_offset, (void)driver_id;
	return uv_null(EOPNOTSUPP);
}

UV_EXPORT struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data)
{
	(void)device, (void)private_data;
	return uv_null(EOPNOTSUPP);
}

UV_EXPORT void verbs_set_ops(struct verbs_context *vctx, const void *ops)
{
	(void)vctx, (void)ops;
}

UV_EXPORT void verbs_uninit_context(struct verbs_context *context)
{
	(void)context;
}

UV_EXPORT void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
			     struct ibv_comp_channel *channel, void *cq_context)
{
	(void)cq, (void)context, (void)channel, (void)cq_context;
}

UV_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev,
					const char *fnfmt, ...)
{
	(void)buf, (void)size, (void)sysfs_dev, (void)fnfmt;
	errno = ENOENT;
	return -1;
}

UV_EXPORT int execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd)
{
	(void)context, (void)cmd;
	return uv_err(EOPNOTSUPP);
}

UV_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
					       struct ibv_command_buffer *link)
{
	(void)link;
	return num_attrs;
}

/* ibv_cmd_*: the kernel commands a provider issues. No kernel device: EOPNOTSUPP. */
#define UV_CMD_STUB(n)                                 \
	UV_EXPORT int ibv_cmd_##n(void)                \
	{                                              \
		return uv_err(EOPNOTSUPP);             \
	}
UV_CMD_STUBS(UV_CMD_STUB)

/* ---- IBVERBS_1.0 / old IBVERBS_1.1 entry points --------------------------------------------
 * rdma-core keeps the 1.0 versions for binaries linked (before 2006) against the old
 * struct layouts it converts from. Nothing linked since uses them: each one fails
 * cleanly (ENOSYS; an empty device list), the void ones do nothing. */
#define UV_COMPAT_SYM(name, ver) \
	__attribute__((symver(#name "@" ver), used, visibility("default")))

#define UV_COMPAT_INT(name)                                        \
	int uv_compat_##name##_1_0(void);                          \
	UV_COMPAT_SYM(ibv_##name, "IBVERBS_1.0")                   \
	int uv_compat_##name##_1_0(void)                           \
	{                                                          \
		return uv_err(ENOSYS);                             \
	}
#define UV_COMPAT_PTR(name)                                        \
	void *uv_compat_##name##_1_0(void);                        \
	UV_COMPAT_SYM(ibv_##name, "IBVERBS_1.0")                   \
	void *uv_compat_##name##_1_0(void)                         \
	{                                                          \
		return uv_null(ENOSYS);                            \
	}
#define UV_COMPAT_VOID(name)                                       \
	void uv_compat_##name##_1_0(void);                         \
	UV_COMPAT_SYM(ibv_##name, "IBVERBS_1.0")                   \
	void uv_compat_##name##_1_0(void)                          \
	{                                                          \
	}

UV_COMPAT_VOID(ack_async_event)
UV_COMPAT_VOID(ack_cq_events)
UV_COMPAT_PTR(alloc_pd)
UV_COMPAT_INT(attach_mcast)
UV_COMPAT_INT(close_device)
UV_COMPAT_PTR(create_ah)
UV_COMPAT_PTR(create_cq)
UV_COMPAT_PTR(create_qp)
UV_COMPAT_PTR(create_srq)
UV_COMPAT_INT(dealloc_pd)
UV_COMPAT_INT(dereg_mr)
UV_COMPAT_INT(destroy_ah)
UV_COMPAT_INT(destroy_cq)
UV_COMPAT_INT(destroy_qp)
UV_COMPAT_INT(destroy_srq)
UV_COMPAT_INT(detach_mcast)
UV_COMPAT_VOID(free_device_list)
UV_COMPAT_INT(get_async_event)
UV_COMPAT_INT(get_cq_event)
UV_COMPAT_PTR(get_device_guid) /* a zero GUID */
UV_COMPAT_PTR(get_device_name)
UV_COMPAT_INT(modify_qp)
UV_COMPAT_INT(modify_srq)
UV_COMPAT_PTR(open_device)
UV_COMPAT_INT(query_device)
UV_COMPAT_INT(query_gid)
UV_COMPAT_INT(query_pkey)
UV_COMPAT_INT(query_port)
UV_COMPAT_INT(query_qp)
UV_COMPAT_INT(query_srq)
UV_COMPAT_PTR(reg_mr)
UV_COMPAT_INT(resize_cq)

/* 1.0's device list: empty (a NULL-terminated array the caller may free). */
struct ibv_device **uv_compat_get_device_list_1_0(int *num);
UV_COMPAT_SYM(ibv_get_device_list, "IBVERBS_1.0")
struct ibv_device **uv_compat_get_device_list_1_0(int *num)
{
	if (num)
		*num = 0;
	return calloc(1, sizeof(struct ibv_device *));
}

/* The pre-2017 provider registration (IBVERBS_1.1 only, no default version). */
void uv_compat_register_driver_1_1(const char *name, void *init_func);
UV_COMPAT_SYM(ibv_register_driver, "IBVERBS_1.1")
void uv_compat_register_driver_1_1(const char *name, void *init_func)
{
	(void)name, (void)init_func;
}

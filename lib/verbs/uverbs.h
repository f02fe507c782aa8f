/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_VERBS_H
#define UROCE_VERBS_H

/*
 * The drop-in libibverbs.so.1 (lib/verbs): rdma-core's public ABI over lib/client.
 *
 * Every exported function is compiled against the installed <infiniband/verbs.h>, so a
 * wrong prototype fails the build. rdma-core's private symbols (IBVERBS_PRIVATE_34: what
 * its providers import) and the few public ones whose prototypes live in headers Debian
 * does not install (driver.h, marshall.h) are declared here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The 33 verbs that rdma-core exports in two versions (@IBVERBS_1.0 and @@IBVERBS_1.1):
 * both are bound with symver attributes on differently named functions, as the linker
 * needs (a plain `ibv_x` would take the first node that lists it). Renaming them here,
 * before verbs.h, keeps verbs.h's prototypes checking ours. ibv_query_port and ibv_reg_mr
 * are macros of verbs.h: verbs_device.c and verbs_core.c rename them after #undef (see there). */
#define ibv_ack_async_event uv_ibv_ack_async_event_1_1
#define ibv_ack_cq_events uv_ibv_ack_cq_events_1_1
#define ibv_alloc_pd uv_ibv_alloc_pd_1_1
#define ibv_attach_mcast uv_ibv_attach_mcast_1_1
#define ibv_close_device uv_ibv_close_device_1_1
#define ibv_create_ah uv_ibv_create_ah_1_1
#define ibv_create_cq uv_ibv_create_cq_1_1
#define ibv_create_qp uv_ibv_create_qp_1_1
#define ibv_create_srq uv_ibv_create_srq_1_1
#define ibv_dealloc_pd uv_ibv_dealloc_pd_1_1
#define ibv_dereg_mr uv_ibv_dereg_mr_1_1
#define ibv_destroy_ah uv_ibv_destroy_ah_1_1
#define ibv_destroy_cq uv_ibv_destroy_cq_1_1
#define ibv_destroy_qp uv_ibv_destroy_qp_1_1
#define ibv_destroy_srq uv_ibv_destroy_srq_1_1
#define ibv_detach_mcast uv_ibv_detach_mcast_1_1
#define ibv_free_device_list uv_ibv_free_device_list_1_1
#define ibv_get_async_event uv_ibv_get_async_event_1_1
#define ibv_get_cq_event uv_ibv_get_cq_event_1_1
#define ibv_get_device_guid uv_ibv_get_device_guid_1_1
#define ibv_get_device_list uv_ibv_get_device_list_1_1
#define ibv_get_device_name uv_ibv_get_device_name_1_1
#define ibv_modify_qp uv_ibv_modify_qp_1_1
#define ibv_modify_srq uv_ibv_modify_srq_1_1
#define ibv_open_device uv_ibv_open_device_1_1
#define ibv_query_device uv_ibv_query_device_1_1
#define ibv_query_gid uv_ibv_query_gid_1_1
#define ibv_query_pkey uv_ibv_query_pkey_1_1
#define ibv_query_qp uv_ibv_query_qp_1_1
#define ibv_query_srq uv_ibv_query_srq_1_1
#define ibv_resize_cq uv_ibv_resize_cq_1_1

#include <infiniband/verbs.h>
#include <infiniband/sa.h>

#include "client_obj.h" /* lib/client's objects and to_upd(), to_ucq()... */
#include "uroce_client.h"

/* ibv_query_port and ibv_reg_mr: verbs.h makes them macros (to inline wrappers) after
 * declaring the exported functions; ours carry the renamed names, checked against
 * those declarations. */
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova
int uv_ibv_query_port_1_1(struct ibv_context *context, uint8_t port_num,
			  struct _compat_ibv_port_attr *port_attr);
struct ibv_mr *uv_ibv_reg_mr_1_1(struct ibv_pd *pd, void *addr, size_t length, int access);
_Static_assert(__builtin_types_compatible_p(__typeof__(uv_ibv_query_port_1_1),
					   __typeof__(ibv_query_port)),
	       "ibv_query_port's prototype");
_Static_assert(__builtin_types_compatible_p(__typeof__(uv_ibv_reg_mr_1_1),
					   __typeof__(ibv_reg_mr)),
	       "ibv_reg_mr's prototype");
#define ibv_query_port uv_ibv_query_port_1_1
#define ibv_reg_mr uv_ibv_reg_mr_1_1

#define UV_EXPORT __attribute__((visibility("default")))
/* The default version (@@IBVERBS_1.1) of one of the two-version verbs. */
#define UV_EXPORT_1_1(name) \
	__attribute__((symver(#name "@@IBVERBS_1.1"), used, visibility("default")))

/* ---- objects -------------------------------------------------------------------------- */

/** One device per running uroced (one control socket). Never freed: contexts and device
 *  lists point at it, and rdma-core keeps its devices for the process's life too. */
struct uv_device {
	struct ibv_device ibv;
	char sock[108]; /* sockaddr_un.sun_path */
	char daemon_name[64];
	__be64 guid;
	struct uv_device *next; /* the list of every device ever found */
	bool present;           /* found by the last scan */
};

/** The context: verbs_context first (ibv_context is its last member), ours after. */
struct uv_parent_domain;

struct uv_context {
	struct verbs_context vctx;
	struct uroce_client_ctx *cl;
	struct uv_device *dev;
	pthread_mutex_t domains_lock;     /* domains.c */
	struct uv_parent_domain *domains; /* the parent domains of this context */
};

_Static_assert(offsetof(struct uv_context, vctx) == 0, "verbs_context first");
_Static_assert(offsetof(struct verbs_context, context) + sizeof(struct ibv_context) ==
		       sizeof(struct verbs_context),
	       "ibv_context is the last member of verbs_context");

/** Per CQ state (lib/client's priv slot). */
struct uv_cq {
	uint32_t comp_reported;  /* events handed out by ibv_get_cq_event */
	uint32_t async_reported; /* CQ async events handed out */
	uint64_t wc_flags;       /* of ibv_create_cq_ex */
	/* ibv_start_poll / ibv_next_poll: the completion being read */
	struct ibv_wc cur;
};

/** Per QP / SRQ state: async events handed out (destroy waits until they are acked). */
struct uv_qp {
	uint32_t async_reported;
	/* ibv_wr_* (extended.c): the batch built between wr_start and wr_complete */
	void *wrs; /* struct uv_wr[cap_wr] */
	struct ibv_sge *sges;
	uint8_t *inl; /* inline data copies */
	unsigned int nwr, cap_wr, sges_used, cap_sges, ninl, cap_inl;
	int err; /* the first error of the batch, returned by wr_complete */
};

struct uv_srq {
	uint32_t async_reported;
};

static inline struct uv_context *uv_ctx(struct ibv_context *c)
{
	return (struct uv_context *)(void *)((char *)c - offsetof(struct verbs_context, context));
}

static inline struct uroce_client_ctx *uv_cl(struct ibv_context *c)
{
	return uv_ctx(c)->cl;
}

static inline struct uv_cq *uv_cq_of(struct ibv_cq *cq)
{
	return to_ucq(cq)->priv;
}

static inline struct uv_qp *uv_qp_of(struct ibv_qp *qp)
{
	return to_uqp(qp)->priv;
}

/** Positive errno, also in errno (rdma-core's int verbs do both). */
static inline int uv_err(int rc)
{
	if (rc)
		errno = rc;
	return rc;
}

static inline void *uv_null(int e)
{
	errno = e;
	return NULL;
}

/* ---- shared between the files ----------------------------------------------------------- */

/* verbs_device.c */
int uv_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr,
		  size_t len);
/* verbs_core.c */
struct ibv_cq *uv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			    struct ibv_comp_channel *channel, int comp_vector,
			    uint64_t wc_flags);
struct ibv_qp *uv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr,
			    uint64_t send_ops_flags);
/* The verbs QP of lib/client's @p c (NULL: creating it failed, errno set), with @p u its
 * private part (freed on failure) and the post API when @p send_ops_flags. */
struct ibv_qp *uv_qp_adopt(struct uroce_client_qp *c, struct uv_qp *u, uint64_t send_ops_flags);
/* verbs_xrc.c */
void uv_xrc_init(struct uv_context *uc);
struct ibv_qp *uv_create_xrc_qp(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr,
				uint64_t send_ops_flags);
/* extended.c */
int uv_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
		       struct ibv_device_attr_ex *attr, size_t attr_size);
struct ibv_cq_ex *uv_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr);
struct ibv_qp *uv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
struct ibv_flow *uv_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr);
int uv_destroy_flow(struct ibv_flow *flow);
void uv_cq_ex_init(struct ibv_cq_ex *cq);
void uv_qp_ex_init(struct ibv_qp_ex *qp);
void uv_qp_ex_free(struct uv_qp *q);

/* ---- public symbols whose prototypes Debian's headers do not carry ------------------------ */

/* rdma-core's driver.h */
enum uv_gid_type_sysfs { UV_GID_TYPE_SYSFS_IB_ROCE_V1, UV_GID_TYPE_SYSFS_ROCE_V2 };
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum uv_gid_type_sysfs *type);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

/* rdma-core's marshall.h: kernel ABI structs (<rdma/ib_user_*.h>) to verbs structs. */
struct ib_uverbs_qp_attr;
struct ib_uverbs_ah_attr;
struct ib_user_path_rec;
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);

/* IBVERBS_PRIVATE_34: what rdma-core's providers import. The providers perftest links
 * (libmlx5, libefa) call verbs_register_driver_34 from their constructors; this library
 * has no provider plug-in (lib/client is built in), so it registers nothing and the
 * providers never see a device. The ibv_cmd_* family marshals kernel commands for a
 * provider: with no kernel device behind, each returns EOPNOTSUPP. Their arguments are
 * never read, so they are declared without parameters (a caller passing some is fine on
 * every ABI this builds for). */
struct verbs_device_ops;
void verbs_register_driver_34(const struct verbs_device_ops *ops);
void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
				    struct verbs_context *context_offset, uint32_t driver_id);
struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data);
void verbs_set_ops(struct verbs_context *vctx, const void *ops);
void verbs_uninit_context(struct verbs_context *context);
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev, const char *fnfmt,
			      ...) __attribute__((format(printf, 4, 5)));
struct ibv_command_buffer;
int execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, struct ibv_command_buffer *link);
extern bool verbs_allow_disassociate_destroy;

#define UV_CMD_STUBS(X)                                                                      \
	X(advise_mr) X(alloc_dm) X(alloc_mw) X(alloc_pd) X(attach_mcast) X(close_xrcd)          \
	X(create_ah) X(create_counters) X(create_cq) X(create_cq_ex) X(create_flow)             \
	X(create_flow_action_esp) X(create_qp) X(create_qp_ex2) X(create_qp_ex)                 \
	X(create_rwq_ind_table) X(create_srq) X(create_srq_ex) X(create_wq) X(dealloc_mw)       \
	X(dealloc_pd) X(dereg_mr) X(destroy_ah) X(destroy_counters) X(destroy_cq)               \
	X(destroy_flow) X(destroy_flow_action) X(destroy_qp) X(destroy_rwq_ind_table)           \
	X(destroy_srq) X(destroy_wq) X(detach_mcast) X(free_dm) X(get_context)                  \
	X(modify_cq) X(modify_flow_action_esp) X(modify_qp) X(modify_qp_ex) X(modify_srq)       \
	X(modify_wq) X(open_qp) X(open_xrcd) X(poll_cq) X(post_recv) X(post_send)               \
	X(post_srq_recv) X(query_context) X(query_device_any) X(query_mr) X(query_port)         \
	X(query_qp) X(query_srq) X(read_counters) X(reg_dm_mr) X(reg_dmabuf_mr) X(reg_mr)       \
	X(req_notify_cq) X(rereg_mr) X(resize_cq)
#define UV_CMD_PROTO(n) int ibv_cmd_##n(void);
UV_CMD_STUBS(UV_CMD_PROTO)

/* domains.c: thread and parent domains. */
void uv_domains_init(struct uv_context *uc);
void uv_domains_free_all(struct uv_context *uc);
/* The protection domain of parent domain @p pd, or NULL when @p pd is none. */
struct ibv_pd *uv_parent_domain_of(struct ibv_pd *pd);
/* ibv_dealloc_pd's part: 0 when @p pd was a parent domain (freed), -EBUSY when it is a
 * PD a parent domain names, -ENOENT when it is neither. */
int uv_dealloc_domain(struct ibv_pd *pd);

#endif

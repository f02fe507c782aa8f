/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Zero-copy frames and the memory they point into, and a WQE rewritten while the RNIC
 * reads it.
 * One file of test_rnic (rnic_host.h).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rnic_host.h"

/* ---- zero-copy frames and the memory they point into ------------------------------------ */

static void zc_modify(struct host *h, struct zc_app *a, struct ibv_qp_attr *attr, int mask)
{
	struct uroce_ctrl_modify_qp_req req = {.qp = a->qp_handle, .mask = mask, .attr = *attr};

	cr_assert_eq(request(h, a->c, UROCE_CTRL_MODIFY_QP, &req, sizeof(req)), 0,
		     "modify to %d", attr->qp_state);
}

/* The QP from RESET (or ERR, through RESET) to RTS, connected to itself. */
static void zc_connect(struct host *h, struct zc_app *a)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RESET;
	zc_modify(h, a, &attr, IBV_QP_STATE);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.port_num = 1;
	attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	zc_modify(h, a, &attr,
		  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = IBV_MTU_1024;
	attr.dest_qp_num = a->qpn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.is_global = 1;
	attr.ah_attr.port_num = 1;
	attr.ah_attr.grh.dgid = a->gid;
	attr.ah_attr.grh.sgid_index = 1;
	attr.ah_attr.grh.hop_limit = 64;
	zc_modify(h, a, &attr,
		  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = 14; /* 67 ms */
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;
	zc_modify(h, a, &attr,
		  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* @p channel: the CQ reports to a completion channel. */
void zc_app_open_with(struct host *h, struct zc_app *a, bool channel)
{
	struct uroce_ctrl_hello_rep hello_rep;
	struct uroce_ctrl_map_region_req map = {.size = ZC_MEM};
	uint8_t reg_buf[sizeof(struct uroce_ctrl_reg_mr_req) + sizeof(struct uroce_ctrl_mr_seg)];
	struct uroce_ctrl_reg_mr_req *reg = (void *)reg_buf;
	struct uroce_ctrl_reg_mr_rep reg_rep;
	struct uroce_ctrl_create_cq_req cq_req = {.cqe = 16};
	struct uroce_ctrl_create_cq_rep cq_rep;
	struct uroce_ctrl_create_qp_req qp_req = {
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 4,
			.max_recv_sge = 4}};
	struct uroce_ctrl_create_qp_rep qp_rep;
	struct uroce_ctrl_query_gid_req gid_req = {.port = 1, .index = 1};
	struct uroce_ctrl_query_gid_rep gid_rep;
	const struct uroce_ctrl_queue_ctl *ctl;
	uint32_t pd, region, cq;
	int fd;

	memset(a, 0, sizeof(*a));
	a->c = hello(h);
	memcpy(&hello_rep, reply_payload(h), sizeof(hello_rep));
	a->async_fd = dup(h->fds[1]);
	a->wake_fd = dup(h->fds[2]);
	a->channel_fd = -1;
	a->ctx_region.fd = a->qp_region.fd = a->cq_region.fd = -1;
	cr_assert_eq(uroce_shm_attach(&a->ctx_region, dup(h->fds[0]), UROCE_CTRL_REGION_CONTEXT),
		     0);
	cr_assert_eq(uroce_summary_open(&a->doorbells,
					(uint8_t *)a->ctx_region.addr + hello_rep.doorbells_offset,
					UROCE_CTRL_DOORBELL_SLOTS),
		     0);
	cr_assert_eq(request(h, a->c, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	pd = handle_of(h);

	/* The application's memory: a sealed memfd, as lib/client shares it. */
	fd = memfd_create("zc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, ZC_MEM), 0);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, UROCE_SHM_SEALS), 0);
	a->mem = mmap(NULL, ZC_MEM, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(a->mem, MAP_FAILED);
	cr_assert_eq(request_fd(h, a->c, UROCE_CTRL_MAP_REGION, &map, sizeof(map), fd), 0);
	region = handle_of(h);
	memset(reg_buf, 0, sizeof(reg_buf));
	reg->pd = pd;
	reg->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	reg->addr = reg->iova = (uint64_t)(uintptr_t)a->mem;
	reg->length = ZC_MEM;
	reg->nseg = 1;
	reg->seg[0] = (struct uroce_ctrl_mr_seg){.region = region, .offset = 0, .length = ZC_MEM};
	cr_assert_eq(request(h, a->c, UROCE_CTRL_REG_MR, reg_buf, sizeof(reg_buf)), 0);
	memcpy(&reg_rep, reply_payload(h), sizeof(reg_rep));
	a->mr = reg_rep.mr;
	a->lkey = reg_rep.lkey;
	a->rkey = reg_rep.rkey;

	if (channel) {
		cr_assert_eq(request(h, a->c, UROCE_CTRL_CREATE_CHANNEL, NULL, 0), 0);
		cq_req.channel = handle_of(h);
		a->channel_fd = dup(h->fds[0]);
	}
	cr_assert_eq(request(h, a->c, UROCE_CTRL_CREATE_CQ, &cq_req, sizeof(cq_req)), 0);
	memcpy(&cq_rep, reply_payload(h), sizeof(cq_rep));
	cq = cq_rep.cq;
	cr_assert_eq(uroce_shm_attach(&a->cq_region, dup(h->fds[0]), UROCE_CTRL_REGION_CQ), 0);
	cr_assert_eq(uroce_ring_open(&a->cq, (uint8_t *)a->cq_region.addr + cq_rep.ring_offset,
				     a->cq_region.size - cq_rep.ring_offset, false),
		     0);
	qp_req.pd = pd;
	qp_req.send_cq = qp_req.recv_cq = cq;
	cr_assert_eq(request(h, a->c, UROCE_CTRL_CREATE_QP, &qp_req, sizeof(qp_req)), 0);
	memcpy(&qp_rep, reply_payload(h), sizeof(qp_rep));
	a->qp_handle = qp_rep.qp;
	a->qpn = qp_rep.qpn;
	cr_assert_eq(uroce_shm_attach(&a->qp_region, dup(h->fds[0]), UROCE_CTRL_REGION_QP), 0);
	cr_assert_eq(uroce_ring_open(&a->sq, (uint8_t *)a->qp_region.addr + qp_rep.sq_offset,
				     a->qp_region.size - qp_rep.sq_offset, true),
		     0);
	cr_assert_eq(uroce_ring_open(&a->rq, (uint8_t *)a->qp_region.addr + qp_rep.rq_offset,
				     a->qp_region.size - qp_rep.rq_offset, true),
		     0);
	ctl = (const void *)((uint8_t *)a->qp_region.addr + UROCE_CTRL_QUEUE_CTL_OFFSET);
	a->slot = ctl->doorbell_slot;

	/* Connected to itself through our own GID 1 (10.0.0.1): it resolves at once. */
	cr_assert_eq(request(h, a->c, UROCE_CTRL_QUERY_GID, &gid_req, sizeof(gid_req)), 0);
	memcpy(&gid_rep, reply_payload(h), sizeof(gid_rep));
	a->gid = gid_rep.gid;
	zc_connect(h, a);
}

static void zc_app_open(struct host *h, struct zc_app *a)
{
	zc_app_open_with(h, a, false);
}

/* Posts an RDMA WRITE of @p len bytes from offset 0 to offset ZC_MEM / 2, as lib/client
 * does: the WQE, its commit, then the doorbell slot. */
void zc_post_write(struct host *h, struct zc_app *a, uint32_t len)
{
	struct uroce_ctrl_send_wqe *w = uroce_ring_prod_slot(&a->sq, 0);

	cr_assert_not_null(w);
	memset(w, 0, sizeof(*w));
	w->wr_id = 7;
	w->opcode = IBV_WR_RDMA_WRITE;
	w->send_flags = IBV_SEND_SIGNALED;
	w->remote_addr = (uint64_t)(uintptr_t)a->mem + ZC_MEM / 2;
	w->rkey = a->rkey;
	w->num_sge = 1;
	w->sg_list[0].addr = (uint64_t)(uintptr_t)a->mem;
	w->sg_list[0].length = len;
	w->sg_list[0].lkey = a->lkey;
	uroce_ring_prod_commit(&a->sq, 1);
	uroce_summary_set(&a->doorbells, a->slot);
	(void)uroce_rnic_doorbells(h->nic);
	uroce_rnic_process(h->nic);
}

void zc_app_close(struct zc_app *a)
{
	close(a->async_fd);
	close(a->wake_fd);
	if (a->channel_fd >= 0)
		close(a->channel_fd);
	uroce_shm_close(&a->qp_region);
	uroce_shm_close(&a->cq_region);
	uroce_shm_close(&a->ctx_region);
	munmap(a->mem, ZC_MEM);
}

/* An MR deregistered while frames point into it (queued in the PMD, or sent and awaiting
 * their ACK) keeps its pages mapped until the last frame lets go, and a retransmission
 * after the deregistration sends nothing from them: the WQE fails instead. */
Test(rnic, deregistered_memory_stays_mapped_while_frames_point_into_it)
{
	struct host h;
	struct zc_app a;
	struct uroce_ctrl_handle mr;
	struct ibv_wc wc;
	uint64_t mappings;

	host_init_zc(&h, 1, 1, true);
	zc_app_open(&h, &a);
	for (uint32_t i = 0; i < ZC_MEM / 2; i++)
		a.mem[i] = (uint8_t)(i * 7 + 1);
	zc_post_write(&h, &a, 4096);
	cr_assert_eq(h.zc_frames, 4u, "4 KiB at MTU 1024, each packet from the MR");
	cr_assert_eq(h.nheld, 4u);
	for (unsigned int i = 0; i < h.nheld; i++)
		cr_assert_eq(memcmp(h.held[i].addr, a.mem + 1024 * i, 1024), 0, "packet %u", i);

	mappings = stat_of(&h, a.c, "mappings");
	mr.handle = a.mr;
	cr_assert_eq(request(&h, a.c, UROCE_CTRL_DEREG_MR, &mr, sizeof(mr)), 0);
	cr_assert_eq(stat_of(&h, a.c, "objects.mr"), 0u);
	cr_assert_eq(stat_of(&h, a.c, "mappings"), mappings, "the frames' pages stay mapped");
	cr_assert_eq(stat_of(&h, a.c, "daemon.mr_dereg_held"), 1u);
	/* What a PMD does with a queued frame: it reads the pages (ASan: not freed). */
	for (unsigned int i = 0; i < h.nheld; i++)
		cr_assert_eq(memcmp(h.held[i].addr, a.mem + 1024 * i, 1024), 0, "packet %u", i);

	/* No ACK ever comes (the frames are never delivered): the retransmission timer
	 * fires, finds the lkey gone and fails the WQE without sending a byte. */
	h.now += 200 * 1000 * 1000;
	cr_assert_eq(uroce_rnic_process(h.nic), 1u, "the failed WQE's completion");
	cr_assert_eq(h.zc_frames, 4u, "nothing sent from the deregistered MR");
	cr_assert_eq(h.frames, 0u, "nor copied out of it");
	cr_assert_eq(uroce_ring_cons_avail(&a.cq), 1u);
	memcpy(&wc, uroce_ring_cons_slot(&a.cq, 0), sizeof(wc));
	cr_assert_eq(wc.wr_id, 7u);
	cr_assert_neq(wc.status, IBV_WC_SUCCESS, "the WQE fails: %d", wc.status);

	host_release_held(&h);
	cr_assert_eq(stat_of(&h, a.c, "mappings"), mappings - 1, "unmapped with the last frame");
	zc_app_close(&a);
	host_fini(&h);
}

/* uroce_rnic_trace: on, a WRITE over loopback logs its way through the responder (the
 * request) and the completer (the ACK) as rxe names the states; off, not a line. */
Test(rnic, uroce_rnic_trace_logs_the_responders_and_completers_states)
{
	struct host h;
	struct zc_app a;

	host_init(&h, 1, 1);
	h.loopback = true;
	zc_app_open(&h, &a);
	zc_connect(&h, &a);
	uroce_rnic_trace(h.nic, true);
	zc_post_write(&h, &a, 64);
	for (int i = 0; i < 100 && !uroce_ring_cons_avail(&a.cq); i++) {
		host_loop(&h);
		uroce_rnic_process(h.nic);
	}
	cr_assert_eq(uroce_ring_cons_avail(&a.cq), 1u, "the WRITE completed");
	cr_assert(strstr(h.first_resp, "resp: CHK_PSN -> CHK_OP_SEQ") != NULL, "%s",
		  h.first_resp);
	cr_assert(strstr(h.first_comp, "comp: GET_WQE -> CHECK_PSN") != NULL, "%s", h.first_comp);
	cr_assert_geq(h.debug_lines, 4u);

	uroce_ring_cons_release(&a.cq, 1);
	uroce_rnic_trace(h.nic, false);
	h.debug_lines = 0;
	zc_post_write(&h, &a, 64);
	for (int i = 0; i < 100 && !uroce_ring_cons_avail(&a.cq); i++) {
		host_loop(&h);
		uroce_rnic_process(h.nic);
	}
	cr_assert_eq(uroce_ring_cons_avail(&a.cq), 1u, "the second WRITE completed");
	cr_assert_eq(h.debug_lines, 0u, "no line with the trace off");
	zc_app_close(&a);
	host_fini(&h);
}

/* Posts a receive of 64 bytes at offset ZC_MEM / 2 as lib/client does (the WQE, its commit,
 * the doorbell slot), and nothing more: the RNIC has not looked at it yet. */
static void zc_post_recv_unseen(struct zc_app *a, uint64_t wr_id)
{
	struct uroce_ctrl_recv_wqe *w = uroce_ring_prod_slot(&a->rq, 0);

	cr_assert_not_null(w);
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->num_sge = 1;
	w->sg_list[0].addr = (uint64_t)(uintptr_t)a->mem + ZC_MEM / 2;
	w->sg_list[0].length = 64;
	w->sg_list[0].lkey = a->lkey;
	uroce_ring_prod_commit(&a->rq, 1);
	uroce_summary_set(&a->doorbells, a->slot);
}

/*
 * Receives an application posted before ibv_modify_qp(ERR) complete, flushed, before
 * that call returns, and so before anything it posts afterwards. Ceph's RDMA messenger
 * (no SRQ) counts on it: it moves a QP to ERR, posts a "beacon" SEND, and once the beacon
 * has completed and its receive CQ polls empty it destroys the QP and hands the QP's
 * receive buffers to other QPs; a flush completion seen after that names a buffer Ceph
 * lists on another QP, and QueuePair::remove_rq_wr asserts. The daemon used to flush only
 * the WQEs it had taken from the rings: one still in the ring was taken at the next
 * doorbell scan, after the send queue's, so it completed after the beacon.
 */
Test(rnic, receives_posted_before_a_move_to_error_flush_before_it_returns)
{
	struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};
	struct host h;
	struct zc_app a;
	struct ibv_wc wc;

	host_init_zc(&h, 1, 1, true);
	zc_app_open(&h, &a);
	zc_post_recv_unseen(&a, 100);
	zc_post_recv_unseen(&a, 101);
	zc_modify(&h, &a, &err, IBV_QP_STATE);
	cr_assert_eq(uroce_ring_cons_avail(&a.cq), 2u,
		     "both receives' flush completions are in the CQ when the modify answers");
	for (uint32_t i = 0; i < 2; i++) {
		memcpy(&wc, uroce_ring_cons_slot(&a.cq, i), sizeof(wc));
		cr_assert_eq(wc.wr_id, 100u + i, "in the order they were posted");
		cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
		cr_assert_eq(wc.opcode, IBV_WC_RECV);
		cr_assert_eq(wc.qp_num, a.qpn);
	}
	uroce_ring_cons_release(&a.cq, 2);

	/* The beacon: posted after the modify, it completes after them, and nothing of the
	 * receive queue comes after it. */
	zc_post_write(&h, &a, 64);
	cr_assert_eq(uroce_ring_cons_avail(&a.cq), 1u, "the beacon only");
	memcpy(&wc, uroce_ring_cons_slot(&a.cq, 0), sizeof(wc));
	cr_assert_eq(wc.wr_id, 7u);
	cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	zc_app_close(&a);
	host_fini(&h);
}

/* An application that exits, and then the RNIC itself, while frames still point into
 * the application's memory: the pages go when the frames do, after both. */
Test(rnic, frames_outlive_their_application_and_the_rnic)
{
	struct host h;
	struct zc_app a;

	host_init_zc(&h, 1, 1, true);
	zc_app_open(&h, &a);
	memset(a.mem, 0x5a, ZC_MEM / 2);
	zc_post_write(&h, &a, 8192);
	cr_assert_eq(h.nheld, 8u);
	uroce_rnic_client_free(a.c);
	zc_app_close(&a); /* the application's own mapping is gone too */
	for (unsigned int i = 0; i < h.nheld; i++)
		cr_assert_eq(h.held[i].addr[h.held[i].len - 1], 0x5a, "still mapped for the PMD");
	uroce_rnic_destroy(h.nic);
	h.nic = NULL;
	for (unsigned int i = 0; i < h.nheld; i++)
		cr_assert_eq(h.held[i].addr[0], 0x5a, "after the RNIC too");
	host_release_held(&h);
	uroce_ip_destroy(h.ip);
	for (unsigned int i = 0; i < h.nfds; i++)
		close(h.fds[i]);
}

/* ---- a WQE rewritten while the daemon reads it ------------------------------------------- */

struct racer {
	uint8_t *slots; /* the send queue's WQE slots, as the application maps them */
	size_t len;
	atomic_bool stop;
	uint64_t passes;
};

/* Rewrites every 8 bytes of every slot, over and over: num_sge, inline_len, opcodes,
 * SGE addresses, lengths and keys, half of them small numbers just past their bounds. */
static void *race_slots(void *arg)
{
	struct racer *r = arg;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		for (size_t i = 0; i + 8 <= r->len; i += 8) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			__atomic_store_n((uint64_t *)(void *)(r->slots + i),
					 (x & 1) ? (x >> 1) & 0x3f : x, __ATOMIC_RELAXED);
		}
		r->passes++;
	}
	return NULL;
}

/* A racing writer of the application's ring cannot make the daemon read or copy out of
 * bounds (security.md, single reads): each WQE field is read once into the daemon's own
 * memory and bounded there. The test posts RDMA WRITEs through the ring while a thread
 * rewrites every slot; the daemon takes them, sends, and receives its own frames; a QP
 * a garbled WQE put in error is reset. Under ASan (the CI's second build) for 60 s, else
 * 5. Then, the writer stopped, a clean WRITE still lands. */
Test(rnic, a_racing_writer_of_the_ring_cannot_make_the_daemon_overrun, .timeout = 200)
{
#if defined(__SANITIZE_ADDRESS__)
	const uint64_t secs = 60;
#else
	const uint64_t secs = 5;
#endif
	struct host h;
	struct zc_app a;
	struct racer r;
	pthread_t t;
	uint64_t end, posted = 0, completed = 0;
	struct timespec ts;

	host_init(&h, 1, 1);
	h.loopback = true;
	zc_app_open(&h, &a);
	r.slots = a.sq.elems;
	r.len = (size_t)(a.sq.mask + 1) * a.sq.elem_size;
	r.passes = 0;
	atomic_init(&r.stop, false);
	cr_assert_eq(pthread_create(&t, NULL, race_slots, &r), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = (uint64_t)ts.tv_sec + secs;
	for (uint64_t k = 0;; k++) {
		if ((k & 1023) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			if ((uint64_t)ts.tv_sec >= end)
				break;
		}
		if (uroce_ring_prod_space(&a.sq)) {
			zc_post_write(&h, &a, 64 + (uint32_t)(k % 4096));
			posted++;
		}
		h.now += 20000; /* 20 us a turn: retransmissions come, in 67 ms */
		host_loop(&h);
		uroce_rnic_process(h.nic);
		completed += uroce_ring_cons_avail(&a.cq);
		uroce_ring_cons_release(&a.cq, uroce_ring_cons_avail(&a.cq));
		if ((k & 255) == 255)
			zc_connect(&h, &a); /* out of ERR, where a garbled WQE may have put it */
	}
	atomic_store(&r.stop, true);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_gt(r.passes, 100, "the writer raced (%llu passes)",
		     (unsigned long long)r.passes);
	cr_assert_gt(posted, 1000);
	cr_assert_gt(completed, 0, "the daemon took WQEs and completed them");

	/* Whatever happened, the daemon still works: a clean WRITE lands. */
	zc_connect(&h, &a);
	memset(a.mem, 0x5a, 4096);
	memset(a.mem + ZC_MEM / 2, 0, 4096);
	zc_post_write(&h, &a, 4096);
	for (int i = 0; i < 100 && !uroce_ring_cons_avail(&a.cq); i++) {
		host_loop(&h);
		uroce_rnic_process(h.nic);
	}
	cr_assert_eq(uroce_ring_cons_avail(&a.cq), 1u);
	{
		const struct ibv_wc *wc = uroce_ring_cons_slot(&a.cq, 0);

		cr_assert_eq(wc->status, IBV_WC_SUCCESS, "status %d", wc->status);
	}
	cr_assert_eq(memcmp(a.mem, a.mem + ZC_MEM / 2, 4096), 0);
	fprintf(stderr, "racing writer: %llu s, %llu passes over %zu bytes of slots, %llu WQEs "
			"posted, %llu completions\n",
		(unsigned long long)secs, (unsigned long long)r.passes, r.len,
		(unsigned long long)posted, (unsigned long long)completed);
	zc_app_close(&a);
	host_fini(&h);
}

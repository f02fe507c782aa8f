/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The opcode table: for each opcode, which extension headers follow the BTH and what the
 * opcode means to the transport (IBA vol 1 9.2 table 37, RoCEv2 Annex A17.9.1 for CNP).
 * Header order on the wire is always BTH, DETH | XRCETH, RETH | AtomicETH, AETH,
 * AtomicAckETH, ImmDt | IETH (IBA 9.2 figure 111; XRCETH: annex A14); parse.c and build.c
 * walk the mask in that order.
 */
#include "uroce_wire.h"

#define LEN_DETH UROCE_DETH_LEN
#define LEN_RETH UROCE_RETH_LEN
#define LEN_ATOM UROCE_ATOMICETH_LEN
#define LEN_AETH UROCE_AETH_LEN
#define LEN_AACK UROCE_ATOMICACKETH_LEN
#define LEN_IMM UROCE_IMMDT_LEN
#define LEN_IETH UROCE_IETH_LEN
#define LEN_XRC UROCE_XRCETH_LEN

#define H(x) UROCE_HDR_##x
#define F(x) UROCE_OPF_##x
#define OP(tr, op, nm, fl, hd, ln)                                                         \
	[UROCE_OPCODE(UROCE_TRANSPORT_##tr, UROCE_OP_##op)] = {                            \
		.name = #tr "_" nm, .flags = (fl), .hdrs = (hd), .hdr_len = UROCE_BTH_LEN + (ln) \
	}

/* SEND and RDMA WRITE opcodes exist for RC, UC and XRC (UC lacks everything else). @x
 * and @xl: the headers every request of the transport carries after the BTH (XRC's
 * XRCETH) and their length; 0, 0 for RC and UC. */
#define SEND_WRITE_OPS(tr, x, xl)                                                           \
	OP(tr, SEND_FIRST, "SEND_FIRST",                                                    \
	   F(PAYLOAD) | F(REQ) | F(SEND) | F(FIRST) | F(RWQE), (x), (xl)),                  \
	OP(tr, SEND_MIDDLE, "SEND_MIDDLE", F(PAYLOAD) | F(REQ) | F(SEND) | F(MIDDLE), (x),    \
	   (xl)),                                                                           \
	OP(tr, SEND_LAST, "SEND_LAST", F(PAYLOAD) | F(REQ) | F(SEND) | F(LAST), (x), (xl)),  \
	OP(tr, SEND_LAST_IMM, "SEND_LAST_WITH_IMMEDIATE",                                   \
	   F(PAYLOAD) | F(REQ) | F(SEND) | F(LAST) | F(IMM), (x) | H(IMMDT), (xl) + LEN_IMM), \
	OP(tr, SEND_ONLY, "SEND_ONLY",                                                      \
	   F(PAYLOAD) | F(REQ) | F(SEND) | F(FIRST) | F(LAST) | F(RWQE), (x), (xl)),         \
	OP(tr, SEND_ONLY_IMM, "SEND_ONLY_WITH_IMMEDIATE",                                   \
	   F(PAYLOAD) | F(REQ) | F(SEND) | F(FIRST) | F(LAST) | F(IMM) | F(RWQE),            \
	   (x) | H(IMMDT), (xl) + LEN_IMM),                                                 \
	OP(tr, WRITE_FIRST, "RDMA_WRITE_FIRST",                                             \
	   F(PAYLOAD) | F(REQ) | F(WRITE) | F(FIRST), (x) | H(RETH), (xl) + LEN_RETH),       \
	OP(tr, WRITE_MIDDLE, "RDMA_WRITE_MIDDLE", F(PAYLOAD) | F(REQ) | F(WRITE) | F(MIDDLE), \
	   (x), (xl)),                                                                      \
	OP(tr, WRITE_LAST, "RDMA_WRITE_LAST", F(PAYLOAD) | F(REQ) | F(WRITE) | F(LAST), (x),  \
	   (xl)),                                                                           \
	OP(tr, WRITE_LAST_IMM, "RDMA_WRITE_LAST_WITH_IMMEDIATE",                            \
	   F(PAYLOAD) | F(REQ) | F(WRITE) | F(LAST) | F(IMM) | F(RWQE), (x) | H(IMMDT),      \
	   (xl) + LEN_IMM),                                                                 \
	OP(tr, WRITE_ONLY, "RDMA_WRITE_ONLY",                                               \
	   F(PAYLOAD) | F(REQ) | F(WRITE) | F(FIRST) | F(LAST), (x) | H(RETH),               \
	   (xl) + LEN_RETH),                                                                \
	OP(tr, WRITE_ONLY_IMM, "RDMA_WRITE_ONLY_WITH_IMMEDIATE",                            \
	   F(PAYLOAD) | F(REQ) | F(WRITE) | F(FIRST) | F(LAST) | F(IMM) | F(RWQE),           \
	   (x) | H(RETH) | H(IMMDT), (xl) + LEN_RETH + LEN_IMM)

/* What RC and XRC have beyond SEND and WRITE: READ, the atomics, SEND with Invalidate,
 * and the responses, which carry no XRCETH (annex A14: a response goes back over the
 * connection, to the initiator QP that asked). */
#define READ_ATOMIC_OPS(tr, x, xl)                                                          \
	OP(tr, READ_REQUEST, "RDMA_READ_REQUEST", F(REQ) | F(READ) | F(FIRST) | F(LAST),     \
	   (x) | H(RETH), (xl) + LEN_RETH),                                                 \
	OP(tr, READ_RESPONSE_FIRST, "RDMA_READ_RESPONSE_FIRST",                             \
	   F(PAYLOAD) | F(RESP) | F(READ) | F(FIRST), H(AETH), LEN_AETH),                   \
	OP(tr, READ_RESPONSE_MIDDLE, "RDMA_READ_RESPONSE_MIDDLE",                           \
	   F(PAYLOAD) | F(RESP) | F(READ) | F(MIDDLE), 0, 0),                               \
	OP(tr, READ_RESPONSE_LAST, "RDMA_READ_RESPONSE_LAST",                               \
	   F(PAYLOAD) | F(RESP) | F(READ) | F(LAST), H(AETH), LEN_AETH),                    \
	OP(tr, READ_RESPONSE_ONLY, "RDMA_READ_RESPONSE_ONLY",                               \
	   F(PAYLOAD) | F(RESP) | F(READ) | F(FIRST) | F(LAST), H(AETH), LEN_AETH),         \
	OP(tr, ACKNOWLEDGE, "ACKNOWLEDGE", F(RESP) | F(FIRST) | F(LAST), H(AETH), LEN_AETH), \
	OP(tr, ATOMIC_ACKNOWLEDGE, "ATOMIC_ACKNOWLEDGE",                                    \
	   F(RESP) | F(ATOMIC) | F(FIRST) | F(LAST), H(AETH) | H(ATOMICACKETH),             \
	   LEN_AETH + LEN_AACK),                                                            \
	OP(tr, COMPARE_SWAP, "COMPARE_SWAP", F(REQ) | F(ATOMIC) | F(FIRST) | F(LAST),        \
	   (x) | H(ATOMICETH), (xl) + LEN_ATOM),                                            \
	OP(tr, FETCH_ADD, "FETCH_ADD", F(REQ) | F(ATOMIC) | F(FIRST) | F(LAST),              \
	   (x) | H(ATOMICETH), (xl) + LEN_ATOM),                                            \
	OP(tr, SEND_LAST_INV, "SEND_LAST_WITH_INVALIDATE",                                  \
	   F(PAYLOAD) | F(REQ) | F(SEND) | F(LAST) | F(INV), (x) | H(IETH), (xl) + LEN_IETH), \
	OP(tr, SEND_ONLY_INV, "SEND_ONLY_WITH_INVALIDATE",                                  \
	   F(PAYLOAD) | F(REQ) | F(SEND) | F(FIRST) | F(LAST) | F(INV) | F(RWQE),            \
	   (x) | H(IETH), (xl) + LEN_IETH)

const struct uroce_opcode_info uroce_opcode_table[256] = {
	SEND_WRITE_OPS(RC, 0, 0),
	READ_ATOMIC_OPS(RC, 0, 0),
	/* IBA 1.5 RDMA Atomic Write: RETH (DMA length 8), then the 8 bytes as payload (rxe's
	 * rxe_opcode.c gives it RETH | PAYLOAD | REQ | ATOMIC_WRITE | START | END). */
	OP(RC, ATOMIC_WRITE, "ATOMIC_WRITE",
	   F(PAYLOAD) | F(REQ) | F(ATOMIC_WRITE) | F(FIRST) | F(LAST), H(RETH), LEN_RETH),

	SEND_WRITE_OPS(UC, 0, 0),

	OP(UD, SEND_ONLY, "SEND_ONLY",
	   F(PAYLOAD) | F(REQ) | F(SEND) | F(FIRST) | F(LAST) | F(RWQE), H(DETH), LEN_DETH),
	OP(UD, SEND_ONLY_IMM, "SEND_ONLY_WITH_IMMEDIATE",
	   F(PAYLOAD) | F(REQ) | F(SEND) | F(FIRST) | F(LAST) | F(IMM) | F(RWQE),
	   H(DETH) | H(IMMDT), LEN_DETH + LEN_IMM),

	/* XRC (annex A14): RC's requests with the XRCETH naming the target's SRQ, and RC's
	 * responses. No Atomic Write: IBA 1.5 defines it for RC, and no RNIC sends it on
	 * XRC. */
	SEND_WRITE_OPS(XRC, H(XRCETH), LEN_XRC),
	READ_ATOMIC_OPS(XRC, H(XRCETH), LEN_XRC),

	[UROCE_OPCODE_CNP] = {.name = "CNP",
			      .flags = F(CNP),
			      .hdrs = H(CNP_RSVD),
			      .hdr_len = UROCE_BTH_LEN + UROCE_CNP_RSVD_LEN},
};

bool uroce_opcode_valid_for_qp(uint8_t opcode, enum uroce_qp_type qpt)
{
	if (uroce_opcode_info(opcode) == NULL)
		return false;
	if (opcode == UROCE_OPCODE_CNP)
		return true; /* a CNP names any QP it congests (A17.9.1) */
	switch (qpt) {
	case UROCE_QPT_RC:
		return UROCE_OPCODE_TRANSPORT(opcode) == UROCE_TRANSPORT_RC;
	case UROCE_QPT_UC:
		return UROCE_OPCODE_TRANSPORT(opcode) == UROCE_TRANSPORT_UC;
	case UROCE_QPT_UD:
		return UROCE_OPCODE_TRANSPORT(opcode) == UROCE_TRANSPORT_UD;
	case UROCE_QPT_XRC_SEND:
		return UROCE_OPCODE_TRANSPORT(opcode) == UROCE_TRANSPORT_XRC &&
		       (uroce_opcode_table[opcode].flags & UROCE_OPF_RESP);
	case UROCE_QPT_XRC_RECV:
		return UROCE_OPCODE_TRANSPORT(opcode) == UROCE_TRANSPORT_XRC &&
		       (uroce_opcode_table[opcode].flags & UROCE_OPF_REQ);
	}
	return false;
}

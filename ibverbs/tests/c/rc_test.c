/* Two RC endpoints in two processes (a fork), each on its own rocenic0 over the UDP wire,
 * written against Debian's <infiniband/verbs.h> as any verbs program is. The client does
 * RDMA WRITE, SEND with immediate, an inline SEND from unregistered memory and RDMA READ;
 * the server waits for its receives through a completion channel. Every completion and
 * every byte is checked, and so are the errors of verbs the library does not serve.
 *
 * usage: rc_test PORT_A PORT_B   (UDP ports on 127.0.0.1, one per side)
 * Prints "device rocenic0" once and "OK" at the end; exits non-zero on any failure. */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SZ 4096
#define INLINE_LEN 24
#define WAIT_S 20

static const char *role = "main";

static void die(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "rc_test %s: ", role);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static double now_s(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint8_t pat(size_t i, uint8_t seed) { return (uint8_t)(i * 29 + seed); }

static void fill(uint8_t *p, size_t n, uint8_t seed) {
	for (size_t i = 0; i < n; i++)
		p[i] = pat(i, seed);
}

static void check(const char *what, const uint8_t *p, size_t n, uint8_t seed) {
	for (size_t i = 0; i < n; i++)
		if (p[i] != pat(i, seed))
			die("%s: byte %zu is 0x%02x, expected 0x%02x", what, i, p[i], pat(i, seed));
}

struct info {
	uint32_t qpn;
	uint64_t addr;
	uint32_t rkey;
	union ibv_gid gid;
};

static void xwrite(int fd, const void *p, size_t n) {
	if (write(fd, p, n) != (ssize_t)n)
		die("pipe write failed");
}

static void xread(int fd, void *p, size_t n) {
	if (read(fd, p, n) != (ssize_t)n)
		die("pipe read failed");
}

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;
};

static void open_side(struct side *s, size_t len) {
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list || n < 1)
		die("no device");
	const char *name = ibv_get_device_name(list[0]);
	if (strcmp(name, "rocenic0") != 0)
		die("device is %s, not rocenic0: the system libibverbs was loaded", name);
	if (strcmp(role, "server") == 0)
		printf("device %s\n", name);
	s->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!s->ctx)
		die("ibv_open_device: %s", strerror(errno));
	struct ibv_port_attr pa;
	if (ibv_query_port(s->ctx, 1, &pa))
		die("ibv_query_port");
	if (pa.state != IBV_PORT_ACTIVE || pa.link_layer != IBV_LINK_LAYER_ETHERNET)
		die("port: state %s, link layer %d", ibv_port_state_str(pa.state), pa.link_layer);
	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->pd)
		die("ibv_alloc_pd: %s", strerror(errno));
	if (posix_memalign((void **)&s->buf, 4096, len))
		die("posix_memalign");
	memset(s->buf, 0, len);
	s->mr = ibv_reg_mr(s->pd, s->buf, len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!s->mr)
		die("ibv_reg_mr: %s", strerror(errno));
	if (s->mr->addr != s->buf || s->mr->length != len)
		die("ibv_mr holds %p+%zu, not the memory registered", s->mr->addr, s->mr->length);
	s->ch = ibv_create_comp_channel(s->ctx);
	if (!s->ch)
		die("ibv_create_comp_channel: %s", strerror(errno));
	s->cq = ibv_create_cq(s->ctx, 16, s, s->ch, 0);
	if (!s->cq)
		die("ibv_create_cq: %s", strerror(errno));
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			.max_recv_sge = 1, .max_inline_data = 32},
		.qp_type = IBV_QPT_RC,
	};
	s->qp = ibv_create_qp(s->pd, &ia);
	if (!s->qp)
		die("ibv_create_qp: %s", strerror(errno));
	if (ia.cap.max_inline_data < INLINE_LEN)
		die("max_inline_data %u", ia.cap.max_inline_data);
}

/* Verbs the library does not serve fail as rdma-core's do, without a crash. */
static void check_unserved(struct side *s) {
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
	errno = 0;
	if (ibv_create_srq(s->pd, &sa) != NULL || errno != EOPNOTSUPP)
		die("ibv_create_srq: expected NULL with EOPNOTSUPP, errno %d", errno);
	struct ibv_ah_attr ah = {.is_global = 1, .port_num = 1};
	errno = 0;
	if (ibv_create_ah(s->pd, &ah) != NULL || errno != EOPNOTSUPP)
		die("ibv_create_ah: expected NULL with EOPNOTSUPP, errno %d", errno);
	if (ibv_resize_cq(s->cq, 32) != EOPNOTSUPP)
		die("ibv_resize_cq: expected EOPNOTSUPP");
	union ibv_gid g;
	if (ibv_query_gid(s->ctx, 1, 7, &g) == 0)
		die("ibv_query_gid of index 7 succeeded");
	struct ibv_qp_init_attr ud = {.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	errno = 0;
	if (ibv_create_qp(s->pd, &ud) != NULL || errno != EOPNOTSUPP)
		die("ibv_create_qp(UD): expected NULL with EOPNOTSUPP, errno %d", errno);
}

static void connect_qp(struct side *s, const struct info *peer, uint32_t my_psn, uint32_t peer_psn) {
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
	int rc = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc)
		die("modify to INIT: %s", strerror(rc));
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	rc = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		die("modify to RTR: %s", strerror(rc));
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 1;
	rc = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc)
		die("modify to RTS: %s", strerror(rc));
	struct ibv_qp_init_attr ia;
	if (ibv_query_qp(s->qp, &a, IBV_QP_STATE, &ia))
		die("ibv_query_qp");
	if (a.qp_state != IBV_QPS_RTS || a.dest_qp_num != peer->qpn || s->qp->state != IBV_QPS_RTS)
		die("query_qp: state %d, dest QPN %u", a.qp_state, a.dest_qp_num);
}

static struct info exchange(struct side *s, int wfd, int rfd) {
	struct info me = {.qpn = s->qp->qp_num, .addr = (uintptr_t)s->buf, .rkey = s->mr->rkey}, peer;
	if (ibv_query_gid(s->ctx, 1, 1, &me.gid))
		die("ibv_query_gid");
	xwrite(wfd, &me, sizeof me);
	xread(rfd, &peer, sizeof peer);
	return peer;
}

/* Polls (each empty poll lets the NIC run) until `n` completions arrived. */
static void poll_n(struct side *s, struct ibv_wc *wc, int n) {
	double end = now_s() + WAIT_S;
	int got = 0;
	while (got < n) {
		int k = ibv_poll_cq(s->cq, n - got, wc + got);
		if (k < 0)
			die("ibv_poll_cq: %d", k);
		got += k;
		if (now_s() > end)
			die("%d of %d completions after %d s", got, n, WAIT_S);
	}
}

static void expect_wc(const struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_opcode op, uint32_t len) {
	if (wc->status != IBV_WC_SUCCESS)
		die("wr %llu: %s", (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status));
	if (wc->wr_id != wr_id || wc->opcode != op || (len && wc->byte_len != len))
		die("completion wr_id %llu opcode %d len %u, expected %llu %d %u",
		    (unsigned long long)wc->wr_id, wc->opcode, wc->byte_len,
		    (unsigned long long)wr_id, op, len);
}

/* Server memory: [0,SZ) WRITE target, [SZ,2SZ) SEND target, [2SZ,+64) inline SEND target,
 * [3SZ,4SZ) READ source. */
static int server(int wfd, int rfd) {
	role = "server";
	struct side s;
	open_side(&s, 4 * SZ);
	check_unserved(&s);
	fill(s.buf + 3 * SZ, SZ, 0x40);
	struct info peer = exchange(&s, wfd, rfd);
	connect_qp(&s, &peer, 100, 200);
	struct ibv_sge sg[2] = {{(uintptr_t)(s.buf + SZ), SZ, s.mr->lkey},
				{(uintptr_t)(s.buf + 2 * SZ), 64, s.mr->lkey}};
	struct ibv_recv_wr r1 = {.wr_id = 11, .sg_list = &sg[1], .num_sge = 1};
	struct ibv_recv_wr r0 = {.wr_id = 10, .next = &r1, .sg_list = &sg[0], .num_sge = 1}, *bad;
	if (ibv_post_recv(s.qp, &r0, &bad))
		die("ibv_post_recv");
	if (ibv_req_notify_cq(s.cq, 0))
		die("ibv_req_notify_cq");
	char c = 'r';
	xwrite(wfd, &c, 1);
	struct ibv_cq *ecq;
	void *ectx;
	if (ibv_get_cq_event(s.ch, &ecq, &ectx))
		die("ibv_get_cq_event: %s", strerror(errno));
	if (ecq != s.cq || ectx != &s)
		die("event for the wrong CQ");
	ibv_ack_cq_events(ecq, 1);
	struct ibv_wc wc[2];
	poll_n(&s, wc, 2);
	expect_wc(&wc[0], 10, IBV_WC_RECV, SZ);
	if (!(wc[0].wc_flags & IBV_WC_WITH_IMM) || ntohl(wc[0].imm_data) != 0x12345678)
		die("SEND with immediate: flags %#x imm %#x", wc[0].wc_flags, ntohl(wc[0].imm_data));
	expect_wc(&wc[1], 11, IBV_WC_RECV, INLINE_LEN);
	if (wc[0].qp_num != s.qp->qp_num || wc[0].src_qp != peer.qpn)
		die("receive completion QPNs %u/%u", wc[0].qp_num, wc[0].src_qp);
	check("WRITE target", s.buf, SZ, 0x10);
	check("SEND target", s.buf + SZ, SZ, 0x20);
	check("inline SEND target", s.buf + 2 * SZ, INLINE_LEN, 0x30);
	/* Keep the NIC running (READ responses, ACKs) until the client is done. */
	struct pollfd p = {.fd = rfd, .events = POLLIN};
	double end = now_s() + WAIT_S;
	while (poll(&p, 1, 0) == 0) {
		if (ibv_poll_cq(s.cq, 1, wc) != 0)
			die("unexpected completion");
		if (now_s() > end)
			die("the client did not finish");
	}
	xread(rfd, &c, 1);
	if (c != 'd')
		die("the client failed");
	if (ibv_destroy_qp(s.qp) || ibv_destroy_cq(s.cq) || ibv_destroy_comp_channel(s.ch) ||
	    ibv_dereg_mr(s.mr) || ibv_dealloc_pd(s.pd) || ibv_close_device(s.ctx))
		die("teardown");
	check("READ source after deregistration", s.buf + 3 * SZ, SZ, 0x40);
	free(s.buf);
	printf("OK\n");
	return 0;
}

/* Client memory: [0,SZ) WRITE source, [SZ,2SZ) SEND source, [2SZ,3SZ) READ target. */
static int client(int wfd, int rfd) {
	role = "client";
	struct side s;
	open_side(&s, 3 * SZ);
	fill(s.buf, SZ, 0x10);
	fill(s.buf + SZ, SZ, 0x20);
	struct info peer = exchange(&s, wfd, rfd);
	connect_qp(&s, &peer, 200, 100);
	char c;
	xread(rfd, &c, 1);
	uint8_t inline_src[INLINE_LEN]; /* not registered: inline data needs no MR */
	fill(inline_src, INLINE_LEN, 0x30);
	struct ibv_sge sg[4] = {{(uintptr_t)s.buf, SZ, s.mr->lkey},
				{(uintptr_t)(s.buf + SZ), SZ, s.mr->lkey},
				{(uintptr_t)inline_src, INLINE_LEN, 0},
				{(uintptr_t)(s.buf + 2 * SZ), SZ, s.mr->lkey}};
	struct ibv_send_wr w[4];
	memset(w, 0, sizeof w);
	w[0] = (struct ibv_send_wr){.wr_id = 1, .next = &w[1], .sg_list = &sg[0], .num_sge = 1,
				    .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED};
	w[0].wr.rdma.remote_addr = peer.addr;
	w[0].wr.rdma.rkey = peer.rkey;
	w[1] = (struct ibv_send_wr){.wr_id = 2, .next = &w[2], .sg_list = &sg[1], .num_sge = 1,
				    .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				    .imm_data = htonl(0x12345678)};
	w[2] = (struct ibv_send_wr){.wr_id = 3, .next = &w[3], .sg_list = &sg[2], .num_sge = 1,
				    .opcode = IBV_WR_SEND,
				    .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE};
	w[3] = (struct ibv_send_wr){.wr_id = 4, .sg_list = &sg[3], .num_sge = 1,
				    .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED};
	w[3].wr.rdma.remote_addr = peer.addr + 3 * SZ;
	w[3].wr.rdma.rkey = peer.rkey;
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(s.qp, w, &bad);
	if (rc)
		die("ibv_post_send: %s (bad wr %llu)", strerror(rc), bad ? (unsigned long long)bad->wr_id : 0ULL);
	memset(inline_src, 0, sizeof inline_src); /* inline data was copied at post time */
	struct ibv_wc wc[4];
	poll_n(&s, wc, 4);
	expect_wc(&wc[0], 1, IBV_WC_RDMA_WRITE, 0);
	expect_wc(&wc[1], 2, IBV_WC_SEND, 0);
	expect_wc(&wc[2], 3, IBV_WC_SEND, 0);
	expect_wc(&wc[3], 4, IBV_WC_RDMA_READ, SZ);
	check("READ target", s.buf + 2 * SZ, SZ, 0x40);
	/* A send with an unknown opcode is refused and named in bad_wr. */
	struct ibv_send_wr junk = {.wr_id = 9, .sg_list = &sg[0], .num_sge = 1, .opcode = 77};
	bad = NULL;
	rc = ibv_post_send(s.qp, &junk, &bad);
	if (rc != EINVAL || bad != &junk)
		die("ibv_post_send of opcode 77: rc %d, bad %p", rc, (void *)bad);
	if (ibv_destroy_qp(s.qp) || ibv_destroy_cq(s.cq) || ibv_destroy_comp_channel(s.ch) ||
	    ibv_dereg_mr(s.mr) || ibv_dealloc_pd(s.pd) || ibv_close_device(s.ctx))
		die("teardown");
	c = 'd';
	xwrite(wfd, &c, 1);
	free(s.buf);
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 3)
		die("usage: rc_test PORT_A PORT_B");
	int s2c[2], c2s[2];
	if (pipe(s2c) || pipe(c2s))
		die("pipe");
	char wire[64];
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		snprintf(wire, sizeof wire, "udp:%s:%s", argv[2], argv[1]);
		setenv("ROCENIC_WIRE", wire, 1);
		setenv("ROCENIC_MAC", "02:00:00:00:00:02", 1);
		setenv("ROCENIC_IP", "10.0.0.2", 1);
		exit(client(c2s[1], s2c[0]));
	}
	snprintf(wire, sizeof wire, "udp:%s:%s", argv[1], argv[2]);
	setenv("ROCENIC_WIRE", wire, 1);
	setenv("ROCENIC_MAC", "02:00:00:00:00:01", 1);
	setenv("ROCENIC_IP", "10.0.0.1", 1);
	int rc = server(s2c[1], c2s[0]);
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("the client failed");
	return rc;
}

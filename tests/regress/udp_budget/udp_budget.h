/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Regression program for "unix,udp: exact receive budget of 32 datagrams
 * per event".
 *
 * libuv stops reading a readable UDP socket after a budget of 32 so that a
 * flood cannot starve the rest of the loop. In recvmmsg mode v1.50.0 only
 * subtracted a batch after reading it, so the last batch of an event ran
 * over the budget (40 40 20 instead of 32 32 32 4 for a backlog of 100).
 *
 * Every case queues its backlog before the loop polls for the first time
 * and counts the datagrams handed over per loop iteration with a
 * uv_check_t. Payloads carry a sequence number so that loss, duplication
 * and reordering are caught too.
 *
 * The files: receiver.c, the receivers' callbacks and what they count;
 * run.c, a case's loop, receivers and backlog; backlog.c, one backlog;
 * small_buffer.c, a recvmmsg buffer under 64 KiB; two_sockets.c;
 * self_feed.c, a handler that sends to its own socket; mid_batch.c, a
 * stop, a close or UV_ENOBUFS in the middle of a batch; starvation.c, a
 * flood while a timer runs; main.c, the table of cases.
 */

#ifndef UDP_BUDGET_H_
#define UDP_BUDGET_H_

#include "uv.h"

#define HARNESS_SHARED
#include "harness.h"
#include "dgram.h"

#ifndef _WIN32
# include <sys/types.h>
# include <sys/socket.h>
# include <netinet/in.h>
# include <signal.h>
# include <unistd.h>
#endif

#define BUDGET 32
#define DGRAM_MAX (64 * 1024)
#define MAX_LOG 256
#define MAX_RECEIVERS 2
#define SAFETY_MS 4000
#define RCVBUF_SIZE (1 << 20)
#define FLOOD_MS 2000
#define TICK_MS 20

#define UNIX_ONLY_REASON "the budget patch is Unix-only"
#define UNIX_LOOP_REASON "checks the Unix receive loop the budget patch changes"

typedef struct test_ctx test_ctx;

typedef struct {
  uv_udp_t handle;
  test_ctx* ctx;
  int chunks;                 /* 0: recvmsg mode, N: N-chunk recvmmsg. */
  char* slab;
  size_t slab_len;
  int slab_out;               /* The slab is lent to libuv. */
  int batch_chunks;           /* Chunks seen since the last MMSG_FREE. */
  unsigned next_seq;
  unsigned expected;          /* Datagrams to receive before done. */
  unsigned received;
  int this_iter;
  int log[MAX_LOG];
  int nlog;
  int max_iter;
  int allocs;
  int mmsg_frees;
  /* Knobs. */
  int check_seq;
  int stop_at;                /* Sequence number to stop at, or -1. */
  int close_at;               /* Sequence number to close at, or -1. */
  int nobufs_alloc;           /* Alloc call that returns nothing, or 0. */
  unsigned feed_below;        /* Echo seq + feed_below for seq below it. */
  /* What happened. */
  int stopped;
  int closed;
  int close_cb_called;
  int cbs_after_stop;
  int frees_after_stop;
  int allocs_after_close;
  int dgrams_after_close;
  int frees_after_close;
  unsigned max_seq_after_close;
  int enobufs;
  int enobufs_this_iter;
  int cbs_after_enobufs;
  int stop_iter;              /* Log index of the iteration that stopped. */
  unsigned resume_seq;        /* First sequence number after a restart. */
  struct sockaddr_storage addr;
} receiver;

struct test_ctx {
  uv_loop_t loop;
  uv_check_t check;
  uv_timer_t safety;
  uv_timer_t tick;
  int use_tick;
  uint64_t safety_ms;
  int ticks;
  int nreceivers;
  receiver* rx[MAX_RECEIVERS];
  int total_log[MAX_LOG];
  int total_nlog;
  int timed_out;
  int finished;
  int restart_after_stop;
  char err[256];
};

#ifndef _WIN32
static const int want_100[] = { 32, 32, 32, 4 };
#define WANT_100 want_100, (int) (sizeof(want_100) / sizeof(want_100[0]))
#endif

/* receiver.c: the receivers' callbacks, and their log of iterations. */
void ctx_error(test_ctx* c, const char* fmt, ...);
int compare_log(const int* log,
                int n,
                const int* want,
                int nwant,
                char* reason,
                size_t size);
void finish(test_ctx* c);
int receiver_start(receiver* r);
void on_check(uv_check_t* handle);
void on_safety(uv_timer_t* handle);
#ifndef _WIN32
void on_tick(uv_timer_t* handle);
#endif

/* run.c: a case's loop, its receivers and their backlog. */
int ctx_init(test_ctx* c);
int receiver_init(test_ctx* c,
                  receiver* r,
                  int family,
                  int chunks,
                  unsigned expected);
int send_backlog(uv_udp_t* from,
                 receiver* r,
                 unsigned first,
                 unsigned count);
int ctx_close(test_ctx* c, uv_udp_t* sender);
int skip_mmsg(receiver* r);
int run_and_close(test_ctx* c, uv_udp_t* sender);
int sender_init(test_ctx* c, uv_udp_t* sender, receiver* r);
int start_backlog(test_ctx* c,
                  receiver* r,
                  uv_udp_t* sender,
                  int family,
                  int chunks,
                  unsigned expect,
                  unsigned n);
int backlog_case(int chunks,
                 unsigned n,
                 const int* want,
                 int nwant,
                 int family);

/* The cases, in the files of their behaviour (above). */
int backlog_100_recvmsg(void);
int backlog_100_recvmmsg_20_chunks(void);
int backlog_100_recvmmsg_8_chunks(void);
int backlog_100_recvmmsg_7_chunks(void);
int backlog_100_recvmmsg_small_buffer(void);
int two_sockets_recvmsg(void);
int two_sockets_recvmmsg_20_chunks(void);
int self_feed_recvmsg(void);
int self_feed_recvmmsg_20_chunks(void);
int recv_stop_mid_batch_recvmsg(void);
int recv_stop_mid_batch_recvmmsg_7_chunks(void);
int close_mid_batch_recvmsg(void);
int close_mid_batch_recvmmsg_7_chunks(void);
int enobufs_mid_batch_recvmsg(void);
int enobufs_mid_batch_recvmmsg_7_chunks(void);
int in_order_ipv4_recvmsg(void);
int in_order_ipv4_recvmmsg_20_chunks(void);
int in_order_ipv4_recvmmsg_7_chunks(void);
int in_order_ipv6_recvmsg(void);
int in_order_ipv6_recvmmsg_20_chunks(void);
int starvation_recvmsg(void);
int starvation_recvmmsg_20_chunks(void);

#endif  /* UDP_BUDGET_H_ */

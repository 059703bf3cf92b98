/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Numbered datagrams, shared by the UDP regression programs: the first
 * four bytes of a payload hold its sequence number, most significant byte
 * first, so a receiver can tell a datagram delivered twice, out of order
 * or never.
 */

#ifndef UVPATCH_DGRAM_H_
#define UVPATCH_DGRAM_H_

#include "uv.h"

static void put_seq(char* p, unsigned long seq) {
  p[0] = (char) ((seq >> 24) & 0xff);
  p[1] = (char) ((seq >> 16) & 0xff);
  p[2] = (char) ((seq >> 8) & 0xff);
  p[3] = (char) (seq & 0xff);
}


static unsigned long get_seq(const char* p) {
  const unsigned char* u;

  u = (const unsigned char*) p;
  return ((unsigned long) u[0] << 24) | ((unsigned long) u[1] << 16) |
         ((unsigned long) u[2] << 8) | (unsigned long) u[3];
}


/* The number of a datagram of a flood of numbered ones, size bytes each
 * and numbered below max; -1 if it is not one of them (malformed).
 */
static long flood_seq(const uv_buf_t* buf,
                      ssize_t nread,
                      ssize_t size,
                      unsigned long max) {
  unsigned long seq;

  if (nread != size)
    return -1;
  seq = get_seq(buf->base);
  return seq < max ? (long) seq : -1;
}


/* Marks seq in seen, a bitmap of the sequence numbers delivered; returns
 * 1 if it was marked already (a datagram delivered twice), else 0.
 */
static int seen_twice(unsigned char* seen, unsigned long seq) {
  int twice;

  twice = (seen[seq >> 3] & (1 << (seq & 7))) != 0;
  seen[seq >> 3] |= (unsigned char) (1 << (seq & 7));
  return twice;
}


/* uv_hrtime() in milliseconds. */
static uint64_t now_ms(void) {
  return uv_hrtime() / 1000000;
}

#endif  /* UVPATCH_DGRAM_H_ */

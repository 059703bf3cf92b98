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


/* uv_hrtime() in milliseconds. */
static uint64_t now_ms(void) {
  return uv_hrtime() / 1000000;
}

#endif  /* UVPATCH_DGRAM_H_ */

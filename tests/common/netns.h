/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A private network namespace for the programs that flood loopback with
 * ICMP error reports: only loopback, up, with the ICMP rate limits of that
 * namespace raised, and the counters of /proc/net/snmp, which are that
 * namespace's own. The programs run each case (or benchmark) in a process
 * of its own, so entering the namespace for good is fine. Linux only; the
 * including file defines _GNU_SOURCE first (for unshare()).
 */

#ifndef UVPATCH_NETNS_H_
#define UVPATCH_NETNS_H_

#ifdef __linux__

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Writes value to a /proc/sys file. Returns 0 or -1. */
static int write_sysctl(const char* path, const char* value) {
  ssize_t n;
  int fd;

  fd = open(path, O_WRONLY);
  if (fd < 0)
    return -1;
  n = write(fd, value, strlen(value));
  close(fd);
  return n == (ssize_t) strlen(value) ? 0 : -1;
}


/* Moves the process into a new network namespace with loopback up and the
 * ICMP rate limits raised. Returns 0 or an errno value.
 */
static int private_netns(void) {
  struct ifreq ifr;
  int err;
  int fd;

  if (unshare(CLONE_NEWNET) != 0)
    return errno;
  fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0)
    return errno;
  memset(&ifr, 0, sizeof(ifr));
  strcpy(ifr.ifr_name, "lo");
  err = 0;
  if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0)
    err = errno;
  ifr.ifr_flags |= IFF_UP;
  if (err == 0 && ioctl(fd, SIOCSIFFLAGS, &ifr) != 0)
    err = errno;
  close(fd);
  if (err != 0)
    return err;
  /* Best effort: loopback is exempt from the per-destination limit, and the
   * global limit is per namespace on current kernels.
   */
  write_sysctl("/proc/sys/net/ipv4/icmp_msgs_burst", "10000000");
  write_sysctl("/proc/sys/net/ipv4/icmp_msgs_per_sec", "10000000");
  write_sysctl("/proc/sys/net/ipv4/icmp_ratelimit", "0");
  return 0;
}


/* private_netns() once per process: returns 0 or the errno value that
 * kept the process in the machine's namespace, the first time and after.
 */
static int private_netns_once(void) {
  static int entered;
  static int err;

  if (!entered) {
    err = private_netns();
    entered = 1;
  }
  return err;
}


/* Puts back the kernel's default ICMP rate limits (a burst of 50, then
 * 1000 a second), which private_netns() raised: for a case whose few
 * errors stay within them, and that says which limits held.
 */
static void default_icmp_limits(void) {
  write_sysctl("/proc/sys/net/ipv4/icmp_msgs_burst", "50");
  write_sysctl("/proc/sys/net/ipv4/icmp_msgs_per_sec", "1000");
  write_sysctl("/proc/sys/net/ipv4/icmp_ratelimit", "1000");
}


static long read_long(const char* path) {
  char buf[64];
  FILE* f;
  long v;

  f = fopen(path, "r");
  if (f == NULL)
    return -1;
  v = -1;
  if (fgets(buf, sizeof(buf), f) != NULL)
    v = atol(buf);
  fclose(f);
  return v;
}


/* Names the ICMP rate limits in force: "default", "lifted" (as
 * private_netns() sets them) or "other".
 */
static const char* icmp_ratelimit(void) {
  long burst;
  long rate;

  burst = read_long("/proc/sys/net/ipv4/icmp_msgs_burst");
  rate = read_long("/proc/sys/net/ipv4/icmp_msgs_per_sec");
  if (burst == 50 && rate == 1000)
    return "default";
  if (burst >= 1000000 && rate >= 1000000)
    return "lifted";
  return "other";
}


/* A counter of /proc/net/snmp, the namespace's own: group with its colon
 * ("Udp:", "Icmp:"), name as the kernel spells it ("RcvbufErrors").
 * Each group is a line of names followed by a line of values, so the
 * lines are read two at a time. Returns the value, or -1 if unknown.
 */
static long snmp_counter(const char* group, const char* name) {
  char names[2048];
  char values[2048];
  char* ns;
  char* vs;
  char* n;
  char* v;
  FILE* f;
  long r;

  f = fopen("/proc/net/snmp", "r");
  if (f == NULL)
    return -1;
  r = -1;
  while (fgets(names, sizeof(names), f) != NULL &&
         fgets(values, sizeof(values), f) != NULL) {
    n = strtok_r(names, " \n", &ns);
    v = strtok_r(values, " \n", &vs);
    if (n == NULL || v == NULL || strcmp(n, group) != 0)
      continue;
    while ((n = strtok_r(NULL, " \n", &ns)) != NULL &&
           (v = strtok_r(NULL, " \n", &vs)) != NULL)
      if (strcmp(n, name) == 0) {
        r = atol(v);
        break;
      }
    break;
  }
  fclose(f);
  return r;
}

#endif  /* __linux__ */

#endif  /* UVPATCH_NETNS_H_ */

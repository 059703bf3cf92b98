/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The figures of a case and the rule it is judged by.
 */

#include "udp_matrix.h"

#ifdef __linux__

/* The case's failures, joined. */
char faults[480];

void fault(const char* fmt, ...) {
  va_list ap;
  size_t used;

  used = strlen(faults);
  if (used + 8 >= sizeof(faults))
    return;
  if (used > 0) {
    strcpy(faults + used, "; ");
    used += 2;
  }
  va_start(ap, fmt);
  vsnprintf(faults + used, sizeof(faults) - used, fmt, ap);
  va_end(ap);
}

/* A bound on wall-clock time: reported, not judged, under valgrind. */
void timing_fault(const char* fmt, ...) {
  char text[256];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  if (harness_timing_reported())
    fprintf(stderr, "# timing: %s (not judged: UVPATCH_TIMING=report)\n",
            text);
  else
    fault("%s", text);
}

const char* err_name(int err) {
  return err == 0 ? "-" : uv_err_name(err);
}

/* The case's JSON line on stdout, and its summary on stderr. */
void print_figures(const cell_t* c) {
  char list[160];
  size_t used;
  int i;

  used = 0;
  list[0] = '\0';
  for (i = 0; i < mc.nlisted && used + 16 < sizeof(list); i++)
    used += (size_t) snprintf(list + used, sizeof(list) - used, "%s%ld",
                              i ? ", " : "", mc.listed[i]);
  printf("{\"matrix\": \"%s\", \"iterations\": %ld, \"reports\": %ld, "
         "\"plain_errors\": %ld, \"datagrams\": %ld, "
         "\"max_per_iteration\": %ld, \"max_reports_per_iteration\": %ld, "
         "\"icmp_ratelimit\": \"%s\", "
         "\"netns\": \"%s\", \"icmp_errors\": %ld, "
         "\"datagrams_sent\": %ld, \"first_plain_error\": ",
         c->name, mc.iterations, mc.reports, mc.plain_errors, mc.datagrams,
         mc.max_per_iter, mc.max_reports_per_iter, ratelimit,
         in_netns ? "private" : "host",
         mc.icmp_errors, mc.datagrams_sent);
  if (mc.plain_errors == 0)
    printf("null");
  else
    printf("\"%s\"", uv_err_name(mc.first_plain_error));
  printf(", \"plain_errors_no_report\": %ld, \"bad_nread\": %ld, "
         "\"idle_iterations\": %ld, \"per_iteration\": [%s], "
         "\"errqueue_reads\": %ld, \"left_reports\": %ld, "
         "\"left_datagrams\": %ld, \"waits\": %ld",
         mc.plain_no_report, mc.bad_nread, mc.idle_iterations, list,
         mc.reads_of_errqueue, mc.left_reports, mc.left_datagrams, mc.waits);
  switch (c->kind) {
    case KIND_SEND_ONLY:
      printf(", \"sends\": %d, \"send_callbacks\": %ld, \"send_ok\": %ld, "
             "\"send_refused\": %ld, \"send_other\": %ld",
             SEND_ONLY_SENDS, mc.sends.cbs, mc.sends.ok, mc.sends.refused,
             mc.sends.other);
      break;
    case KIND_STOP:
      printf(", \"calls_while_stopped\": %ld, \"frees_while_stopped\": %ld, "
             "\"batch_rest\": %ld", mc.calls_while_stopped,
             mc.frees_while_stopped, mc.batch_rest);
      break;
    case KIND_CLOSE:
      printf(", \"first_was_report\": %s, \"chunks_after_close\": %ld, "
             "\"frees_after_close\": %ld, \"others_after_close\": %ld, "
             "\"allocs_after_close\": %ld",
             mc.first_was_report ? "true" : "false", mc.chunks_after_close,
             mc.frees_after_close, mc.others_after_close,
             mc.allocs_after_close);
      break;
    case KIND_FLOOD:
      printf(", \"flood_ms\": %d, \"elicited\": %ld, "
             "\"tail_iterations\": %ld, \"tail_idle_iterations\": %ld",
             FLOOD_MS, mc.flood != NULL ? mc.flood->elicited : 0,
             mc.tail_iterations, mc.tail_idle);
      break;
    case KIND_ENOMEM:
      printf(", \"injected\": %ld, \"enomem_errors\": %ld", mc.injected,
             mc.plain_enomem);
      break;
  }
  printf("}\n");
  fflush(stdout);

  fprintf(stderr,
          "# %s: iterations=%ld (idle %ld) reports=%ld (bad nread %ld) "
          "plain_errors=%ld (first %s, no report %ld) datagrams=%ld of %ld "
          "max/iter=%ld max_reports/iter=%ld per_iter=[%s] icmp=%ld "
          "left=%ld/%ld errqueue_reads=%ld ratelimit=%s netns=%s "
          "waits=%ld\n",
          c->name, mc.iterations, mc.idle_iterations, mc.reports,
          mc.bad_nread, mc.plain_errors, err_name(mc.first_plain_error),
          mc.plain_no_report,
          mc.datagrams, mc.datagrams_sent, mc.max_per_iter,
          mc.max_reports_per_iter, list, mc.icmp_errors, mc.left_reports,
          mc.left_datagrams, mc.reads_of_errqueue, ratelimit,
          in_netns ? "private" : "host", mc.waits);
}

/* The rule, for the cases that receive. */
void judge_common(const cell_t* c, long lost_allowed) {
  long lost;

  if (c->kind != KIND_FLOOD && mc.iterations > SPIN_BOUND)
    fault("spin: %ld loop iterations in %d ms (%ld idle), bound %d",
          mc.iterations, RUN_MS, mc.idle_iterations, SPIN_BOUND);
  if (mc.max_per_iter > BUDGET || mc.max_reports_per_iter > BUDGET)
    fault("%ld datagrams and %ld reports in one iteration, budget %d "
          "each", mc.max_per_iter, mc.max_reports_per_iter, BUDGET);
  if (mc.dups != 0)
    fault("%ld datagrams delivered twice", mc.dups);

  lost = 0;
  if (mc.recverr) {
    /* Reports lost to a stop count with the datagrams of their batch. */
    if (mc.reports > mc.icmp_errors)
      fault("%ld reports for %ld ICMP errors", mc.reports, mc.icmp_errors);
    else
      lost += mc.icmp_errors - mc.reports;
    /* As on upstream, one may come beside its report. */
    if (mc.plain_refused > mc.icmp_errors)
      fault("%ld plain %s for %ld ICMP errors", mc.plain_refused,
            uv_err_name(UV_ECONNREFUSED), mc.icmp_errors);
  } else {
    if (mc.reports != 0)
      fault("%ld reports on a socket without IP_RECVERR", mc.reports);
    if (c->connected && mc.icmp_errors > 0 && mc.plain_refused != 1)
      fault("%ld plain ECONNREFUSED for %ld ICMP error on a connected "
            "socket without IP_RECVERR, expected 1", mc.plain_refused,
            mc.icmp_errors);
    if (!c->connected && mc.plain_refused != 0)
      fault("%ld plain ECONNREFUSED on an unconnected socket without "
            "IP_RECVERR, expected none", mc.plain_refused);
  }
  if (mc.datagrams < mc.datagrams_sent)
    lost += mc.datagrams_sent - mc.datagrams;
  if (lost > lost_allowed) {
    if (mc.recverr && mc.reports < mc.icmp_errors)
      fault("lost reports: %ld of %ld ICMP errors reported (%ld still "
            "queued at the end)", mc.reports, mc.icmp_errors,
            mc.left_reports);
    if (mc.datagrams < mc.datagrams_sent)
      fault("lost datagrams: %ld of %ld delivered (%ld still queued)",
            mc.datagrams, mc.datagrams_sent, mc.left_datagrams);
    if (lost_allowed > 0)
      fault("(%ld of the interrupted recvmmsg batch allowed)",
            lost_allowed);
  }
  if (mc.plain_errors != mc.plain_refused + mc.plain_enomem)
    fault("%ld plain errors, the first %s", mc.plain_errors,
          uv_err_name(mc.first_plain_error));
  if (mc.lent != 0)
    fault("%ld buffers from alloc_cb never given back", mc.lent);
  if (mc.loop_err[0] != '\0')
    fault("%s", mc.loop_err);
}

int finish(const cell_t* c, int loop_close) {
  if (loop_close != 0)
    fault("uv_loop_close: %s", uv_strerror(loop_close));
  free(mc.spare);
  mc.spare = NULL;
  free(mc.seen);
  mc.seen = NULL;
  (void) c;
  if (faults[0] != '\0')
    FAIL("%s", faults);
  return CASE_OK;
}

#endif  /* __linux__ */

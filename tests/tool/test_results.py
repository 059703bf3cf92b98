"""`scripts/uvpatch results`: docs/results.md regenerated from the records
that `test` leaves in out/<base>/results/, on a fixture written here."""

import json
import os
import unittest

from fixture import World, git, write

MATRIX = ("{0}: iterations={1} (idle 2) reports=1 (bad nread 0) "
          "plain_errors={2} (first -, no report 0) datagrams=10 of 10 "
          "max/iter={3} per_iter=[11] icmp=1 left=0/0 errqueue_reads=2")
PATHS = {"paths": "backlog_recverr_flag", "icmp_errors": 20, "reports": 20,
         "plain_errors": 0, "errqueue_reads": 21, "allocs": 40,
         "latency_median_us": 1234.5, "lost": 0, "socket_calls": 96}

CASES = {
    "udp_matrix/bound_flag_v4_msg": {
        "patched": "PASS",
        "patched_notes": [MATRIX.format("bound_flag_v4_msg", 3, 0, 11)],
        "base": "FAIL", "base_why": "duplicates",
        "base_notes": ["an earlier line",
                       MATRIX.format("bound_flag_v4_msg", 4, 1, 10)]},
    "udp_paths/backlog_recverr_flag": {
        "patched": "PASS", "patched_notes": [json.dumps(PATHS)],
        "base": "FAIL", "base_why": "plain errors",
        "base_notes": [json.dumps(dict(PATHS, plain_errors=7,
                                       latency_median_us=9000.0))]},
    "udp_errqueue/one_report_ipv4": {
        "patched": "PASS", "patched_notes": [
            "one_report_ipv4: iterations=2 reports=1 (first nread -111) "
            "plain_errors=0 alloc=2 errqueue_reads=2"],
        "base": "FAIL", "base_why": "killed by signal 11", "base_notes": []},
    "timer_model/tick": {"patched": "SKIP", "patched_notes": [],
                         "base": "SKIP", "base_why": "", "base_notes": []},
    "udp_budget/backlog": {"patched": "FAIL", "patched_notes": [],
                           "base": "PASS", "base_why": "",
                           "base_notes": []},
}


BURST = ("timer_model/io_heavy (model: ...): bursts: blocking polls=2249 "
         "(armed 1066), extra calls per blocking poll=1.42, per armed "
         "poll=2.99, loop iterations=2281, spurious wake-ups=3 (3.0/s)")
WINDOWS = {
    "timer_model/wakeup_burst": {
        "patched": "PASS", "patched_notes": [BURST],
        "base": "PASS", "base_why": "", "base_notes": []},
    "timer_model/early_completion": {
        "patched": "FAIL", "patched_notes": [
            "timer_model/early_completion (model: ...): 19 of 25 "
            "UV_RUN_ONCE runs without the timer, 0 early"],
        "base": "SKIP", "base_why": "needs the patch", "base_notes": []},
}


class ResultsTest(World):
    def setUp(self):
        super().setUp()
        self.make_patch(1, "core-line5", {"src/core.c": "int x;\n"})
        self.deps["series"][0]["proof"] = [
            {"target": "linux", "cases": ["udp_matrix/bound_flag_v4_msg",
                                          "udp_paths/backlog_recverr_flag",
                                          "udp_paths/not_run"]},
            {"target": "windows", "cases": ["timer_model/tick"]}]
        self.save_deps()
        self.add_base("v0.0.2", {"README.md": "two\n"},
                      {"src/timer.c": "int t;\n"})
        write(os.path.join(self.out, self.base, "results",
                           "regress-linux-Release.json"), json.dumps({
                               "base": self.base, "commit": self.commit,
                               "when": "2026-01-02 03:04 UTC",
                               "machine": "Linux 6.0, x86_64, 2 cores",
                               "cases": CASES}))
        write(os.path.join(self.out, self.base, "results",
                           "regress-windows-Release.json"), json.dumps({
                               "base": self.base, "commit": self.commit,
                               "when": "2026-01-02 05:06 UTC",
                               "machine": "Wine", "cases": WINDOWS}))
        git(["init", "-q"], self.root)
        git(["add", "-A"], self.root)
        git(["commit", "-q", "-m", "repo"], self.root)
        self.head = git(["rev-parse", "--short", "HEAD"],
                        self.root).stdout.strip()
        self.dest = os.path.join(self.tmp, "results.md")
        res = self.tool("results", "--write", self.dest)
        self.assertOk(res)
        self.assertEqual(res.stdout.strip(), self.dest)
        with open(self.dest, encoding="utf-8") as f:
            self.lines = f.read().splitlines()

    def row(self, first):
        """The cells of the table row that starts with ``first``."""
        for line in self.lines:
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells[0] == first:
                return cells[1:]
        self.fail("no row %r in:\n%s" % (first, "\n".join(self.lines)))

    def test_first_line_says_it_is_generated(self):
        self.assertIn("`scripts/uvpatch results`", self.lines[0])
        self.assertIn("do not edit it by hand", self.lines[0])

    def test_provenance(self):
        self.assertEqual(self.row(self.base),  # the first table
                         [self.commit[:12], "2026-01-02 03:04 UTC",
                          "Linux 6.0, x86_64, 2 cores", self.head])

    def test_matrix_cell(self):
        # v0.0.1 unpatched, patched; then v0.0.2 (no record).
        self.assertEqual(self.row("bound_flag_v4_msg"),
                         ["not ok 4/1/1/10/10", "ok 3/1/0/10/11", "—", "—"])

    def test_windows_model_cells(self):
        self.assertEqual(self.row("wakeup_burst")[:2],
                         ["ok", "ok 2.99 calls per armed poll, "
                          "3 spurious wake-ups"])
        self.assertEqual(self.row("early_completion"),
                         ["skip", "not ok 19 of 25 UV_RUN_ONCE runs without "
                          "the timer", "—", "—"])
        self.assertTrue(any("v0.0.1 2026-01-02 05:06 UTC" in line
                            for line in self.lines))

    def test_paths_cell(self):
        self.assertEqual(
            self.row("backlog_recverr_flag")[:2],
            ["not ok 20/7/21/40, 9.00 ms, lost 0, 96 socket calls",
             "ok 20/0/21/40, 1.23 ms, lost 0, 96 socket calls"])

    def test_errqueue_cell_without_notes(self):
        self.assertEqual(self.row("one_report_ipv4")[:2],
                         ["not ok", "ok 1/0/2/2"])

    def test_other_programs_verdicts(self):
        self.assertEqual(self.row("timer_model/tick"),
                         ["skip", "skip", "—", "—"])
        self.assertEqual(self.row("udp_budget/backlog")[:2],
                         ["ok", "not ok"])

    def test_summary_counts(self):
        summary = self.lines.index("## Summary")
        rows = [ln for ln in self.lines[summary:] if ln.startswith("| v0")]
        # cases, passed, failed, skipped patched; linux proofs, failing.
        self.assertEqual(rows[0], "| v0.0.1 | 5 | 3 | 1 | 1 | 3 | "
                                  "2 (1 not recorded) |")
        self.assertEqual(rows[1], "| v0.0.2 | — | — | — | — | 0 | — |")

    def test_missing_base_file(self):
        self.assertEqual(self.row("v0.0.2"), ["—"] * 4)

    def test_a_file_there_keeps_figures_of_a_base_without_record(self):
        # A fresh clone's `results`, before any test, wiped every figure.
        with open(self.dest, encoding="utf-8") as f:
            before = f.read()
        res = self.tool("results", "--write", self.dest)
        self.assertFails(res, "no test record of v0.0.2",
                         "would lose its figures", "scripts/uvpatch test")
        self.assertEqual(res.returncode, 6)
        with open(self.dest, encoding="utf-8") as f:
            self.assertEqual(f.read(), before)

    def test_default_destination_and_bad_record(self):
        self.assertOk(self.tool("results"))
        with open(os.path.join(self.root, "docs", "results.md"),
                  encoding="utf-8") as f:
            self.assertEqual(f.read().splitlines(), self.lines)
        write(os.path.join(self.out, "v0.0.2", "results",
                           "regress-linux-Release.json"), "{not json")
        self.assertFails(self.tool("results", "--write", self.dest),
                         "not a results file", "scripts/uvpatch test")


if __name__ == "__main__":
    unittest.main()

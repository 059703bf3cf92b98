"""How the test command picks and judges cases: the thread tests of
libuv's suite, and the verdict of a case run under valgrind."""

import contextlib
import io
import os
import shutil
import tempfile
import unittest
from unittest import mock

import fixture  # noqa: F401  (puts scripts/ on sys.path)
from fixture import write

from uvpatchlib.verify import libuvsuite, regress
from uvpatchlib.verify.runner import Tally, _report_lines


class ThreadTestsTest(unittest.TestCase):
    def setUp(self):
        self.src = tempfile.mkdtemp(prefix="uvpatch-test-")
        self.addCleanup(shutil.rmtree, self.src, True)

    def add(self, name, text):
        write(os.path.join(self.src, "test", name), text)

    def test_files_that_call_thread_apis(self):
        # A TEST_IMPL that does not start a line is not a test.
        self.add("test-async.c", "TEST_IMPL(async) {\n"
                 "  uv_async_send(&a);  /* not TEST_IMPL(fake) */\n}\n"
                 "TEST_IMPL(async_null_cb) {\n  return 0;\n}\n")
        self.add("test-work.c", "static void f(void) { uv_queue_work(); }\n"
                 "TEST_IMPL(threadpool_queue_work_simple) {\n}\n")
        self.add("test-timer.c", "TEST_IMPL(timer) {\n"
                 "  uv_timer_start(&t, cb, 1, 0);\n}\n")
        self.add("test-udp.c", "TEST_IMPL(udp_send) {\n}\n")
        self.assertEqual(libuvsuite.thread_tests(self.src),
                         {"async", "async_null_cb",
                          "threadpool_queue_work_simple"})

    def test_no_test_folder(self):
        self.assertEqual(libuvsuite.thread_tests(self.src), set())


class FakeRunner:
    under_wine = False

    def __init__(self, result, *more):
        self.results = [result] + list(more)
        self.calls = []

    def run(self, exe, args, **kwargs):
        self.calls.append((exe, args, kwargs))
        return self.results[min(len(self.calls), len(self.results)) - 1]


class FakeVariant:
    def program(self, name):
        return "/build/regress/" + name


class MemcheckVerdictTest(unittest.TestCase):
    def verdict(self, code, out, err=""):
        runner = FakeRunner((code, out, err))
        tally = Tally()
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            regress._memcheck_case(runner, "/usr/bin/valgrind", FakeVariant(),
                                   "prog", "case", "linux valgrind prog/case",
                                   tally)
        exe, args, kwargs = runner.calls[0]
        self.assertEqual(exe, "/usr/bin/valgrind")
        self.assertEqual(args[-2:], ["/build/regress/prog", "case"])
        self.assertIn("--leak-check=full", args)
        self.assertEqual(kwargs["env"], {"UVPATCH_TIMING": "report"})
        return tally, printed.getvalue()

    def test_clean(self):
        tally, printed = self.verdict(0, "ok case\n")
        self.assertEqual((tally.passed, tally.failed), (1, 0))
        self.assertIn("no invalid access, no leak", printed)

    def test_valgrind_error(self):
        tally, printed = self.verdict(99, "ok case\n",
                                      "==7== Invalid read of size 4\n")
        self.assertEqual(tally.failed, 1)
        self.assertIn("exit status 99", printed)

    def test_case_failure_is_a_failure(self):
        tally, printed = self.verdict(1, "not ok case: 40 in one iteration\n")
        self.assertEqual(tally.failed, 1)
        self.assertIn("fails under valgrind: 40 in one iteration", printed)

    def test_crash_and_time_out(self):
        for code in (-11, None):
            tally, _ = self.verdict(code, "")
            self.assertEqual(tally.failed, 1)

    def test_missed_timing_bound_is_shown(self):
        tally, printed = self.verdict(
            0, "ok case\n", "# timing: 124 of 162 ticks (not judged)\n")
        self.assertEqual(tally.passed, 1)
        self.assertIn("timing: 124 of 162 ticks", printed)

    def test_skip(self):
        tally, printed = self.verdict(0, "skip case: no namespace\n")
        self.assertEqual(tally.skipped, 1)
        self.assertIn("no namespace", printed)


class ResultLinesTest(unittest.TestCase):
    def test_run_case_takes_the_first_result_line(self):
        for out, want in (("ok case\n", ("PASS", "")),
                          ("skip case: no ipv6\n", ("SKIP", "no ipv6")),
                          ("not ok case: 40 40 20\nok case\n",
                           ("FAIL", "40 40 20"))):
            runner = FakeRunner((0, "# noise\n" + out, ""))
            self.assertEqual(regress.run_case(runner, FakeVariant(), "prog",
                                              "case"), want)

    def test_run_case_without_a_result_line(self):
        runner = FakeRunner((-6, "", "Assertion failed\n"))
        status, why = regress.run_case(runner, FakeVariant(), "prog", "case")
        self.assertEqual(status, "FAIL")
        self.assertIn("killed by signal 6, no result line", why)
        self.assertIn("Assertion failed", why)

    def test_silent_wine_exit_is_run_again_for_its_errors(self):
        runner = FakeRunner((1, "", ""), (0, "skip case: Linux only\n",
                                          "0024:err:sync:timeout\n"))
        runner.under_wine = True
        status, why = regress.run_case(runner, FakeVariant(), "prog", "case")
        self.assertEqual(status, "FAIL")
        self.assertEqual(len(runner.calls), 2)
        self.assertEqual(runner.calls[1][2]["env"],
                         {"WINEDEBUG": "-all,err+all"})
        self.assertIn("exit status 1, no result line", why)
        self.assertIn("run again with WINEDEBUG=-all,err+all: exit status "
                      "0, SKIP: Linux only; 0024:err:sync:timeout", why)

    def test_wine_exit_with_a_word_or_a_time_out_is_not_run_again(self):
        for first in ((5, "", "wine: Unhandled page fault\n"),
                      (None, "", "")):
            runner = FakeRunner(first, (0, "ok case\n", ""))
            runner.under_wine = True
            status, _ = regress.run_case(runner, FakeVariant(), "prog",
                                         "case")
            self.assertEqual((status, len(runner.calls)), ("FAIL", 1))

    def test_report_lines(self):
        tally = Tally()
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            count = _report_lines(
                "ok a\nnot ok b: boom\nskip c: why\nnoise\n", tally, "tool ")
        self.assertEqual(count, 3)
        self.assertEqual((tally.passed, tally.failed, tally.skipped),
                         (1, 1, 1))
        self.assertEqual(tally.failures, ["tool b"])
        self.assertIn("FAIL tool b: boom", printed.getvalue())

    def test_recap_repeats_failures_with_their_figures(self):
        tally = Tally()
        with contextlib.redirect_stdout(io.StringIO()):
            tally.result("PASS", "a")
            tally.info("figures of a")
            tally.result("FAIL", "b", "too many")
            tally.info("figures of b")
            tally.result("SKIP", "c", "why")
            tally.info("figures of c")
        self.assertEqual(tally.recap().splitlines(),
                         ["--- the 1 failure(s) again",
                          "FAIL b: too many", "     figures of b"])
        self.assertEqual(Tally().recap(), "")

    def test_summary_counts_skips_even_when_none(self):
        # The README's test command ends "N passed, N failed, N skipped",
        # a narrow run without skips too.
        tally = Tally()
        with contextlib.redirect_stdout(io.StringIO()):
            tally.result("PASS", "a")
        self.assertEqual(tally.summary(), "1 passed, 0 failed, 0 skipped")


class LibuvRerunTest(unittest.TestCase):
    """How a libuv test that fails patched is judged: rerun, then the
    base."""

    class Variant:
        def __init__(self, name):
            self.name = name
            self.target = "windows"
            self.config = "Release"

    class Runner:
        isolated = True

        def may_run(self, test):
            return None

    def judge(self, patched_runs, base_result):
        """patched_runs: the results of the patched runs in order."""
        patched = self.Variant("patched")
        base = self.Variant("base")
        calls = {"patched": 0, "base": 0}

        def fake_run(runner, variant, test):
            calls[variant.name] += 1
            if variant.name == "base":
                if isinstance(base_result, list):
                    return base_result[calls["base"] - 1], "base why"
                return base_result, "base why"
            return patched_runs[calls["patched"] - 1], "exit status 255"

        tally = Tally()
        saved = libuvsuite.libuv_run, libuvsuite._libuv_tests
        libuvsuite.libuv_run = fake_run
        libuvsuite._libuv_tests = lambda runner, variant: ["udp_x"]
        try:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                libuvsuite._run_libuv(patched, base, self.Runner(), tally,
                                      True)
        finally:
            libuvsuite.libuv_run, libuvsuite._libuv_tests = saved
        return tally, out.getvalue(), calls

    def test_fails_every_run_and_passes_on_the_base(self):
        tally, out, calls = self.judge(["FAIL"] * 6, "PASS")
        self.assertEqual(tally.failed, 1)
        self.assertEqual(calls["patched"], 1 + libuvsuite.LIBUV_RERUNS)
        self.assertEqual(calls["base"], 1 + libuvsuite.LIBUV_RERUNS)
        self.assertIn("failed all 6 runs; passes on the base, 6 runs", out)

    def test_base_fails_a_later_run_too(self):
        tally, out, calls = self.judge(["FAIL"] * 6,
                                       ["PASS", "PASS", "FAIL"])
        self.assertEqual((tally.failed, tally.skipped), (0, 1))
        self.assertEqual(calls["base"], 3)
        self.assertIn("fails on the unpatched base too, at its run 3 of "
                      "up to 6: base why (patched: failed all 6 runs, "
                      "exit status 255)", out)

    def test_passes_on_a_later_rerun_is_flaky(self):
        tally, out, calls = self.judge(["FAIL", "FAIL", "PASS"], "PASS")
        self.assertEqual((tally.failed, tally.skipped), (0, 1))
        self.assertEqual(calls["patched"], 3)
        self.assertIn("flaky: failed 2 of 3 runs (exit status 255)", out)

    def test_fails_on_the_base_too(self):
        tally, out, calls = self.judge(["FAIL"] * 6, "FAIL")
        self.assertEqual((tally.failed, tally.skipped), (0, 1))
        # No reruns: the base already says the failure is not the series'.
        self.assertEqual(calls["patched"], 1)
        self.assertIn("fails on the unpatched base too: base why", out)


class LibuvRecordTest(unittest.TestCase):
    """`test --suite libuv` leaves out the selection that `test` ran on
    the same build, and only that."""

    class Runner:
        isolated = True

        def may_run(self, test):
            return None

    def setUp(self):
        from uvpatchlib.build.cmake import Variant
        self.out = tempfile.mkdtemp(prefix="uvpatch-test-")
        self.addCleanup(shutil.rmtree, self.out, True)
        self.patched = Variant(self.out, self.out, "linux", True, "Release")
        self.base = Variant(self.out, self.out, "linux", False, "Release")
        for v in (self.patched, self.base):
            write(v.runner(), "runner of %s\n" % v.name)
        self.outcome = {}

    def run_suite(self, everything):
        ran = []

        def fake_run(runner, variant, test):
            ran.append(test)
            if variant.patched:
                return self.outcome.get(test, ("PASS", ""))
            return "PASS", ""

        tally = Tally()
        saved = libuvsuite.libuv_run, libuvsuite._libuv_tests
        libuvsuite.libuv_run = fake_run
        libuvsuite._libuv_tests = lambda runner, variant: [
            "udp_a", "timer_b", "tcp_c", "loop_d"]
        try:
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()) as err:
                libuvsuite.run_libuv(self.patched, self.base, self.Runner(),
                                     tally, everything)
        finally:
            libuvsuite.libuv_run, libuvsuite._libuv_tests = saved
        return ran, tally, err.getvalue()

    def test_all_of_the_suite_skips_what_the_selection_ran(self):
        ran, _, _ = self.run_suite(everything=False)
        self.assertEqual(ran, ["udp_a", "timer_b", "loop_d"])
        ran, tally, err = self.run_suite(everything=True)
        self.assertEqual(ran, ["tcp_c"])
        self.assertEqual(tally.passed, 1)
        self.assertIn("3 of libuv's tests (3 passed, 0 skipped) ran in "
                      "`scripts/uvpatch test` on this same build", err)

    def test_a_rebuilt_runner_runs_everything(self):
        self.run_suite(everything=False)
        for variant in (self.patched, self.base):
            self.run_suite(everything=False)
            write(variant.runner(), "rebuilt\n")
            ran, _, err = self.run_suite(everything=True)
            self.assertEqual(ran, ["udp_a", "timer_b", "tcp_c", "loop_d"])
            self.assertNotIn("on this same build", err)

    def test_another_config_has_its_own_record(self):
        from uvpatchlib.build.cmake import Variant
        self.run_suite(everything=False)
        self.patched = Variant(self.out, self.out, "linux", True, "asan")
        write(self.patched.runner(), "asan runner\n")
        ran, _, _ = self.run_suite(everything=True)
        self.assertEqual(len(ran), 4)

    def test_a_failure_runs_again(self):
        self.outcome["timer_b"] = ("FAIL", "exit status 1")
        self.run_suite(everything=False)
        del self.outcome["timer_b"]
        ran, _, _ = self.run_suite(everything=True)
        self.assertEqual(ran, ["timer_b", "tcp_c"])

    def test_a_rerun_of_the_selection_runs_it_all(self):
        self.run_suite(everything=False)
        ran, _, _ = self.run_suite(everything=False)
        self.assertEqual(ran, ["udp_a", "timer_b", "loop_d"])

    def test_all_of_the_suite_is_not_recorded(self):
        self.run_suite(everything=True)
        ran, _, _ = self.run_suite(everything=True)
        self.assertEqual(len(ran), 4)


# A stand-in for wine: it fails as Wine does when it cannot start a
# program, for as many runs as the count in the file beside it, then runs
# the program.
FAKE_WINE = r"""#!/bin/sh
left=$(cat "$0.fails")
if [ "$left" -gt 0 ]; then
  echo $((left - 1)) > "$0.fails"
  echo "0024:err:virtual:virtual_alloc_first_teb wine: failed to map" \
       "the shared user data: c0000018" >&2
  exit 1
fi
exec "$@"
"""


class WineStartTest(unittest.TestCase):
    def setUp(self):
        from uvpatchlib.verify.runner import Runner
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.wine = os.path.join(self.tmp, "wine")
        write(self.wine, FAKE_WINE)
        self.program = os.path.join(self.tmp, "prog")
        write(self.program, '#!/bin/sh\necho "ok $1"\n')
        for path in (self.wine, self.program):
            os.chmod(path, 0o755)
        self.runner = Runner("linux")
        self.runner.wine = self.wine
        self.runner.prefix = []

    def run_case(self, fails, program=None):
        write(self.wine + ".fails", "%d\n" % fails)
        variant = FakeVariant()
        variant.program = lambda name: program or self.program
        with contextlib.redirect_stderr(io.StringIO()) as said:
            result = regress.run_case(self.runner, variant, "prog", "case")
        return result, said.getvalue()

    def test_a_program_wine_did_not_start_runs_again(self):
        result, said = self.run_case(1)
        self.assertEqual(result, ("PASS", ""))
        self.assertIn("Wine did not start %s case or a process it started "
                      "(failed to map the shared user data): running it "
                      "again" % self.program, said)

    def test_wine_gives_up_after_three_starts(self):
        (status, why), said = self.run_case(3)
        self.assertEqual(status, "FAIL")
        self.assertIn("exit status 1, no result line; 0024:err:virtual", why)
        self.assertEqual(said.count("running it again"), 2)
        self.assertIn("gave up", said)

    def test_an_exit_of_the_program_is_not_run_again(self):
        program = os.path.join(self.tmp, "fails")
        write(program, "#!/bin/sh\necho 'not ok case: 40'\nexit 1\n")
        os.chmod(program, 0o755)
        result, said = self.run_case(0, program)
        self.assertEqual(result, ("FAIL", "40"))
        self.assertEqual(said, "")

    def test_wine_shows_its_start_errors(self):
        from uvpatchlib.verify import runner
        with mock.patch.object(runner, "cross_windows", lambda: True), \
                mock.patch.object(runner, "_netns_works", lambda: False), \
                mock.patch.object(runner, "cache_root", lambda: self.tmp), \
                mock.patch.object(runner.shutil, "which",
                                  lambda name: "/usr/bin/" + name):
            env = runner.Runner("windows").env
        self.assertEqual(env["WINEDEBUG"], "-all,err+virtual")

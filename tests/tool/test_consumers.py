"""The consumer tests' judgement, without building or downloading."""

import io
import os
import tarfile
import tempfile
import shutil
import unittest

from fixture import write  # noqa: F401  (puts scripts/ on sys.path)

from uvpatchlib.verify import consumers, nodesuite
from uvpatchlib.verify.runner import Tally

VERSION_H = """#define UV_VERSION_MAJOR 1
#define UV_VERSION_MINOR 50
#define UV_VERSION_PATCH 0
"""


class Quiet(Tally):
    def __init__(self):
        super().__init__()
        self.lines = []

    def result(self, status, name, why=""):
        self.lines.append((status, name, why))

    def info(self, text):
        pass


class ConsumerJudgeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="uvpatch-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.prefix = os.path.join(self.tmp, "prefix")
        write(os.path.join(self.prefix, "include", "uv", "version.h"),
              VERSION_H)
        self.lib = os.path.join(self.prefix, "lib", "libuv.so.1.0.0")
        write(self.lib, "")

    def out(self, version="1.50.0", library=None, budget="32 32 32 4"):
        return "version %s\nlibrary %s\nbudget %s\n" % (
            version, library or self.lib, budget)

    def test_the_prefix_library_passes(self):
        status, why, budget = consumers._judge(self.out(), 0, self.prefix,
                                               True)
        self.assertEqual(status, "PASS", why)
        self.assertEqual(budget, [32, 32, 32, 4])
        self.assertIn("32 32 32 4", why)

    def test_the_system_library_fails(self):
        status, why, _ = consumers._judge(self.out(
            library="/usr/lib/x86_64-linux-gnu/libuv.so.1.0.0"), 0,
            self.prefix, True)
        self.assertEqual(status, "FAIL")
        self.assertIn("not in", why)
        status, why, _ = consumers._judge(self.out(version="1.44.2"), 0,
                                          self.prefix, True)
        self.assertEqual(status, "FAIL")
        self.assertIn("1.44.2", why)

    def test_lost_datagrams_fail(self):
        status, why, _ = consumers._judge(self.out(budget="32 32"), 1,
                                          self.prefix, False)
        self.assertEqual(status, "FAIL")
        self.assertIn("64 of 100", why)

    def test_budget_judgement(self):
        class M:
            series = [{"file": "0002-unix-udp-exact-receive-budget.patch"}]
        tally = Quiet()
        consumers._judge_budget(M, {"patched": [32, 32, 32, 4],
                                    "base": [40, 40, 20]}, tally)
        self.assertEqual(tally.lines[0][0], "PASS")
        tally = Quiet()
        consumers._judge_budget(M, {"patched": [40, 40, 20],
                                    "base": [40, 40, 20]}, tally)
        self.assertEqual(tally.lines[0][0], "FAIL")
        M.series = []
        tally = Quiet()
        consumers._judge_budget(M, {"patched": [40, 40, 20],
                                    "base": [40, 40, 20]}, tally)
        self.assertEqual(tally.lines[0][0], "SKIP")


TEST_CI = """Description: tests
--- a/Makefile
+++ b/Makefile
@@ -1 +1 @@
-a
+b
--- a/test/common/index.js
+++ b/test/common/index.js
@@ -1 +1 @@
-  ms = multipliers.two * ms;
+  ms = multipliers.slow * ms;
"""

DSC = """Format: 3.0 (quilt)
Checksums-Sha256:
 %s 10 x.orig.tar.xz
 %s 20 x.debian.tar.xz
Files:
 00 10 x.orig.tar.xz
"""


class NodeSuiteHelpersTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="uvpatch-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_dsc_checksums(self):
        path = os.path.join(self.tmp, "x.dsc")
        write(path, DSC % ("a" * 64, "b" * 64))
        self.assertEqual(nodesuite._dsc_sha256(path), {
            "x.orig.tar.xz": "a" * 64, "x.debian.tar.xz": "b" * 64})

    def test_timeout_hunk_is_debians_change_to_one_file(self):
        path = os.path.join(self.tmp, "x.debian.tar.xz")
        data = TEST_CI.encode()
        with tarfile.open(path, "w:xz") as tar:
            info = tarfile.TarInfo("debian/patches/build/test_ci.patch")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        hunk = nodesuite._timeout_hunk(path,
                                       "debian/patches/build/test_ci.patch",
                                       "test/common/index.js")
        self.assertTrue(hunk.startswith("--- a/test/common/index.js\n"))
        self.assertIn("multipliers.slow", hunk)
        self.assertNotIn("Makefile", hunk)

    def test_selection_and_flags(self):
        src = self.tmp
        for name in ("parallel/test-dgram-bind.js",
                     "parallel/test-timers-this.js",
                     "parallel/test-next-tick-ordering.js",
                     "parallel/test-net-connect.js",
                     "parallel/test-dgram-fixture.txt",
                     "sequential/test-dgram-pingpong.js"):
            write(os.path.join(src, "test", name),
                  "'use strict';\n// Flags: --expose-internals --no-warnings"
                  "\n")
        spec = {"tests": {"folders": ["test/parallel", "test/sequential"],
                          "words": ["dgram", "timers", "next-tick"]}}
        self.assertEqual(nodesuite.select_tests(src, spec), [
            "parallel/test-dgram-bind.js",
            "parallel/test-next-tick-ordering.js",
            "parallel/test-timers-this.js",
            "sequential/test-dgram-pingpong.js"])
        self.assertEqual(nodesuite._flags(os.path.join(
            src, "test", "parallel", "test-dgram-bind.js")),
            ["--expose-internals", "--no-warnings"])

    def test_failure_reason(self):
        err = ("node:assert:125\n  throw new AssertionError(obj);\n\n"
               "AssertionError [ERR_ASSERTION]: Expected values to be "
               "strictly equal:\n\n'2' !== '22'\n    at Socket\n")
        self.assertEqual(nodesuite._reason(err),
                         "AssertionError [ERR_ASSERTION]: Expected values "
                         "to be strictly equal: '2' !== '22'")
        self.assertEqual(nodesuite._reason(""), "no output")

    def test_the_pinned_spec(self):
        spec = nodesuite.load_spec(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))))
        names = [d["package"] for d in spec["debs"]]
        self.assertEqual(names[:2], ["nodejs", "libnode108"])
        for d in spec["debs"]:
            self.assertEqual(len(d["sha256"]), 64)
            self.assertTrue(d["file"].startswith(d["package"] + "_"
                                                 + d["version"] + "_"))


if __name__ == "__main__":
    unittest.main()

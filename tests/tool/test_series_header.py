"""The build tells each regression program which patches the libuv it
links carries (uvpatch_series.h, from tests/uv-programs.cmake): a case
names the patch it needs and skips, saying why, where the series lacks
it; also when built against an installed libuv, given the series name.
And check catches a case that names a patch no series has."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from fixture import REPO, UPSTREAM_FILES, write
from test_build import HAVE_TOOLS, BuildWorld

from uvpatchlib.series.cases import needed_patch_problems, patch_id

NEEDS = r"""#include "uv.h"
#include "harness.h"

static int needs(void) {
#if !defined(UVPATCH_IN_SERIES_CORE_SET_LINE5)
  SKIP_WITHOUT_PATCH("core-set-line5");
#else
  return CASE_OK;
#endif
}

static int elsewhere(void) {
#if !defined(UVPATCH_IN_SERIES_WIN_SOMETHING_ELSE)
  SKIP_WITHOUT_PATCH("win-something-else");
#else
  return CASE_OK;
#endif
}

static int in_tree(void) {
#ifdef UVPATCH_IN_TREE_CORE_SET_LINE5
  return CASE_OK;
#else
  FAIL("not in this tree (%s)", UVPATCH_SERIES);
#endif
}

static const test_case cases[] = {
  { "needs", needs }, { "elsewhere", elsewhere }, { "in_tree", in_tree },
  { NULL, NULL }
};

int main(int argc, char** argv) { return harness_main(cases, argc, argv); }
"""


@unittest.skipUnless(HAVE_TOOLS, "needs cmake, ninja and cc")
class SeriesHeaderTest(BuildWorld):
    def setUp(self):
        super().setUp()
        core = UPSTREAM_FILES["src/core.c"].replace("int line5 = 5;",
                                                    "int line5 = 50;")
        self.make_patch(1, "core-set-line5", {"src/core.c": core},
                        subject="core: set line5")
        write(os.path.join(self.root, "tests", "regress", "needs.c"), NEEDS)

    def run_case(self, folder, case):
        exe = os.path.join(folder, "needs")
        return subprocess.run([exe, case], stdout=subprocess.PIPE,
                              text=True).stdout.strip()

    def test_patched_and_base_builds(self):
        self.assertOk(self.tool("build", "--target", "linux"))
        self.assertOk(self.tool("build", "--target", "linux",
                                "--unpatched"))
        build = os.path.join(self.work, "build")
        patched = os.path.join(build, "linux-patched-Release", "regress")
        base = os.path.join(build, "linux-base-Release", "regress")
        # The series has the patch: both builds run the case (the base's
        # run is where a proof fails).
        self.assertEqual(self.run_case(patched, "needs"), "ok needs")
        self.assertEqual(self.run_case(base, "needs"), "ok needs")
        for folder in (patched, base):
            self.assertEqual(self.run_case(folder, "elsewhere"),
                             "skip elsewhere: needs the patch "
                             "win-something-else, which is not in series "
                             "v0.0.1")
        # Only the patched tree carries it.
        self.assertEqual(self.run_case(patched, "in_tree"), "ok in_tree")
        self.assertEqual(self.run_case(base, "in_tree"),
                         "not ok in_tree: not in this tree (v0.0.1)")

    def configure(self, *extra):
        """tests/regress alone, against the patched build's libuv, as
        against an installed one."""
        self.assertOk(self.tool("build", "--target", "linux"))
        lib = os.path.join(self.work, "build", "linux-patched-Release",
                           "libuv", "libuv.a")
        build = os.path.join(self.tmp, "alone")
        shutil.rmtree(build, True)
        subprocess.run(["cmake", "-S", os.path.join(self.root, "tests",
                                                    "regress"),
                        "-B", build, "-G", "Ninja",
                        "-DUV_SOURCE_DIR=" + os.path.join(self.work, "src"),
                        "-DUV_LIBRARY=" + lib] + list(extra), check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["ninja", "-C", build], check=True,
                       stdout=subprocess.DEVNULL)
        return build

    def test_installed_libuv_given_the_series(self):
        build = self.configure("-DUVPATCH_SERIES=v0.0.1")
        self.assertEqual(self.run_case(build, "needs"), "ok needs")
        # Given the series alone, the library carries all of it.
        self.assertEqual(self.run_case(build, "in_tree"), "ok in_tree")

    def test_installed_libuv_without_the_series(self):
        build = self.configure()
        self.assertIn("skip needs: needs the patch core-set-line5, which "
                      "is not in the series of this build, which it was "
                      "not given (-DUVPATCH_SERIES=NAME)",
                      self.run_case(build, "needs"))


class NeededPatchNamesTest(unittest.TestCase):
    def test_ids(self):
        self.assertEqual(
            patch_id("0006-unix-udp-accept-UV_UDP_LINUX_RECVERR-in-open_ex"
                     ".patch"),
            "UNIX_UDP_ACCEPT_UV_UDP_LINUX_RECVERR_IN_OPEN_EX")
        self.assertEqual(patch_id("win-use-a.b"), "WIN_USE_A_B")

    def test_this_repository(self):
        with open(os.path.join(REPO, "deps.json"), encoding="utf-8") as f:
            bases = json.load(f)["bases"]
        self.assertEqual(needed_patch_problems(REPO, bases), [])

    def test_a_renamed_patch_is_caught(self):
        root = os.path.join(REPO, "tests", "tool")  # no tests/regress
        self.assertEqual(needed_patch_problems(root, []), [])
        tmp = tempfile.mkdtemp(prefix="uvpatch-needs-")
        self.addCleanup(shutil.rmtree, tmp, True)
        write(os.path.join(tmp, "tests", "regress", "x.c"), NEEDS)
        bases = [{"series": [{"file": "0001-core-set-line-5.patch"},
                             {"file": "0002-win-something-else.patch"}]}]
        problems = needed_patch_problems(tmp, bases)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("tests/regress/x.c:5, tests/regress/x.c:6, "
                      "tests/regress/x.c:21 names patch CORE_SET_LINE5, "
                      "which no series has (did you mean CORE_SET_LINE_5?)",
                      problems[0])


class NoVersionSkipsTest(unittest.TestCase):
    def test_no_case_skips_by_version(self):
        # A version says nothing of the patches a build carries.
        found = []
        for folder, dirs, files in os.walk(os.path.join(REPO, "tests")):
            for name in files:
                if name.endswith((".c", ".h")):
                    with open(os.path.join(folder, name),
                              encoding="utf-8") as f:
                        if "UV_VERSION_HEX" in f.read():
                            found.append(name)
        self.assertEqual(found, [])

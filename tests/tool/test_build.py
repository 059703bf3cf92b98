import json
import os
import shutil
import subprocess
import sys
import time
import unittest

from fixture import World, git, write, REPO, TOOL

# Its install rules are upstream's, in small: shared and static library,
# headers, a .pc file naming the prefix, and a CMake package.
FAKE_CMAKE = """cmake_minimum_required(VERSION 3.13)
project(fakeuv C)
include(GNUInstallDirs)
add_library(uv SHARED src/core.c src/timer.c)
set_target_properties(uv PROPERTIES VERSION 1.0.0 SOVERSION 1)
add_library(uv_a STATIC src/core.c src/timer.c)
set_target_properties(uv_a PROPERTIES OUTPUT_NAME uv)
add_executable(uv_run_tests_a run.c)
target_link_libraries(uv_run_tests_a uv_a)
file(WRITE ${PROJECT_BINARY_DIR}/libuv.pc
     "libdir=${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}\n")
install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/libuv.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(TARGETS uv uv_a EXPORT libuvConfig
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT libuvConfig DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/libuv
        NAMESPACE libuv::)
"""
PROGRAM = """#include "uv.h"
#include "harness.h"
static int case_fake(void) { CHECK(UV_FAKE == 1); return CASE_OK; }
static const test_case cases[] = { {"fake", case_fake}, {NULL, NULL} };
int main(int argc, char** argv) { return harness_main(cases, argc, argv); }
"""


HAVE_TOOLS = shutil.which("cmake") and shutil.which("ninja") and \
    shutil.which("cc")


class BuildWorld(World):
    """A fake upstream that CMake builds and installs, and tests/regress."""

    def setUp(self):
        super().setUp()
        # A fake upstream that CMake can build, and tests/regress.
        write(os.path.join(self.upstream, "CMakeLists.txt"), FAKE_CMAKE)
        write(os.path.join(self.upstream, "run.c"),
              "int main(void) { return 0; }\n")
        git(["add", "-A"], self.upstream)
        git(["commit", "-q", "-m", "buildable"], self.upstream)
        self.deps["upstream"]["commit"] = git(
            ["rev-parse", "HEAD"], self.upstream).stdout.strip()
        self.deps["upstream"]["tree"] = git(
            ["rev-parse", "HEAD^{tree}"], self.upstream).stdout.strip()
        self.save_deps()
        regress = os.path.join(self.root, "tests", "regress")
        os.makedirs(regress)
        for name in ("CMakeLists.txt", "harness.h"):
            shutil.copy(os.path.join(REPO, "tests", "regress", name), regress)
        shutil.copy(os.path.join(REPO, "tests", "uv-programs.cmake"),
                    os.path.dirname(regress))
        write(os.path.join(regress, "fake.c"), PROGRAM)


@unittest.skipUnless(HAVE_TOOLS, "needs cmake, ninja and cc")
class BuildTest(BuildWorld):
    def test_build_then_noop(self):
        res = self.tool("build", "--target", "linux")
        self.assertOk(res)
        self.assertIn("linux-patched-Release: built", res.stderr)
        exe = os.path.join(self.work, "build", "linux-patched-Release",
                           "regress", "fake")
        self.assertTrue(os.access(exe, os.X_OK))
        start = time.monotonic()
        res = self.tool("build", "--target", "linux")
        self.assertOk(res)
        self.assertIn("linux-patched-Release: up to date", res.stderr)
        self.assertNotIn("=== apply", res.stderr)
        self.assertLess(time.monotonic() - start, 10)

    def test_unpatched_and_prefix(self):
        prefix = os.path.join(self.tmp, "prefix")
        res = self.tool("build", "--unpatched", "--prefix", prefix)
        self.assertOk(res)
        # What CMake's install rules put there, and the provenance.
        for path in ("lib/libuv.a", "lib/libuv.so.1", "include/uv.h",
                     "lib/pkgconfig/libuv.pc",
                     "lib/cmake/libuv/libuvConfig.cmake",
                     "share/uvpatch/UVPATCH.json"):
            self.assertTrue(os.path.lexists(os.path.join(prefix, path)),
                            path)
        # The .pc file names the prefix it was installed to.
        with open(os.path.join(prefix, "lib", "pkgconfig", "libuv.pc")) as f:
            self.assertEqual(f.read(), "libdir=%s/lib\n"
                             % os.path.realpath(prefix))
        with open(os.path.join(prefix, "share", "uvpatch",
                               "UVPATCH.json")) as f:
            prov = json.load(f)
        self.assertFalse(prov["patched"])
        self.assertEqual(prov["installed_from"]["tree"],
                         self.deps["upstream"]["tree"])
        self.assertIn("lib/libuv.a", prov["files"])
        self.assertNotIn("share/uvpatch/UVPATCH.json", prov["files"])
        self.assertTrue(os.path.isdir(os.path.join(
            self.work, "build", "linux-base-Release")))

    def test_index_lock_left_by_a_killed_run_is_cleared(self):
        # kill -9 while out/<base>/base was exported leaves git's lock.
        self.assertOk(self.tool("apply"))
        lock = os.path.join(self.work, "base.index.lock")
        write(lock, "")
        res = self.tool("build", "--unpatched", "--target", "linux")
        self.assertOk(res)
        self.assertFalse(os.path.lexists(lock))

    def test_prefix_rerun_and_refusals(self):
        prefix = os.path.join(self.tmp, "prefix")
        self.assertOk(self.tool("build", "--prefix", prefix))
        # Over an earlier install: safe, and a stray file of the earlier
        # one's list does not stay behind.
        self.assertOk(self.tool("build", "--prefix", prefix))
        self.assertOk(self.tool("build", "--unpatched", "--prefix", prefix))
        # An installed file edited since: refused, named.
        with open(os.path.join(prefix, "include", "uv.h"), "a") as f:
            f.write("/* mine */\n")
        res = self.tool("build", "--prefix", prefix)
        self.assertFails(res, "changed include/uv.h")
        self.assertEqual(res.returncode, 6)
        self.assertNotIn("=== build", res.stderr)
        # A folder holding something else: refused, untouched.
        other = os.path.join(self.tmp, "other")
        write(os.path.join(other, "keep.txt"), "mine\n")
        res = self.tool("build", "--prefix", other)
        self.assertFails(res, "holds no earlier install")
        self.assertEqual(os.listdir(other), ["keep.txt"])
        # The repository itself: refused.
        self.assertFails(self.tool("build", "--prefix", self.root),
                         "is this repository")

    def test_two_builds_at_once_are_refused(self):
        from uvpatchlib.fsutil import Lock
        os.makedirs(self.work)
        with Lock(self.work, "test"):
            res = self.tool("build")
        self.assertFails(res, "another uvpatch command is using")

    def test_two_build_commands_race(self):
        # Two real builds started together: the second to take out/ is
        # refused with the lock message (or they do not overlap at all);
        # either way out/ is left whole and the next build is a no-op.
        full = dict(os.environ, XDG_CACHE_HOME=self.cache)
        full.pop("UVPATCH_SOURCE", None)
        argv = [sys.executable, TOOL, "--repo", self.root, "--out",
                self.out, "build", "--target", "linux"]
        procs = [subprocess.Popen(argv, env=full, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        results = [(p.wait(timeout=300), p.communicate()[1]) for p in procs]
        codes = sorted(code for code, _ in results)
        self.assertIn(codes, ([0, 0], [0, 6]), results)
        for code, err in results:
            self.assertNotIn("Traceback", err)
            if code == 6:
                self.assertIn("another uvpatch command is using", err)
                self.assertIn("hint: ", err)
        res = self.tool("build", "--target", "linux")
        self.assertOk(res)
        self.assertIn("linux-patched-Release: up to date", res.stderr)
        exe = os.path.join(self.work, "build", "linux-patched-Release",
                           "regress", "fake")
        self.assertEqual(subprocess.run(
            [exe, "fake"], stdout=subprocess.DEVNULL).returncode, 0)

    def test_a_folder_is_one_program(self):
        # Its files link into one executable, named after the folder; a
        # case in one file fails with its reason, which the table's file
        # prints (harness.h's HARNESS_SHARED).
        pair = os.path.join(self.root, "tests", "regress", "pair")
        write(os.path.join(pair, "pair.h"),
              '#define HARNESS_SHARED\n#include "harness.h"\n'
              "int case_one(void);\n")
        write(os.path.join(pair, "one.c"),
              '#include "pair.h"\n'
              'int case_one(void) { FAIL("said in %s", "one.c"); }\n')
        write(os.path.join(pair, "main.c"),
              '#define HARNESS_MAIN\n#include "pair.h"\n'
              'static const test_case cases[] = { {"one", case_one}, '
              "{NULL, NULL} };\n"
              "int main(int argc, char** argv) "
              "{ return harness_main(cases, argc, argv); }\n")
        self.assertOk(self.tool("build", "--target", "linux"))
        from uvpatchlib.verify.regress import regress_programs
        self.assertEqual(regress_programs(self.root), ["fake", "pair"])
        exe = os.path.join(self.work, "build", "linux-patched-Release",
                           "regress", "pair")
        res = subprocess.run([exe, "one"], stdout=subprocess.PIPE,
                             text=True)
        self.assertEqual(res.returncode, 1)
        self.assertEqual(res.stdout, "not ok one: said in one.c\n")

    def test_compile_error_is_reported(self):
        write(os.path.join(self.root, "tests", "regress", "broken.c"),
              "int main(void) { return undefined_symbol; }\n")
        res = self.tool("build")
        self.assertFails(res, "ninja failed with exit status",
                         "undefined_symbol")

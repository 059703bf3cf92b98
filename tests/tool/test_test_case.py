"""`test --case PROGRAM[/CASE]`: one program or case, patched and on the
base, on every target (Windows under a Wine, faked here), each result
with the command it ran; the tool's own tests and the other suites do
not run. The builds are faked: shell scripts that answer as the
harness does."""

import contextlib
import io
import os
import stat
from unittest import mock

from fixture import World, write

from uvpatchlib.build.cmake import Variant
from uvpatchlib.errors import UvPatchError
from uvpatchlib.series.manifest import load
from uvpatchlib.verify import testing

PROGRAM = """#!/bin/sh
case "$1" in
  --list) echo fails_before; echo always_ok ;;
  fails_before) %s ;;
  always_ok) echo "ok always_ok" ;;
  *) echo "unknown case $1" >&2; exit 2 ;;
esac
"""
PATCHED = 'echo "ok fails_before"'
BASE = 'echo "not ok fails_before: broken on the base"'


def executable(path, text):
    write(path, text)
    os.chmod(path, stat.S_IRWXU)


class TestCaseOptionTest(World):
    def setUp(self):
        super().setUp()
        self.make_patch(1, "core-fix", {"src/core.c": "int fixed;\n"})
        self.deps["series"][0]["proof"] = [
            {"target": "linux", "cases": ["demo/fails_before"]},
            {"target": "windows", "cases": ["demo/fails_before"]}]
        self.save_deps()
        self.add_program("demo", ["fails_before", "always_ok"])
        self.bin = os.path.join(self.tmp, "bin")
        # A Wine that runs the program as it is, and a mingw-w64 compiler
        # that is only there.
        executable(os.path.join(self.bin, "wine"), '#!/bin/sh\nexec "$@"\n')
        executable(os.path.join(self.bin, "wineserver"), "#!/bin/sh\n")
        executable(os.path.join(self.bin, "x86_64-w64-mingw32-gcc"),
                   "#!/bin/sh\n")
        self.built = []

    def fake_build(self, manifest, out, target, patched, config, source):
        variant = Variant(manifest.root, out, target, patched, config)
        executable(variant.program("demo"),
                   PROGRAM % (PATCHED if patched else BASE))
        self.built.append(variant.name)
        return variant

    def run_test(self, only, target=None):
        env = {"PATH": self.bin + os.pathsep + os.environ["PATH"],
               "WINEPREFIX": os.path.join(self.tmp, "wineprefix")}
        manifest = load(self.root)
        with mock.patch.dict(os.environ, env), \
                mock.patch.object(testing, "build_variant",
                                  self.fake_build), \
                mock.patch.object(testing, "run_tool_tests",
                                  side_effect=AssertionError("tool tests")), \
                mock.patch.object(testing, "check",
                                  side_effect=AssertionError("check")), \
                contextlib.redirect_stdout(io.StringIO()) as out:
            try:
                testing.test([manifest], self.out, target=target, only=only)
            except UvPatchError as e:
                return out.getvalue(), e
        return out.getvalue(), None

    def test_one_case_every_target(self):
        out, error = self.run_test("demo/fails_before")
        self.assertIsNone(error, out)
        self.assertEqual(sorted(self.built), [
            "linux-base-Release", "linux-patched-Release",
            "windows-base-Release", "windows-patched-Release"])
        for target, exe in (("linux", "demo"), ("windows", "demo.exe")):
            self.assertIn("PASS v0.0.1 %s regress demo/fails_before\n"
                          % target, out)
            self.assertIn("PASS v0.0.1 %s proof demo/fails_before "
                          "(0001-core-fix.patch): fails on the unpatched "
                          "base: broken on the base" % target, out)
            for label in ("patched", "base"):
                path = os.path.join(self.work, "build", "%s-%s-Release"
                                    % (target, label), "regress", exe)
                self.assertIn("%s fails_before" % path, out)
        # The Windows command names Wine and what it is given.
        windows = [ln for ln in out.splitlines() if "demo.exe" in ln]
        self.assertTrue(windows)
        for line in windows:
            self.assertIn("WINEDEBUG=-all", line)
            self.assertIn(os.path.join(self.bin, "wine") + " ", line)
        self.assertNotIn("always_ok", out)
        self.assertIn("4 passed, 0 failed", out)

    def test_a_whole_program(self):
        out, error = self.run_test("demo", target="linux")
        self.assertIsNone(error, out)
        self.assertIn("PASS v0.0.1 linux regress demo/always_ok", out)
        self.assertIn("base: pass demo/always_ok", out)
        self.assertNotIn("windows", out)

    def test_a_proof_the_base_passes_fails(self):
        global BASE
        old = BASE
        BASE = 'echo "ok fails_before"'
        try:
            out, error = self.run_test("demo/fails_before", target="linux")
        finally:
            BASE = old
        self.assertIsNotNone(error)
        self.assertIn("FAIL v0.0.1 linux proof demo/fails_before", out)

    def test_a_target_the_proof_leaves_out_is_named(self):
        # Proved on Linux only, the case fails on the Windows base and
        # passes patched there too: the output says to list windows.
        self.deps["series"][0]["proof"] = [
            {"target": "linux", "cases": ["demo/fails_before"]}]
        self.save_deps()
        out, error = self.run_test("demo/fails_before")
        self.assertIsNone(error, out)
        self.assertIn("demo/fails_before shows the defect on windows too: "
                      "list windows in the proof of 0001-core-fix.patch",
                      out)
        self.assertNotIn("on linux too", out)

    def test_unknown_names_refused_before_building(self):
        for only, said in (("dmeo", "no program dmeo (did you mean demo?)"),
                           ("demo/fails_befor", "demo has no case "
                            "fails_befor (did you mean fails_before?)")):
            out, error = self.run_test(only)
            self.assertIsNotNone(error, only)
            self.assertIn(said, error.message)
            self.assertEqual(self.built, [])

    def test_through_the_command_line(self):
        res = self.tool("test", "--case", "demo/nope")
        self.assertFails(res, "--case demo/nope: demo has no case nope")
        self.assertEqual(res.returncode, 2)
        res = self.tool("test", "--case", "demo", "--suite", "libuv")
        self.assertFails(res, "--case runs regression cases only")

"""Clear errors for odd places: an empty --prefix, a prefix inside the
checkout's own folders or with characters CMake cannot carry, and a
cache folder from a relative XDG_CACHE_HOME or an empty HOME."""

import os
import shutil
import subprocess
import sys
import types

from fixture import REPO, World, write

from uvpatchlib.build import install
from uvpatchlib.errors import UvPatchError


class PrefixPlaceTest(World):
    def setUp(self):
        super().setUp()
        # The checkout as a clone has it: its own folders, out/ ignored.
        write(os.path.join(self.root, ".gitignore"), "out/\n__pycache__/\n")
        for folder in ("scripts", "tests", ".git"):
            os.makedirs(os.path.join(self.root, folder))

    def refused(self, prefix, *fragments):
        res = self.tool("build", "--prefix", prefix)
        self.assertFails(res, *fragments)
        self.assertEqual(res.returncode, 2, res.stderr)
        self.assertNotIn("=== fetch", res.stderr)
        return res

    def test_empty_prefix_refused(self):
        self.refused("", "--prefix is empty")

    def test_prefix_in_the_checkouts_own_folders_refused(self):
        for folder in ("scripts", "tests", ".git", "patches"):
            prefix = os.path.join(self.root, folder, "libuv")
            self.refused(prefix, "inside this repository's %s/" % folder,
                         "out/")
            self.assertFalse(os.path.exists(prefix))
        self.refused(os.path.join(self.root, "new", "libuv"),
                     "inside this repository's new/")

    def test_prefix_in_an_ignored_folder_accepted(self):
        manifest = types.SimpleNamespace(root=self.root)
        prefix = os.path.join(self.root, "out", "libuv")
        self.assertIsNone(install.check_prefix(prefix, manifest))
        with self.assertRaises(UvPatchError):
            install.check_prefix(os.path.join(self.root, "tests", "x"),
                                 manifest)

    def test_prefix_with_a_line_break_or_semicolon_refused(self):
        for name, what in (("a\nb", "a line break"), ("a;b", "';'")):
            prefix = os.path.join(self.tmp, name)
            res = self.refused(prefix, "contains %s" % what,
                               "CMake cannot take")
            self.assertNotIn("install rules", res.stderr)
            self.assertNotIn("in a patch", res.stderr)
            self.assertFalse(os.path.exists(prefix))


class LineBreakPlaceTest(World):
    def test_line_break_in_the_work_folder_or_checkout_refused(self):
        self.out = os.path.join(self.tmp, "out\ndir")
        for command in (["build"], ["test", "--base", self.base]):
            res = self.tool(*command)
            self.assertFails(res, "the work folder", "line break",
                             "pass --out DIR")
            self.assertEqual(res.returncode, 2)
            self.assertNotIn("===", res.stderr)
        self.out = os.path.join(self.tmp, "out")
        root = os.path.join(self.tmp, "new\nuser")
        shutil.copytree(self.root, root)
        self.root = root
        res = self.tool("build")
        self.assertFails(res, "the checkout", "line break",
                         "clone the repository")
        self.assertNotIn("===", res.stderr)
        self.assertFalse(os.path.exists(self.out))


class CachePlaceTest(World):
    def test_relative_xdg_cache_home_is_ignored(self):
        home = os.path.join(self.tmp, "home")
        os.makedirs(home)
        res = self.tool("fetch", env={"XDG_CACHE_HOME": "rel/cache",
                                      "HOME": home})
        self.assertOk(res)
        self.assertTrue(res.stdout.strip().startswith(
            os.path.join(home, ".cache", "uvpatch") + os.sep), res.stdout)

    def test_empty_home_refused(self):
        for xdg in ("", "rel"):
            res = self.tool("fetch", env={"XDG_CACHE_HOME": xdg,
                                          "HOME": ""})
            self.assertFails(res, "no folder for the cache", "HOME is empty",
                             "XDG_CACHE_HOME")
            self.assertEqual(res.returncode, 2)
            self.assertNotIn("read-tree", res.stderr)


class SpacedCheckoutTest(World):
    """The README's test from a clone in "new user/uvpatch": the tests
    that drive the tool through sh, and a build with ccache on, run from
    a copy of this checkout there, their own folders there too."""

    SHELL_TESTS = [
        "test_gitenv.GitEnvironTest.test_apply_from_a_pre_commit_hook",
        "test_faults.ReadOnlyTest", "test_faults.FullDiskTest",
        "test_install.InstallFaultTest.test_full_disk",
        "test_install.InstallFaultTest."
        "test_read_only_and_mount_point_refused_before_any_build",
        "test_build.BuildTest.test_unpatched_and_prefix"]

    def test_tool_and_its_tests_run_from_a_folder_with_a_space(self):
        checkout = os.path.join(self.tmp, "new user", "uvpatch")
        for folder in ("scripts", "tests"):
            shutil.copytree(os.path.join(REPO, folder),
                            os.path.join(checkout, folder),
                            ignore=shutil.ignore_patterns("__pycache__"))
        tmp = os.path.join(self.tmp, "new user", "tmp dir")
        os.makedirs(tmp)
        env = dict(os.environ, TMPDIR=tmp, PYTHONPATH=os.path.join(
            checkout, "scripts"), CCACHE_DIR=os.path.join(tmp, "ccache"))
        env.pop("UVPATCH_CCACHE", None)
        res = subprocess.run(
            [sys.executable, "-m", "unittest"] + self.SHELL_TESTS,
            cwd=os.path.join(checkout, "tests", "tool"), env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            timeout=600)
        self.assertEqual(res.returncode, 0, res.stderr[-3000:])
        self.assertNotIn("can't open file", res.stderr)

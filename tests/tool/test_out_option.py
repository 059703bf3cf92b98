"""--out and -v work before the command and after it."""

import os
import subprocess
import sys

from fixture import TOOL, World

from uvpatchlib.cli import parser


class OutOptionTest(World):
    def test_parsed_either_side(self):
        for argv in (["--out", "/x", "fetch"], ["fetch", "--out", "/x"],
                     ["build", "--target", "linux", "--out", "/x"]):
            self.assertEqual(parser().parse_args(argv).out, "/x", argv)
        self.assertIsNone(parser().parse_args(["fetch"]).out)
        # After the command wins, as the later one.
        self.assertEqual(parser().parse_args(
            ["--out", "/a", "fetch", "--out", "/b"]).out, "/b")

    def test_verbose_either_side(self):
        for argv in (["-v", "test"], ["test", "-v"],
                     ["test", "--case", "a/b", "--verbose"]):
            self.assertTrue(parser().parse_args(argv).verbose, argv)
        self.assertFalse(parser().parse_args(["test"]).verbose)

    def test_apply_with_out_after_the_command(self):
        env = dict(os.environ, XDG_CACHE_HOME=self.cache,
                   GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
        env.pop("UVPATCH_SOURCE", None)
        res = subprocess.run(
            [sys.executable, TOOL, "--repo", self.root, "apply", "--out",
             self.out], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.assertOk(res)
        self.assertTrue(os.path.isdir(os.path.join(self.work, "src")))

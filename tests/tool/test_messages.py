"""Each bad input named for what it is: a CRLF, binary-only or
outside-the-tree patch is not "no diff in the patch", and a FIFO is not
a missing file."""

import os
import subprocess
import sys
import time
import unittest

from fixture import World, TOOL, git, sha256


class PatchMessageTest(World):
    def setUp(self):
        super().setUp()
        self.make_three_patches()
        self.path = os.path.join(self.patches, "0002-core-line30.patch")
        with open(self.path, "rb") as f:
            self.original = f.read()

    def put(self, raw):
        """Patch 0002 becomes ``raw``, with its sha256 in deps.json."""
        with open(self.path, "wb") as f:
            f.write(raw)
        self.deps["series"][1]["sha256"] = sha256(self.path)
        self.save_deps()

    def test_crlf_patch(self):
        self.put(self.original.replace(b"\n", b"\r\n"))
        res = self.tool("apply")
        self.assertFails(res, "0002-core-line30.patch: its lines end in "
                         "CRLF", "convert the file back to LF")
        self.assertNotIn("no diff", res.stderr)
        self.assertEqual(res.returncode, 5)

    def test_binary_only_patch(self):
        work = os.path.join(self.tmp, "binwork")
        git(["clone", "-q", self.upstream, work], self.tmp)
        with open(os.path.join(work, "logo.bin"), "wb") as f:
            f.write(bytes(range(256)) * 4)
        git(["add", "-A"], work)
        git(["commit", "-q", "-m", "core: add a logo"], work)
        self.put(subprocess.run(
            ["git", "format-patch", "-1", "--stdout", "--binary",
             "--full-index"], cwd=work, stdout=subprocess.PIPE,
            check=True).stdout)
        res = self.tool("apply")
        self.assertFails(res, "it holds only a binary diff",
                         "leave binary files out")
        self.assertNotIn("no diff", res.stderr)

    def test_paths_outside_the_tree(self):
        text = self.original.decode()
        for old, new, phrase in (
                ("a/src/core.c", "/tmp/core.c", "an absolute path"),
                ("b/src/core.c", "b/../core.c", "leaves the tree"),
                ("a/src/core.c", "src/core.c", "no a/ prefix")):
            self.put(text.replace(old, new).encode())
            res = self.tool("apply")
            self.assertFails(res, "its diff names", phrase,
                             "relative to the libuv tree")
            self.assertNotIn("no diff", res.stderr)

    def test_no_diff_at_all(self):
        text = self.original.decode()
        self.put(text[:text.index("---\n")].encode() + b"---\n")
        res = self.tool("apply")
        self.assertFails(res, "no diff in the patch")


@unittest.skipUnless(hasattr(os, "mkfifo"), "needs FIFOs")
class FifoManifestTest(World):
    def setUp(self):
        super().setUp()
        self.make_three_patches()

    def timed(self, *args):
        """The command, which must end within seconds: reading a FIFO
        would wait forever."""
        env = dict(os.environ, XDG_CACHE_HOME=self.cache,
                   GIT_CONFIG_GLOBAL=os.devnull)
        env.pop("UVPATCH_SOURCE", None)
        start = time.monotonic()
        try:
            res = subprocess.run([sys.executable, TOOL, "--repo", self.root,
                                  "--out", self.out] + list(args), env=env,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True,
                                 timeout=30)
        except subprocess.TimeoutExpired:
            self.fail("%s still runs after 30 s" % " ".join(args))
        self.assertLess(time.monotonic() - start, 20)
        return res

    def test_fifo_patch_file(self):
        path = os.path.join(self.patches, "0002-core-line30.patch")
        os.unlink(path)
        os.mkfifo(path)
        res = self.timed("apply")
        self.assertFails(res, "patches/v0.0.1/0002-core-line30.patch is a "
                         "FIFO, not a regular file")
        self.assertNotIn("does not exist", res.stderr)
        self.assertEqual(res.returncode, 3)

    def test_fifo_deps_json(self):
        path = os.path.join(self.root, "deps.json")
        os.unlink(path)
        os.mkfifo(path)
        res = self.timed("fetch")
        self.assertFails(res, "deps.json is a FIFO, not a regular file")
        self.assertEqual(res.returncode, 3)

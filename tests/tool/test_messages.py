"""Each bad input named for what it is: a CRLF, binary-only or
outside-the-tree patch is not "no diff in the patch", a FIFO is not a
missing file, a --out inside the repository's sources is refused, and
Ctrl-C while the tool starts prints no traceback."""

import os
import signal
import subprocess
import sys
import time
import unittest

from fixture import World, TOOL, git, sha256


class WorkFolderHintTest(World):
    """A message names the base's work folder as it is, out/<base>/src,
    and the command that acts on that base."""

    def test_uncommitted_edit_named_where_it_is(self):
        self.make_three_patches()
        self.add_base("v0.0.2", {"src/core.c": "int second;\n"},
                      {"src/core.c": "int second_patched;\n"})
        for base in (self.base, "v0.0.2"):
            # The default base's commands name it too.
            option = " --base " + base
            args = ("--base", base) if base != self.base else ()
            self.assertOk(self.tool("apply", *args))
            src = os.path.join(self.out, base, "src")
            with open(os.path.join(src, "src", "core.c"), "a") as f:
                f.write("int edit;\n")
            res = self.tool("refresh", *args)
            self.assertFails(res, "error: %s has uncommitted edits" % src,
                             "hint: commit them (`git -C %s commit" % src)
            res = self.tool("apply", *args)
            self.assertFails(res, "error: %s has work that is not in "
                             "patches/" % src,
                             "run `scripts/uvpatch refresh%s` (it rewrites "
                             "patches/%s/ from the commits in %s)"
                             % (option, base, src),
                             "`scripts/uvpatch apply%s --discard`" % option)
            self.assertTrue(os.path.isdir(src))
            self.assertNotIn("out/src", res.stderr)


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
        from uvpatchlib.series.patchfile import unusable
        text = self.original.decode()
        for old, new, phrase in (
                ("b/src/core.c", "b/../core.c", "leaves the tree"),
                ("a/src/core.c", "src/core.c", "no a/ prefix"),
                ("a/src/core.c", "/tmp/core.c", "an absolute path")):
            message, hint = unusable(text.replace(old, new))
            self.assertIn("its diff names", message)
            self.assertIn(phrase, message)
            self.assertIn("relative to the libuv tree", hint)
        # git itself would apply it, at tmp/core.c in the tree.
        self.put(text.replace("a/src/core.c", "/tmp/core.c").encode())
        res = self.tool("apply")
        self.assertFails(res, "0002-core-line30.patch: its diff names "
                         "'/tmp/core.c': an absolute path")
        self.assertNotIn("no diff", res.stderr)

    def test_no_diff_at_all(self):
        from uvpatchlib.series.patchfile import unusable
        text = self.original.decode()
        message, hint = unusable(text[:text.index("---\n")] + "---\n")
        self.assertEqual(message, "no diff in the patch")
        self.assertIn("`diff --git`", hint)


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


class CommandLineTest(World):
    def test_out_inside_the_sources_is_refused(self):
        for folder in ("patches", "scripts", os.path.join("patches", "x"),
                       "."):
            out = os.path.normpath(os.path.join(self.root, folder))
            res = subprocess.run(
                [sys.executable, TOOL, "--repo", self.root, "--out", out,
                 "apply"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, env=dict(os.environ, XDG_CACHE_HOME=self.cache))
            self.assertFails(res, "--out %s is " % out)
            self.assertEqual(res.returncode, 2)
            self.assertFalse(os.path.exists(os.path.join(out, self.base,
                                                         "src")))

    @unittest.skipUnless(hasattr(signal, "SIGINT") and os.name == "posix",
                         "POSIX signals")
    def test_ctrl_c_while_starting(self):
        # -X importtime prints a line as each import ends: the signal
        # comes while the tool's own modules load, at the k-th of them.
        for k in range(1, 7):
            p = subprocess.Popen(
                [sys.executable, "-X", "importtime", TOOL, "--repo",
                 self.root, "--out", self.out, "bases"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True)
            seen, lines = 0, []
            for line in p.stderr:
                lines.append(line)
                if "uvpatchlib" in line:
                    seen += 1
                    if seen == k:
                        p.send_signal(signal.SIGINT)
                        break
            lines += p.stderr.read().splitlines(True)
            p.wait(timeout=30)
            text = "".join(ln for ln in lines
                           if not ln.startswith("import time:"))
            self.assertNotIn("Traceback", text, "signal at import %d" % k)
            if p.returncode != 0:
                self.assertEqual(p.returncode, 130, text)
                self.assertIn("error: interrupted", text)
                self.assertIn("hint: ", text)


class NoSpaceMessageTest(World):
    def test_a_write_failing_for_space_names_the_disk(self):
        import errno
        import io
        from contextlib import redirect_stderr
        from unittest import mock
        from uvpatchlib import cli
        from uvpatchlib.series import refresh
        self.make_patch(1, "core-line5", {"src/core.c": "int x;\n"})
        self.assertOk(self.tool("apply"))
        src = os.path.join(self.work, "src")
        git(["commit", "-q", "--amend", "-m", "core: reworded"], src)

        def full(path, data, tmp=None):
            raise OSError(errno.ENOSPC, "No space left on device", path)
        err = io.StringIO()
        with mock.patch.object(refresh, "write_atomic", full), \
                redirect_stderr(err):
            code = cli.main(["--repo", self.root, "--out", self.out,
                             "refresh"])
        self.assertEqual(code, 1)
        self.assertIn("error: no space left on the disk of ", err.getvalue())
        self.assertIn("hint: free space", err.getvalue())
        self.assertEqual([n for n in os.listdir(self.root)
                          if n.startswith(".")], [])

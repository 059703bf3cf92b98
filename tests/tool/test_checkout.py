"""A clone made with core.autocrlf=true, Git for Windows' default and
that of GitHub's Windows runners: the repository's .gitattributes keeps
the patches byte-exact and the scripts LF, so the clone's own
scripts/uvpatch runs and passes `check` and `apply`. Without it, the
patches' sha256 fail with a message that names line endings."""

import os
import shutil
import subprocess
import sys

from fixture import World, REPO, git, write
from test_check import applied_backport


class AutocrlfCloneTest(World):
    def setUp(self):
        super().setUp()
        applied_backport(self)
        # The repository as a project keeps it: the tool, deps.json,
        # patches/ and the real .gitattributes, committed.
        shutil.copytree(os.path.join(REPO, "scripts"),
                        os.path.join(self.root, "scripts"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(os.path.join(REPO, ".gitattributes"), self.root)
        git(["init", "-q", "-b", "main"], self.root)

    def clone(self, attributes=True):
        if not attributes:
            os.unlink(os.path.join(self.root, ".gitattributes"))
        git(["add", "-A"], self.root)
        git(["commit", "-q", "-m", "project"], self.root)
        clone = os.path.join(self.tmp, "clone-%s" % attributes)
        git(["-c", "core.autocrlf=true", "clone", "-q", self.root, clone],
            self.tmp)
        return clone

    def run_clone(self, clone, *args, via_python=False):
        env = dict(os.environ, XDG_CACHE_HOME=self.cache,
                   GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
        env.pop("UVPATCH_SOURCE", None)
        tool = os.path.join(clone, "scripts", "uvpatch")
        argv = ([sys.executable] if via_python else []) + [tool]
        return subprocess.run(
            argv + ["--out", clone + "-out"] + list(args), env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def test_autocrlf_clone(self):
        self.with_attributes()
        self.without_attributes()

    def with_attributes(self):
        clone = self.clone()
        name = self.base_now()["series"][0]["file"]
        for rel in ("deps.json", os.path.join("patches", self.base, name)):
            with open(os.path.join(self.root, rel), "rb") as f, \
                    open(os.path.join(clone, rel), "rb") as g:
                self.assertEqual(f.read(), g.read(), rel)
        with open(os.path.join(clone, "scripts", "uvpatch"), "rb") as f:
            self.assertNotIn(b"\r", f.read())
        # Run as a user runs it: through its "#!/usr/bin/env python3".
        res = self.run_clone(clone, "check")
        self.assertOk(res)
        self.assertIn("PASS check %s: canonical (refresh would not change "
                      "it)" % name,
                      res.stdout)
        res = self.run_clone(clone, "apply")
        self.assertOk(res)
        self.assertIn("up to date", res.stderr)

    def without_attributes(self):
        # The patches come out with CRLF: named as line endings.
        clone = self.clone(attributes=False)
        res = self.run_clone(clone, "check", via_python=True)
        self.assertFails(res, "has CRLF line endings",
                         "with LF, as recorded, it matches",
                         "git checkout -- patches", "core.autocrlf")
        self.assertEqual(res.returncode, 3)
        # Not a reason to rewrite the series.
        self.assertNotIn("refresh", res.stderr)
        # Following the hint mends the clone.
        write(os.path.join(clone, ".gitattributes"),
              open(os.path.join(REPO, ".gitattributes")).read())
        shutil.rmtree(os.path.join(clone, "patches"))
        git(["checkout", "--", "patches"], clone)
        self.assertOk(self.run_clone(clone, "apply", via_python=True))

"""The tool's git is its own: a hook's GIT_* environment does not reach
it, and a repository the user names is only ever read as a remote, so
the commands its config names never run."""

import os
import shutil
import stat
import subprocess
import sys
import unittest
from unittest import mock

from fixture import TOOL, World, git, shell, write

from uvpatchlib import subproc

CORE = "".join("int line%d = %d;\n" % (i, i) for i in range(40))


class GitEnvironTest(World):
    def test_repository_selecting_variables_are_dropped(self):
        other = os.path.join(self.tmp, "other.git")
        git(["init", "-q", "--bare", other], self.tmp)
        hostile = {
            "GIT_DIR": other, "GIT_WORK_TREE": self.tmp,
            "GIT_INDEX_FILE": os.path.join(self.tmp, "index"),
            "GIT_OBJECT_DIRECTORY": os.path.join(self.tmp, "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": other,
            "GIT_CEILING_DIRECTORIES": self.tmp,
            "GIT_CONFIG_PARAMETERS": "'core.bare'='true'",
            "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.bare",
            "GIT_CONFIG_VALUE_0": "true",
            "GIT_AUTHOR_DATE": "1999-01-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "1999-01-01T00:00:00Z",
            "GIT_SSL_CAINFO": "/kept/ca.pem",
        }
        with mock.patch.dict(os.environ, hostile):
            env = subproc.git_environ()
            top = subproc.git_out(["rev-parse", "--show-toplevel"],
                                  cwd=self.upstream)
            index = subproc.git_out(["rev-parse", "--git-path", "index"],
                                    cwd=self.upstream)
        self.assertEqual(os.path.realpath(top),
                         os.path.realpath(self.upstream))
        self.assertEqual(index, ".git/index")
        for name in hostile:
            if name != "GIT_SSL_CAINFO":
                self.assertNotIn(name, env)
        self.assertEqual(env["GIT_SSL_CAINFO"], "/kept/ca.pem")

    def test_apply_from_a_pre_commit_hook(self):
        # The user's own repository runs `uvpatch apply` before each
        # commit: git exports GIT_INDEX_FILE and GIT_DIR to the hook.
        self.make_patch(1, "core-line5", {
            "src/core.c": CORE.replace("int line5 = 5;", "int line5 = 50;")})
        git(["init", "-q", "-b", "main"], self.root)
        hook = os.path.join(self.root, ".git", "hooks", "pre-commit")
        write(hook, shell("#!/bin/sh\nexec {argv}\n", argv=[
            sys.executable, TOOL, "--repo", self.root, "--out", self.out,
            "apply"]))
        os.chmod(hook, stat.S_IRWXU)
        git(["add", "-A"], self.root)
        git(["commit", "-q", "--no-verify", "-m", "start"], self.root)
        # With -a, git points GIT_INDEX_FILE at its own index.lock.
        write(os.path.join(self.root, "notes.txt"), "mine\n")
        git(["add", "notes.txt"], self.root)
        write(os.path.join(self.root, "notes.txt"), "mine, edited\n")
        env = dict(os.environ, XDG_CACHE_HOME=self.cache,
                   GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
                   GIT_AUTHOR_NAME="Test", GIT_AUTHOR_EMAIL="test@invalid",
                   GIT_COMMITTER_NAME="Test",
                   GIT_COMMITTER_EMAIL="test@invalid")
        env.pop("UVPATCH_SOURCE", None)
        res = subprocess.run(["git", "commit", "-a", "-q", "-m", "mine"],
                             cwd=self.root, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(git(["log", "--format=%s"], self.root).stdout,
                         "mine\nstart\n")
        self.assertEqual(git(["status", "--porcelain"], self.root).stdout,
                         "")
        src = os.path.join(self.work, "src")
        self.assertTrue(os.path.isfile(os.path.join(src, ".git", "index")))
        self.assertEqual(git(["status", "--porcelain"], src).stdout, "")
        with open(os.path.join(src, "src", "core.c")) as f:
            self.assertIn("int line5 = 50;", f.read())


class UserRepositoryTest(World):
    def test_upstream_onto_never_runs_git_in_the_source(self):
        self.make_patch(1, "core-line5", {
            "src/core.c": CORE.replace("int line5 = 5;", "int line5 = 50;")},
            subject="core: set line5\n\nIt was 5.\n\nSet it to 50.\n")
        git(["tag", "v0.0.2"], self.upstream)
        marker = os.path.join(self.tmp, "fsmonitor-ran")
        # git runs core.fsmonitor with a shell when it reads the index.
        git(["config", "core.fsmonitor", "touch %s #" % marker],
            self.upstream)
        # Not every command reads the index: a git on PATH that logs
        # where it runs tells any command run inside the user's folder.
        log = os.path.join(self.tmp, "git-calls")
        shim = os.path.join(self.tmp, "bin", "git")
        write(shim, shell('#!/bin/sh\necho "$(pwd -P) $*" >> {log}\n'
                          'exec {git} "$@"\n', log=log,
                          git=shutil.which("git")))
        os.chmod(shim, stat.S_IRWXU)
        dest = os.path.join(self.tmp, "send")
        res = self.tool("upstream", "--author", "Ada <ada@invalid>",
                        "--onto", "v0.0.2", "--source", self.upstream, dest,
                        env={"PATH": os.path.dirname(shim) + os.pathsep
                             + os.environ["PATH"]})
        self.assertOk(res)
        self.assertFalse(os.path.exists(marker))
        mine = os.path.realpath(self.upstream)
        with open(log) as f:
            calls = f.read().splitlines()
        self.assertTrue(calls)
        inside = [c for c in calls if c.split(" ", 1)[0] == mine
                  or " -C " in " %s " % c]
        self.assertEqual(inside, [])
        self.assertTrue(os.path.isdir(os.path.join(dest, ".git")))


if __name__ == "__main__":
    unittest.main()

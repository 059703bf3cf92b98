"""apply gives out/<base>/src, a repository of its own, the user's git
identity: the checkout's own config, else the global one; and says
which. The commits apply makes keep their fixed identities."""

import os
import subprocess

from fixture import World, git, write


class IdentityTest(World):
    def setUp(self):
        super().setUp()
        self.make_three_patches()
        self.src = os.path.join(self.work, "src")
        self.global_config = os.path.join(self.tmp, "gitconfig")
        write(self.global_config, "[user]\n\tname = Global Person\n"
              "\temail = global@example.org\n")

    def apply(self, global_config=True):
        env = {"GIT_CONFIG_GLOBAL": self.global_config} if global_config \
            else None
        res = self.tool("apply", env=env)
        self.assertOk(res)
        return res

    def commit_author(self):
        write(os.path.join(self.src, "src", "timer.c"), "int t;\n")
        # As the user commits: the tree's own config, no fixed identity.
        env = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull,
                   GIT_CONFIG_NOSYSTEM="1")
        for k in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
                  "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
            env.pop(k, None)
        subprocess.run(["git", "commit", "-q", "-a", "-m", "timer: t"],
                       cwd=self.src, env=env, check=True)
        return git(["log", "-1", "--format=%an <%ae>"],
                   self.src).stdout.strip()

    def test_checkout_config_first(self):
        git(["init", "-q"], self.root)
        git(["config", "user.name", "Ada Lovelace"], self.root)
        git(["config", "user.email", "ada@example.org"], self.root)
        res = self.apply()
        self.assertIn("commits in %s are by Ada Lovelace <ada@example.org> "
                      "(the checkout's git config)" % self.src, res.stderr)
        self.assertEqual(self.commit_author(),
                         "Ada Lovelace <ada@example.org>")

    def test_global_config_next(self):
        res = self.apply()
        self.assertIn("are by Global Person <global@example.org> (your "
                      "global git config)", res.stderr)
        self.assertEqual(self.commit_author(),
                         "Global Person <global@example.org>")

    def test_mixed_scopes_are_named(self):
        git(["init", "-q"], self.root)
        git(["config", "user.email", "ada@example.org"], self.root)
        res = self.apply()
        self.assertIn("are by Global Person <ada@example.org> (your global "
                      "git config; user.email: the checkout's git config)",
                      res.stderr)

    def test_nobody_is_said(self):
        res = self.apply(global_config=False)
        self.assertIn("no user.name or user.email in the checkout's or "
                      "your global git config", res.stderr)

    def test_series_commits_keep_their_identity(self):
        self.apply(global_config=False)
        before = self.src_head()
        self.assertOk(self.tool("apply", "--discard",
                                env={"GIT_CONFIG_GLOBAL":
                                     self.global_config}))
        self.assertEqual(self.src_head(), before)
        self.assertEqual(git(["log", "-1", "--format=%cn"], self.src)
                         .stdout.strip(), "uvpatch")

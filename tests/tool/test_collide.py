"""A base name that is a folder of the tool's own in out/ is refused:
`rebase` works in out/rebase, and a base named so would share it."""

import os

from test_rebase import RebaseWorld
from fixture import write


class BaseNameCollisionTest(RebaseWorld):
    def test_rebase_named_rebase_refused(self):
        self.upstream_commit({"README.md": "fake libuv 2\n"}, "release",
                             tag="v0.0.2")
        for name in ("rebase", "Rebase"):
            res = self.tool("rebase", "--onto", "v0.0.2", "--name", name)
            self.assertFails(res, "the tool's own folder out/rebase",
                             "another name")
        self.assertEqual(self.files(), self.snapshot)

    def test_declared_base_named_rebase_refused(self):
        # Work in out/rebase, as a stopped rebase leaves it.
        mine = os.path.join(self.out, "rebase", "unrefreshed.c")
        write(mine, "mine\n")
        self.deps["name"] = "rebase"
        os.rename(os.path.join(self.root, "patches", self.base),
                  os.path.join(self.root, "patches", "rebase"))
        self.base = "rebase"
        self.save_deps()
        for args in (["apply"], ["refresh"], ["build"]):
            res = self.tool(*args)
            self.assertFails(res, "'rebase' is the name of the tool's own "
                             "folder out/rebase")
            self.assertEqual(res.returncode, 3, res.stderr)
        with open(mine) as f:
            self.assertEqual(f.read(), "mine\n")

import json
import os

from fixture import World, git, write, sha256, UPSTREAM_FILES


class RefreshTest(World):
    def setUp(self):
        super().setUp()
        core = UPSTREAM_FILES["src/core.c"].replace("int line5 = 5;",
                                                    "int line5 = 50;")
        self.make_patch(1, "core-change-core-line5", {"src/core.c": core},
                        subject="core: change core-line5")
        self.assertOk(self.tool("apply"))
        # The fixture's patches are made by the same canonical command.
        self.assertOk(self.tool("refresh"))
        self.snapshot = self.files()

    def files(self):
        folder = os.path.join(self.root, "patches")
        found = {n: open(os.path.join(folder, n)).read()
                 for n in os.listdir(folder)}
        found["deps.json"] = open(os.path.join(self.root,
                                               "deps.json")).read()
        return found

    def test_unchanged_tree_changes_nothing(self):
        res = self.tool("refresh")
        self.assertOk(res)
        self.assertIn("up to date", res.stderr)
        self.assertEqual(self.files(), self.snapshot)

    def test_canonical_form(self):
        text = self.snapshot["0001-core-change-core-line5.patch"]
        self.assertTrue(text.startswith("From " + "0" * 40 + " "))
        self.assertIn("Subject: [PATCH] core: change core-line5\n", text)
        self.assertFalse(text.rstrip("\n").endswith("2.39.5"))
        self.assertNotIn("\n-- \n", text)

    def test_new_commit_becomes_a_patch(self):
        src = os.path.join(self.out, "src")
        write(os.path.join(src, "src", "timer.c"), "int timer_a = 9;\n")
        git(["commit", "-q", "-a", "-m", "timer: set timer_a\n\n"
             "Upstream-Status: Submitted [https://example.invalid/1]\n"], src)
        res = self.tool("refresh")
        self.assertOk(res)
        self.assertIn("wrote patches/0002-timer-set-timer_a.patch", res.stderr)
        deps = json.load(open(os.path.join(self.root, "deps.json")))
        entry = deps["series"][1]
        self.assertEqual(entry["upstream_status"], "Submitted")
        self.assertEqual(entry["sha256"], sha256(os.path.join(
            self.root, "patches", entry["file"])))
        # out/src matches patches/ again: apply has nothing to do.
        self.assertIn("up to date", self.tool("apply").stderr)

    def test_amended_commit_updates_patch_and_hash(self):
        src = os.path.join(self.out, "src")
        core = open(os.path.join(src, "src", "core.c")).read()
        write(os.path.join(src, "src", "core.c"),
              core.replace("int line6 = 6;", "int line6 = 60;"))
        git(["commit", "-q", "-a", "--amend", "--no-edit"], src)
        self.assertOk(self.tool("refresh"))
        after = self.files()
        name = "0001-core-change-core-line5.patch"
        self.assertNotEqual(after[name], self.snapshot[name])
        self.assertIn("+int line6 = 60;", after[name])
        self.assertNotEqual(after["deps.json"], self.snapshot["deps.json"])

    def test_dirty_tree_is_refused(self):
        src = os.path.join(self.out, "src")
        write(os.path.join(src, "src", "core.c"), "edited\n")
        res = self.tool("refresh")
        self.assertFails(res, "uncommitted edits", "src/core.c")
        self.assertEqual(self.files(), self.snapshot)

"""refresh and a patch whose subject changed (so its file is renamed):
the deps.json entry goes with it, and its summary is updated when it was
the old subject, or named for the author to check when written by
hand."""

import os

from fixture import World, git, UPSTREAM_FILES


class RenamedSummaryTest(World):
    def setUp(self):
        super().setUp()
        core = UPSTREAM_FILES["src/core.c"].replace("int line5 = 5;",
                                                    "int line5 = 50;")
        self.make_patch(1, "core-set-line5", {"src/core.c": core},
                        subject="core: set line5")
        self.assertOk(self.tool("apply"))
        self.assertOk(self.tool("refresh"))
        self.src = os.path.join(self.work, "src")

    def reword(self, subject):
        git(["commit", "-q", "--amend", "-m", subject], self.src)
        return self.tool("refresh")

    def test_hand_written_summary_is_flagged(self):
        self.deps = self.base_now()
        self.deps["series"][0]["summary"] = "line5 is fifty for every user"
        self.deps["series"][0]["tests"] = ["core"]
        self.save_deps()
        res = self.reword("core: give line5 its new value")
        self.assertOk(res)
        entry = self.base_now()["series"][0]
        self.assertEqual(entry["file"],
                         "0001-core-give-line5-its-new-value.patch")
        # The entry is the old one, tests and summary included ...
        self.assertEqual(entry["tests"], ["core"])
        self.assertEqual(entry["summary"], "line5 is fifty for every user")
        # ... and refresh says the summary may be stale.
        self.assertIn("check the summary of 0001-core-give-line5-its-new-"
                      "value.patch (was 0001-core-set-line5.patch) in "
                      "deps.json: 'line5 is fifty for every user' was "
                      "written for the old patch", res.stderr)

    def test_summary_that_was_the_subject_follows_it(self):
        self.deps = self.base_now()
        self.deps["series"][0]["summary"] = "core: set line5"
        self.save_deps()
        res = self.reword("core: give line5 its new value")
        self.assertOk(res)
        entry = self.base_now()["series"][0]
        self.assertEqual(entry["summary"], "core: give line5 its new value")
        self.assertIn("0001-core-give-line5-its-new-value.patch was "
                      "0001-core-set-line5.patch: its summary in deps.json "
                      "was the old subject, now the new one", res.stderr)

    def test_same_subject_says_nothing(self):
        git(["commit", "-q", "--amend", "-m", "core: set line5\n\nWhy."],
            self.src)
        res = self.tool("refresh")
        self.assertOk(res)
        self.assertNotIn("summary", res.stderr)

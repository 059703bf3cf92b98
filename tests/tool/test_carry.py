"""carry: a patch, or a change to it, from one series to another by
three-way merge; the series it touched refreshed and checked; a conflict
stops with the files and what to run."""

import os
import subprocess
import unittest

from fixture import World, git, no_editor_env, UPSTREAM_FILES

CORE = UPSTREAM_FILES["src/core.c"]
# A second base's upstream, moved from the first's away from line5.
DRIFT = CORE.replace("int line30 = 30;", "int line30 = 31;")


def as_hint(args, cwd):
    """Runs git ``args`` as a hint names them, where any editor git
    opened would fail (no terminal)."""
    subprocess.run(["git"] + args, cwd=cwd, env=no_editor_env(), check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def message(subject, body="It broke.\n\nFix it."):
    return ("%s\n\n%s\n\nUpstream-Status: Pending\nForwarded: no\n"
            "Last-Update: 2026-12-03\nSigned-off-by: Test <test@invalid>\n"
            % (subject, body))


PROOF = [{"target": "linux", "cases": ["core/fails_before"]}]


def write_core(src, text):
    with open(os.path.join(src, "src", "core.c"), "w") as f:
        f.write(text)


class CarryWorld(World):
    def setUp(self):
        super().setUp()
        self.add_program("core", ["fails_before"])

    def own_patch(self, value="50"):
        self.make_patch(1, "core-set-line5", {"src/core.c": CORE.replace(
            "int line5 = 5;", "int line5 = %s;" % value)},
            subject=message("core: set line5"))
        self.deps["series"][0].update(proof=PROOF, tests=["core"],
                                      summary="line5 is fifty")
        self.save_deps()

    def second_base(self, upstream_core, patch_edits, subject):
        data = self.add_base("v0.0.2", {"src/core.c": upstream_core},
                             patch_edits, subject=subject, purpose="tests")
        data["series"][0]["proof"] = PROOF
        self.save_deps()

    def drifted_base(self, line5, subject):
        """A second base on DRIFT, its patch setting line5."""
        self.second_base(DRIFT, {"src/core.c": DRIFT.replace(
            "int line5 = 5;", "int line5 = %s;" % line5)}, subject)

    def commit_checkout(self):
        """The checkout's git holds the series as they are."""
        git(["init", "-q", "-b", "main"], self.root)
        git(["add", "-A"], self.root)
        git(["commit", "-q", "-m", "the series"], self.root)

    def amend_line5(self, value):
        """Changes this base's patch since the checkout's HEAD."""
        self.commit_checkout()
        self.assertOk(self.tool("apply"))
        src = os.path.join(self.work, "src")
        write_core(src, CORE.replace("int line5 = 5;",
                                     "int line5 = %s;" % value))
        git(["commit", "-q", "-a", "--amend", "--no-edit"], src)
        self.assertOk(self.tool("refresh"))

    def resolve(self, base, core):
        """Settles a conflicted carry to ``base`` as the hint says."""
        other = os.path.join(self.out, base, "src")
        write_core(other, core)
        git(["add", "-A"], other)
        as_hint(["cherry-pick", "--continue", "--no-edit"], other)
        return other

    def patch_text(self, base, number):
        entry = self.base_now(base)["series"][number - 1]
        with open(os.path.join(self.root, "patches", base, entry["file"]),
                  encoding="utf-8") as f:
            return entry, f.read()


class CarryNewPatchTest(CarryWorld):
    def test_a_new_patch_reaches_the_other_series(self):
        self.own_patch()
        # Upstream moved on elsewhere in the same file: a three-way merge
        # takes both.
        self.second_base(CORE.replace("int line30 = 30;",
                                      "int line30 = 31;"),
                         {"src/timer.c": "int timer_a = 2;\n"},
                         message("timer: set timer_a"))
        res = self.tool("carry", "--patch", "1")
        self.assertOk(res)
        self.assertIn("PASS carry 0001-core-set-line5.patch to v0.0.2: a new "
                      "patch on its series", res.stdout)
        entry, text = self.patch_text("v0.0.2", 2)
        self.assertEqual(entry["file"], "0002-core-set-line5.patch")
        self.assertEqual(entry["proof"], PROOF)
        self.assertEqual(entry["summary"], "line5 is fifty")
        self.assertIn("+int line5 = 50;", text)
        # check ran on the series it touched, and passed it.
        self.assertIn("PASS check 0002-core-set-line5.patch", res.stdout)
        src = os.path.join(self.out, "v0.0.2", "src", "src", "core.c")
        with open(src) as f:
            core = f.read()
        self.assertIn("int line5 = 50;", core)
        self.assertIn("int line30 = 31;", core)

    def test_a_conflict_stops_with_the_files(self):
        self.own_patch()
        self.second_base(CORE.replace("int line5 = 5;", "int line5 = 7;"),
                         {"src/timer.c": "int timer_a = 2;\n"},
                         message("timer: set timer_a"))
        res = self.tool("carry", "--patch", "0001-core-set-line5.patch")
        self.assertFails(res, "carrying 0001-core-set-line5.patch to "
                         "v0.0.2: conflict in src/core.c",
                         "cherry-pick --continue --no-edit`",
                         "scripts/uvpatch refresh --base v0.0.2",
                         "apply --base v0.0.2 --discard")
        self.assertEqual(res.returncode, 6)
        # patches/ is as it was.
        self.assertEqual(len(self.base_now("v0.0.2")["series"]), 1)
        # The hint's way on: resolve, continue, refresh, the same carry.
        self.assertIn("then `scripts/uvpatch refresh --base v0.0.2` and "
                      "`scripts/uvpatch carry --base v0.0.1 --patch 1 --to "
                      "v0.0.2` (it "
                      "gives the new patch its deps.json fields", res.stderr)
        self.resolve("v0.0.2", CORE.replace("int line5 = 5;",
                                            "int line5 = 50;"))
        self.assertOk(self.tool("refresh", "--base", "v0.0.2"))
        res = self.tool("carry", "--patch", "1", "--to", "v0.0.2")
        self.assertOk(res)
        self.assertIn("PASS carry 0001-core-set-line5.patch to v0.0.2: "
                      "0002-core-set-line5.patch named no proof in "
                      "deps.json: given the fields of 0001-core-set-line5."
                      "patch", res.stdout)
        self.assertIn("PASS check 0002-core-set-line5.patch", res.stdout)
        entry, _ = self.patch_text("v0.0.2", 2)
        self.assertEqual((entry["proof"], entry["summary"]),
                         (PROOF, "line5 is fifty"))
        # Done: a third run has nothing to carry.
        self.assertIn("SKIP carry", self.tool("carry", "--patch", "1").stdout)

    def test_a_conflict_on_the_default_base_names_it(self):
        # Every command of the hint names its base, the default one too.
        self.own_patch()
        self.drifted_base(7, message("core: set line5 to seven"))
        res = self.tool("carry", "--base", "v0.0.2", "--patch", "1")
        self.assertFails(res, "to v0.0.1: conflict in src/core.c",
                         "then `scripts/uvpatch refresh --base v0.0.1` and "
                         "`scripts/uvpatch carry --base v0.0.2 --patch 1 "
                         "--to v0.0.1`",
                         "`scripts/uvpatch apply --base v0.0.1 --discard`")

    def test_a_changed_patch_that_conflicts_is_taken_up_too(self):
        # The patch differs from HEAD's, and the other series lacks it.
        self.own_patch()
        self.second_base(CORE.replace("int line5 = 5;", "int line5 = 7;"),
                         {"src/timer.c": "int timer_a = 2;\n"},
                         message("timer: set timer_a"))
        self.amend_line5("55")
        self.assertFails(self.tool("carry", "--patch", "1"),
                         "conflict in src/core.c")
        self.resolve("v0.0.2", CORE.replace("int line5 = 5;",
                                            "int line5 = 55;"))
        self.assertOk(self.tool("refresh", "--base", "v0.0.2"))
        res = self.tool("carry", "--patch", "1", "--to", "v0.0.2")
        self.assertOk(res)
        self.assertIn("PASS check 0002-core-set-line5.patch", res.stdout)
        entry, text = self.patch_text("v0.0.2", 2)
        self.assertEqual(entry["proof"], PROOF)
        self.assertIn("+int line5 = 55;", text)

    def test_a_bare_entry_keeps_a_summary_of_its_own(self):
        self.own_patch()
        self.drifted_base(50, message("core: set line5"))
        entry = self.extra[0]["series"][0]
        del entry["proof"]
        entry["summary"] = "line5 is fifty here too"
        self.save_deps()
        res = self.tool("carry", "--patch", "1")
        self.assertOk(res)
        self.assertIn("0001-core-set-line5.patch named no proof in "
                      "deps.json: given the fields of", res.stdout)
        entry, _ = self.patch_text("v0.0.2", 1)
        self.assertEqual((entry["proof"], entry["summary"]),
                         (PROOF, "line5 is fifty here too"))

    def test_a_change_the_series_has_is_refused_cleanly(self):
        self.own_patch()
        self.drifted_base(50, message("core: make line5 fifty"))
        res = self.tool("carry", "--patch", "1")
        self.assertFails(res, "carrying 0001-core-set-line5.patch to "
                         "v0.0.2: git cherry-pick failed",
                         "nothing to carry")
        src = os.path.join(self.out, "v0.0.2", "src")
        self.assertEqual(git(["status", "--porcelain"], src).stdout, "")
        self.assertFalse(os.path.exists(os.path.join(
            src, ".git", "CHERRY_PICK_HEAD")))

    def test_unknown_patch(self):
        self.own_patch()
        res = self.tool("carry", "--patch", "7")
        self.assertFails(res, "--patch 7: no such patch in series v0.0.1",
                         "0001-core-set-line5.patch")


class CarryChangeTest(CarryWorld):
    """Both series have the patch; one changes it."""

    def setUp(self):
        super().setUp()
        self.own_patch()
        self.drifted_base(50, message(
            "core: set line5", "It broke on this base too.\n\nFix it."))
        self.commit_checkout()
        self.assertOk(self.tool("apply"))
        self.src = os.path.join(self.work, "src")

    def change(self, value, body):
        with open(os.path.join(self.src, "src", "core.c")) as f:
            text = f.read()
        with open(os.path.join(self.src, "src", "core.c"), "w") as f:
            f.write(text.replace("int line5 = 50;", "int line5 = %s;"
                                 % value))
        git(["commit", "-q", "-a", "--amend", "-m",
             message("core: set line5", body)], self.src)
        self.assertOk(self.tool("refresh"))

    def test_a_failed_squash_leaves_the_series_as_it_was(self):
        self.assertOk(self.tool("apply", "--base", "v0.0.2"))
        other = os.path.join(self.out, "v0.0.2", "src")
        before = git(["rev-parse", "HEAD"], other).stdout
        hook = os.path.join(other, ".git", "hooks", "pre-rebase")
        os.makedirs(os.path.dirname(hook), exist_ok=True)
        with open(hook, "w") as f:
            f.write("#!/bin/sh\necho 'pre-rebase: no' >&2\nexit 1\n")
        os.chmod(hook, 0o755)
        self.change("55", "It broke.\n\nFix it.")
        res = self.tool("carry", "--patch", "1")
        self.assertFails(res, "git rebase failed: pre-rebase: no",
                         "is as it was")
        self.assertEqual(git(["rev-parse", "HEAD"], other).stdout, before)

    def test_the_change_is_merged_into_the_other_copy(self):
        self.change("55", "It broke.\n\nFix it.\n\nSee the report.")
        res = self.tool("carry", "--patch", "1")
        self.assertOk(res)
        self.assertIn("PASS carry 0001-core-set-line5.patch to v0.0.2: the "
                      "change merged into 0001-core-set-line5.patch, the "
                      "message change merged", res.stdout)
        entry, text = self.patch_text("v0.0.2", 1)
        self.assertEqual(len(self.base_now("v0.0.2")["series"]), 1)
        self.assertIn("+int line5 = 55;", text)
        # The other base's own words stay; the added line comes in.
        self.assertIn("It broke on this base too.", text)
        self.assertIn("See the report.", text)
        self.assertIn("PASS check 0001-core-set-line5.patch", res.stdout)

    def test_unchanged_patch_is_skipped(self):
        res = self.tool("carry", "--patch", "1")
        self.assertOk(res)
        self.assertIn("SKIP carry 0001-core-set-line5.patch to v0.0.2: it "
                      "has 0001-core-set-line5.patch, and "
                      "0001-core-set-line5.patch has no change since HEAD",
                      res.stdout)


class CarryChangeConflictTest(CarryWorld):
    """Both series have the patch, with other values: a change of one
    conflicts in the other."""

    def test_a_conflict_names_the_steps_that_finish_it(self):
        self.own_patch()
        self.drifted_base(51, message("core: set line5"))
        third = self.add_base("v0.0.3", {"src/timer.c": "int timer_a = 9;\n"},
                              {"src/core.c": CORE.replace(
                                  "int line5 = 5;", "int line5 = 50;")},
                              subject=message("core: set line5"))
        third["series"][0]["proof"] = PROOF
        self.save_deps()
        self.amend_line5("55")
        res = self.tool("carry", "--patch", "1")
        self.assertFails(res, "v0.0.2: conflict in src/core.c",
                         "cherry-pick --continue --no-edit` and `git -C ",
                         "v0.0.2/src -c sequence.editor=true rebase -i "
                         "--autosquash uvpatch-base` (on its conflict the "
                         "same, then `git -C ",
                         "v0.0.2/src -c core.editor=true rebase --continue`)"
                         "; then "
                         "`scripts/uvpatch refresh --base v0.0.2` and "
                         "`scripts/uvpatch check --base v0.0.2`, then "
                         "`scripts/uvpatch carry --base v0.0.1 --patch 1 "
                         "--to v0.0.3`. "
                         "To drop")
        other = self.resolve("v0.0.2", DRIFT.replace("int line5 = 5;",
                                                     "int line5 = 55;"))
        as_hint(["-c", "sequence.editor=true", "rebase", "-q", "-i",
                 "--autosquash", "uvpatch-base"], other)
        self.assertOk(self.tool("refresh", "--base", "v0.0.2"))
        self.assertOk(self.tool("check", "--base", "v0.0.2"))
        entry, text = self.patch_text("v0.0.2", 1)
        self.assertEqual(len(self.base_now("v0.0.2")["series"]), 1)
        self.assertIn("+int line5 = 55;", text)


class GitHintTest(unittest.TestCase):
    def test_a_path_with_a_space_is_quoted(self):
        from uvpatchlib.console import git_hint
        self.assertEqual(git_hint("/nowhere/new user/src", "am --continue"),
                         "`git -C '/nowhere/new user/src' am --continue`")

    def test_a_revision_with_a_space_is_quoted(self):
        from types import SimpleNamespace
        from uvpatchlib.series.carry import _Again
        again = _Again(SimpleNamespace(base_option=" --base v1.x"), 7,
                       "HEAD@{1 day ago}", ["v1.50.0"])
        self.assertEqual(again.to(["v1.50.0"]),
                         "`scripts/uvpatch carry --base v1.x --patch 8 "
                         "--since 'HEAD@{1 day ago}' --to v1.50.0`")

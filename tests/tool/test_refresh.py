import json
import os
import re
import subprocess
import sys

from fixture import (GIT_ENV, REPO, World, git, no_editor_env, write,
                     sha256, UPSTREAM_FILES)


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
        folder = self.patches
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
        src = os.path.join(self.work, "src")
        write(os.path.join(src, "src", "timer.c"), "int timer_a = 9;\n")
        git(["commit", "-q", "-a", "-m", "timer: set timer_a\n\n"
             "Upstream-Status: Submitted [https://example.invalid/1]\n"], src)
        res = self.tool("refresh")
        self.assertOk(res)
        self.assertIn("wrote patches/v0.0.1/0002-timer-set-timer_a.patch",
                      res.stderr)
        deps = self.base_now()
        entry = deps["series"][1]
        self.assertEqual(entry["upstream_status"], "Submitted")
        self.assertEqual(entry["sha256"], sha256(os.path.join(
            self.patches, entry["file"])))
        # out/src matches patches/ again: apply has nothing to do.
        self.assertIn("up to date", self.tool("apply").stderr)

    def test_encoded_subject_round_trips(self):
        # refresh writes a subject that is not ASCII as RFC 2047 encoded
        # words; reading the patch back gives the subject as typed.
        from uvpatchlib.series.patchfile import Patch, header
        subject = "timer: caf\u00e9 \u2019s timer_a, long enough that git " \
            "folds it"
        src = os.path.join(self.work, "src")
        write(os.path.join(src, "src", "timer.c"), "int timer_a = 9;\n")
        git(["commit", "-q", "-a", "-m", subject + "\n\n"
             "Upstream-Status: Pending\n"], src)
        self.assertOk(self.tool("refresh"))
        entry = self.base_now()["series"][1]
        with open(os.path.join(self.patches, entry["file"]),
                  encoding="utf-8", newline="") as f:
            text = f.read()
        head = text[:text.index("\n\n")]
        self.assertIn("Subject: [PATCH] =?UTF-8?q?", head)
        self.assertTrue(head.isascii())
        self.assertEqual(Patch(text).subject, subject)
        self.assertEqual(header(text)["Subject"], "[PATCH] " + subject)
        self.assertEqual(entry["summary"], subject)
        # Read back the same way, so a second refresh changes nothing.
        before = self.files()
        self.assertIn("up to date", self.tool("refresh").stderr)
        self.assertEqual(self.files(), before)

    def test_amended_commit_updates_patch_and_hash(self):
        src = os.path.join(self.work, "src")
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
        src = os.path.join(self.work, "src")
        write(os.path.join(src, "src", "core.c"), "edited\n")
        res = self.tool("refresh")
        self.assertFails(res, "uncommitted edits", "src/core.c")
        self.assertEqual(self.files(), self.snapshot)

    def test_patch_edited_after_apply_is_refused(self):
        # The user edits the patch itself and records its sha256: out/src
        # still holds the older series, which refresh must not write back.
        name = "0001-core-change-core-line5.patch"
        path = os.path.join(self.patches, name)
        text = self.snapshot[name].replace("+int line5 = 50;",
                                           "+int line5 = 55;")
        write(path, text)
        deps = self.deps_doc()
        deps["bases"][0]["series"][0]["sha256"] = sha256(path)
        write(os.path.join(self.root, "deps.json"),
              json.dumps(deps, indent=2) + "\n")
        before = self.files()
        res = self.tool("refresh")
        src = os.path.join(self.work, "src")
        self.assertFails(res, "patches/v0.0.1/ changed since %s was applied"
                         % src, name, "scripts/uvpatch apply --base v0.0.1`",
                         "git checkout -- patches/v0.0.1/ deps.json")
        self.assertNotIn("out/src", res.stderr)
        self.assertEqual(res.returncode, 6)
        self.assertEqual(self.files(), before)
        # After apply, refresh keeps the edit.
        self.assertOk(self.tool("apply"))
        self.assertOk(self.tool("refresh"))
        self.assertIn("+int line5 = 55;", self.files()[name])


class RefreshMetadataTest(World):
    def test_dropped_patch_does_not_shift_metadata(self):
        self.make_patch(1, "core-one", {"src/core.c": "int one;\n"},
                        subject="core: one")
        self.make_patch(2, "timer-two", {"src/timer.c": "int two;\n"},
                        subject="timer: two")
        self.deps["series"][0]["tests"] = ["first_program"]
        self.deps["series"][1]["tests"] = ["second_program"]
        self.deps["series"][1]["platforms"] = ["linux"]
        self.save_deps()
        self.assertOk(self.tool("apply"))
        src = os.path.join(self.work, "src")
        # Drop the first patch: the second becomes 0001.
        second = git(["rev-parse", "HEAD"], src).stdout.strip()
        git(["reset", "-q", "--hard", "uvpatch-base"], src)
        git(["cherry-pick", second], src)
        # Not without being told: the patch and its tests would go.
        before = self.deps_doc()
        res = self.tool("refresh")
        self.assertFails(res, "would drop 1 patch(es)",
                         "0001-core-one.patch",
                         "refresh --base v0.0.1 --drop")
        self.assertEqual(self.deps_doc(), before)
        res = self.tool("refresh", "--drop")
        self.assertOk(res)
        self.assertIn("removed patches/v0.0.1/0002-timer-two.patch",
                      res.stderr)
        deps = self.base_now()
        self.assertEqual(len(deps["series"]), 1)
        entry = deps["series"][0]
        self.assertEqual(entry["file"], "0001-timer-two.patch")
        self.assertEqual(entry["tests"], ["second_program"])
        self.assertEqual(entry["platforms"], ["linux"])
        self.assertFalse(os.path.exists(os.path.join(
            self.patches, "0002-timer-two.patch")))


class RefreshMidwayTest(World):
    """A tree stopped inside a git operation, or detached: its HEAD is
    not the series, so refresh refuses and changes nothing."""

    def setUp(self):
        super().setUp()
        # A hint's commands must survive a space in the path they name.
        self.out = os.path.join(self.tmp, "new user", "out")
        self.make_three_patches()
        self.deps["series"][2]["proof"] = [
            {"target": "linux", "cases": ["timer_b/is_twenty"]}]
        self.save_deps()
        self.assertOk(self.tool("apply"))
        self.src = os.path.join(self.work, "src")
        self.before = (self.deps_doc(), sorted(os.listdir(self.patches)))

    def refused(self, *fragments):
        res = self.tool("refresh")
        self.assertFails(res, *fragments)
        self.assertEqual(res.returncode, 6, res.stderr)
        self.assertEqual((self.deps_doc(), sorted(os.listdir(self.patches))),
                         self.before)

    def test_stopped_interactive_rebase(self):
        # rebase -i with "edit" on the first patch: HEAD is 0001 alone.
        env = {"GIT_SEQUENCE_EDITOR": "sed -i '1s/^pick/edit/'"}
        res = subprocess.run(
            ["git", "rebase", "-i", "uvpatch-base"], cwd=self.src,
            env=dict(os.environ, **GIT_ENV, **env), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.refused("in the middle of a rebase", "rebase --continue")
        git(["rebase", "--continue"], self.src)
        self.assertOk(self.tool("refresh"))
        self.assertEqual(len(self.base_now()["series"]), 3)

    def test_detached_head(self):
        git(["checkout", "-q", "HEAD~2"], self.src)
        self.refused("detached HEAD", "checkout series")

    def test_stopped_cherry_pick_and_am(self):
        top = git(["rev-parse", "HEAD"], self.src).stdout.strip()
        git(["reset", "-q", "--hard", "HEAD~1"], self.src)
        write(os.path.join(self.src, "src", "timer.c"), "int other;\n")
        git(["commit", "-q", "-a", "-m", "timer: other"], self.src)
        git(["cherry-pick", top], self.src, check=False)
        self.refused("in the middle of a cherry-pick")
        git(["cherry-pick", "--abort"], self.src)
        mbox = git(["format-patch", "-1", "--stdout", top],
                   self.src).stdout
        res = subprocess.run(["git", "am", "-q"], cwd=self.src, input=mbox,
                             env=dict(os.environ, **GIT_ENV),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        self.assertNotEqual(res.returncode, 0)
        self.refused("in the middle of an am", "am --continue`")

    def finish_as_hinted(self, what, *args, ours=1):
        """Stops git ``args`` on a conflict with branch side (fed its
        commit as a mail when ``args`` is an am) and settles it as the
        user would. Refresh refuses the tree; the first command of its
        hint finishes the operation."""
        top = git(["rev-parse", "HEAD"], self.src).stdout.strip()
        timer = os.path.join(self.src, "src", "timer.c")
        git(["checkout", "-q", "-b", "side"], self.src)
        write(timer, "int side;\n")
        git(["commit", "-q", "-a", "-m", "timer: side"], self.src)
        git(["checkout", "-q", "series"], self.src)
        for n in range(ours):
            write(timer, "int ours%d;\n" % n)
            git(["commit", "-q", "-a", "-m", "timer: ours %d" % n], self.src)
        mail = git(["format-patch", "-1", "--stdout", "side"],
                   self.src).stdout
        stopped = subprocess.run(["git"] + list(args), cwd=self.src,
                                 input=mail, env=dict(os.environ, **GIT_ENV),
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        self.assertNotEqual(stopped.returncode, 0)
        write(timer, "int settled;\n")
        git(["add", "-A"], self.src)
        res = self.tool("refresh")
        self.assertFails(res, "in the middle of " + what,
                         "--abort`), then refresh")
        # The hint's first command, pasted into a shell where any editor
        # git opened would fail (no terminal).
        command = re.search(r"finish it \(`([^`]*)`", res.stderr).group(1)
        done = subprocess.run(["sh", "-c", command], env=no_editor_env(),
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertNotIn("in the middle of", self.tool("refresh").stderr)
        git(["checkout", "-q", "series"], self.src)
        git(["reset", "-q", "--hard", top], self.src)
        git(["branch", "-q", "-D", "side"], self.src)

    def test_each_stop_finishes_as_the_hint_says(self):
        self.finish_as_hinted("a cherry-pick", "cherry-pick", "side")
        self.finish_as_hinted("a revert", "revert", "--no-edit", "HEAD~1",
                              ours=2)
        self.finish_as_hinted("a rebase", "rebase", "side")
        self.finish_as_hinted("a merge", "merge", "--no-edit", "side")
        self.finish_as_hinted("a rebase", "rebase", "--apply", "side")
        self.finish_as_hinted("an am", "am")

    def test_dropped_proof_refused_then_told(self):
        git(["reset", "-q", "--hard", "HEAD~1"], self.src)
        self.refused("would drop 1 patch(es)", "0003-timer-b.patch (proof: "
                     "timer_b/is_twenty)", "--drop")
        res = self.tool("refresh", "--drop")
        self.assertOk(res)
        self.assertEqual(len(self.base_now()["series"]), 2)


class RoundTripTest(World):
    """What refresh writes, apply takes: a commit that would become a
    patch apply refuses is refused before anything is written."""

    def setUp(self):
        super().setUp()
        self.make_three_patches()
        self.assertOk(self.tool("apply"))
        self.src = os.path.join(self.work, "src")
        self.before = (self.deps_doc(), sorted(os.listdir(self.patches)))

    def refused(self, *fragments):
        res = self.tool("refresh")
        self.assertFails(res, "nothing was written", *fragments)
        self.assertEqual((self.deps_doc(), sorted(os.listdir(self.patches))),
                         self.before)
        # The series as it stands still applies in a fresh out/.
        self.out = os.path.join(self.tmp, "fresh")
        self.assertOk(self.tool("apply"))

    def test_empty_commit_refused(self):
        git(["commit", "-q", "--allow-empty", "-m", "core: nothing"],
            self.src)
        self.refused("an empty commit")

    def test_non_ascii_file_name_refused(self):
        write(os.path.join(self.src, "src", "caf\u00e9.c"), "int x;\n")
        git(["add", "-A"], self.src)
        git(["commit", "-q", "-m", "core: add a file"], self.src)
        self.refused("which apply refuses", "no a/ prefix")

    def test_trailing_white_space_refused(self):
        write(os.path.join(self.src, "src", "timer.c"), "int x; \n")
        git(["commit", "-q", "-a", "-m", "timer: spaces"], self.src)
        self.refused("which apply refuses", "trailing whitespace")


# A refresh killed (os._exit, as kill -9: no cleanup runs) when it comes
# to write the file named by argv[4] (deps.json, or out/<base>/src's state
# file after it), its patches written.
KILLED_REFRESH = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
from uvpatchlib.series import refresh
real = refresh.write_atomic
def write_atomic(path, data, tmp=None):
    if os.path.basename(path) == sys.argv[4]:
        os._exit(137)
    return real(path, data, tmp)
refresh.write_atomic = write_atomic
from uvpatchlib.cli import main
sys.exit(main(["--repo", sys.argv[2], "--out", sys.argv[3], "refresh"]))
"""


class KilledRefreshTest(World):
    def test_next_command_repairs_a_killed_refresh(self):
        self.killed_at("deps.json")

    def test_killed_before_the_state_of_src_is_written(self):
        self.killed_at("uvpatch-state.json")

    def killed_at(self, name):
        self.make_three_patches()
        self.assertOk(self.tool("apply"))
        src = os.path.join(self.work, "src")
        write(os.path.join(src, "src", "timer.c"), "int timer_a = 9;\n")
        git(["commit", "-q", "-a", "-m", "timer: set timer_a"], src)
        before = (self.deps_doc(), sorted(os.listdir(self.patches)))
        res = subprocess.run(
            [sys.executable, "-c", KILLED_REFRESH, os.path.join(
                REPO, "scripts"), self.root, self.out, name],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(res.returncode, 137, res.stderr)
        # Any command: patches/ and deps.json agree again.
        res = self.tool("apply")
        self.assertEqual(res.returncode, 6, res.stderr)  # src's new commit
        self.assertIn("interrupted", res.stderr)
        self.assertEqual((self.deps_doc(), sorted(os.listdir(self.patches))),
                         before)
        self.assertEqual([n for n in os.listdir(self.root)
                          if n.startswith(".")], [])
        # And the refresh the hint names finishes the work.
        self.assertOk(self.tool("refresh"))
        self.assertIn("0004-timer-set-timer_a.patch",
                      os.listdir(self.patches))
        self.out = os.path.join(self.tmp, "fresh")
        self.assertOk(self.tool("apply"))

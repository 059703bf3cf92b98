import os
import shutil
import socket
import subprocess
import sys
import unittest

import fixture
from fixture import World, git, write, UPSTREAM_FILES

from uvpatchlib.series import message
from uvpatchlib.upstream import prcheck, prtext

CORE = UPSTREAM_FILES["src/core.c"]
TEST_FILE = """#include "uv.h"
#include "task.h"

TEST_IMPL(core_line5_budget) {
  return 0;
}
"""
MESSAGE = """core: bound line5

line5 was unbounded: a busy peer could starve the loop for as long as
it kept sending.

Bound it to 50 per iteration, like the other callbacks.

Measured with a flood of 100000 datagrams:

  metric          before    after
  max stall ms    120       2
  datagrams/s     98000     97500

Fixes: https://example.invalid/libuv/issues/1
Refs: https://example.invalid/libuv/pull/2
Upstream-Status: Submitted [https://example.invalid/libuv/pull/2]
Forwarded: https://example.invalid/libuv/pull/2
Last-Update: 2026-12-01
Signed-off-by: Test <test@invalid>
"""


def read(*parts):
    with open(os.path.join(*parts)) as f:
        return f.read()


class UpstreamTest(World):
    def setUp(self):
        super().setUp()
        self.make_patch(1, "core-bound-line5", {
            "src/core.c": CORE.replace("int line5 = 5;", "int line5 = 50;"),
            "test/test-core-line5.c": TEST_FILE}, subject=MESSAGE)
        self.make_patch(2, "timer-b", {"src/timer.c": "int timer_a = 1;\n"
                                       "int timer_b = 20;\n"
                                       "int timer_c = 3;\n"},
                        subject="timer: set timer_b\n\nIt was 2.\n\n"
                                "Use 20.\n\nUpstream-Status: Pending\n")
        self.dest = os.path.join(self.tmp, "send")
        # The sender's identity, as most users set it: ~/.gitconfig.
        self.gitconfig = os.path.join(self.tmp, "gitconfig")
        write(self.gitconfig, "[user]\n\tname = Global\n"
                              "\temail = global@invalid\n")

    def up(self, *args):
        return self.tool("upstream", *args,
                         env={"GIT_CONFIG_GLOBAL": self.gitconfig})

    def branches(self):
        return sorted(git(["branch", "--format=%(refname:short)"],
                          self.dest).stdout.split())

    def test_no_identity_refused(self):
        # No placeholder that a hurried sender could send as it is.
        res = self.tool("upstream", self.dest)
        self.assertFails(res, "no author for the commits: git has no "
                         "user.name and no user.email", "--author")
        self.assertEqual(res.returncode, 2)
        self.assertFalse(os.path.exists(self.dest))
        self.assertNotIn("you@example.com", res.stderr)

    def test_author_option(self):
        res = self.tool("upstream", "--author", "Ada Lovelace <ada@invalid>",
                        self.dest)
        self.assertOk(res)
        for b in self.branches():
            if b == "pr/base":
                continue
            got = git(["log", "-1", "--format=%an <%ae>|%cn <%ce>|%B", b],
                      self.dest).stdout
            self.assertTrue(got.startswith("Ada Lovelace <ada@invalid>|"
                                           "Ada Lovelace <ada@invalid>|"),
                            got)
            self.assertEqual(got.count("Signed-off-by:"), 1, got)
            self.assertIn("Signed-off-by: Ada Lovelace <ada@invalid>", got)

    def test_bad_author_refused(self):
        for bad, why in (("Ada Lovelace", "is not 'Name <email>'"),
                         ("<ada@invalid>", "is not 'Name <email>'"),
                         ("Ada <ada>", "is not 'Name <email>'"),
                         ("uvpatch <x@invalid>", "names this project's "
                                                 "tool")):
            res = self.tool("upstream", "--author", bad, self.dest)
            self.assertFails(res, why)
            self.assertEqual(res.returncode, 2)
            self.assertFalse(os.path.exists(self.dest))

    def test_sender_from_global_git_config(self):
        res = self.up(self.dest)
        self.assertOk(res)
        msg = git(["log", "-1", "--format=%B%n%an <%ae>",
                   "pr/01-core-bound-line5"], self.dest).stdout
        self.assertIn("Signed-off-by: Global <global@invalid>", msg)
        self.assertNotIn("Signed-off-by: Test <test@invalid>", msg)
        self.assertTrue(msg.rstrip().endswith("Global <global@invalid>"))

    def test_sender_from_repository_config(self):
        git(["init", "-q"], self.root)
        git(["config", "user.name", "Local"], self.root)
        git(["config", "user.email", "local@invalid"], self.root)
        self.assertOk(self.tool("upstream", self.dest))
        self.assertEqual(git(["log", "-1", "--format=%an <%ae>",
                              "pr/02-timer-b"], self.dest).stdout.strip(),
                         "Local <local@invalid>")

    def test_branches_mboxes_and_descriptions(self):
        res = self.up(self.dest)
        self.assertOk(res)
        self.assertEqual(res.stdout.strip(), self.dest)
        # 0001 fixes a named commit (Fixes:): it goes first.
        self.assertEqual(self.branches(), [
            "pr/01-core-bound-line5", "pr/02-timer-b", "pr/base"])
        # Each patch alone on the base.
        for b in self.branches():
            if b != "pr/base":
                self.assertEqual(git(["rev-parse", b + "^"], self.dest)
                                 .stdout.strip(), self.commit)
        msg = git(["log", "-1", "--format=%B",
                   "pr/01-core-bound-line5"], self.dest).stdout
        for gone in ("Upstream-Status", "Forwarded", "Last-Update",
                     "Test <test@invalid>"):
            self.assertNotIn(gone, msg)
        for kept in ("Fixes: https://example.invalid/libuv/issues/1",
                     "Refs: https://example.invalid/libuv/pull/2",
                     "Signed-off-by: Global <global@invalid>",
                     "Bound it to 50"):
            self.assertIn(kept, msg)
        mbox = read(self.dest, "01-core-bound-line5.mbox")
        self.assertIn("Subject: [PATCH] core: bound line5", mbox)
        self.assertIn("From: Global <global@invalid>", mbox)
        self.assertIn("base-commit: " + self.commit, mbox)
        self.assertNotIn("Upstream-Status", mbox)
        # The work tree is clean: the mboxes and texts are excluded.
        self.assertEqual(git(["status", "--porcelain"], self.dest).stdout,
                         "")

        md = read(self.dest, "01-core-bound-line5.md")
        self.assertTrue(md.startswith("# core: bound line5\n"))
        self.assertIn("## The defect\n\nline5 was unbounded", md)
        self.assertIn("## The fix\n\nBound it to 50", md)
        self.assertIn("## Measurements", md)
        self.assertIn("  max stall ms    120       2", md)
        self.assertIn("build/uv_run_tests_a core_line5_budget", md)
        self.assertIn("`test/test-core-line5.c`", md)
        self.assertIn("git checkout %s -- src/core.c" % self.commit[:12], md)
        # No invented result: without --check the text says so.
        self.assertIn("These tests were not run for this text", md)
        self.assertIn("- Fixes: https://example.invalid/libuv/issues/1", md)
        for local in (self.tmp, self.root, self.out, "Upstream-Status",
                      "Forwarded", "Last-Update"):
            self.assertNotIn(local, md)
        host = socket.gethostname()
        if len(host) > 3:
            self.assertNotIn(host, md)
        md2 = read(self.dest, "02-timer-b.md")
        self.assertIn("## The defect\n\nIt was 2.", md2)
        self.assertIn("## The fix\n\nUse 20.", md2)
        self.assertIn("adds or changes none of libuv's tests", md2)
        self.assertNotIn("## What the tests show", md2)
        # Nothing names this project's tool: texts, mails, messages.
        for name in os.listdir(self.dest):
            if name.endswith((".md", ".mbox")):
                self.assertNotIn("uvpatch", read(self.dest, name).lower())
        log = git(["log", "--all", "--format=%an %ae %cn %ce %B"],
                  self.dest).stdout
        self.assertNotIn("uvpatch", log.lower())
        # No local path in the repository's configuration either.
        self.assertNotIn(self.tmp, read(self.dest, ".git", "config"))

    def test_chosen_patch_only(self):
        self.assertOk(self.up("--patch", "2", self.dest))
        self.assertEqual(sorted(n for n in os.listdir(self.dest)
                                if n.startswith("0")),
                         ["01-timer-b.mbox", "01-timer-b.md"])

    def test_patch_that_builds_on_another_is_stacked(self):
        core = CORE.replace("int line5 = 5;", "int line5 = 500;")
        self.make_patch(3, "core-line5-more", {"src/core.c": core},
                        subject="core: raise line5 further\n\nMore.\n")
        res = self.up("--patch", "3", self.dest)
        self.assertOk(res)
        self.assertIn("0003-core-line5-more.patch needs "
                      "0001-core-bound-line5.patch", res.stderr)
        log = git(["log", "--format=%s", "pr/01-core-line5-more"],
                  self.dest).stdout.split("\n")
        self.assertEqual(log[:3], ["core: raise line5 further",
                                   "core: bound line5", "upstream"])
        md = read(self.dest, "01-core-line5-more.md")
        self.assertIn("This builds on another change", md)
        self.assertIn("- core: bound line5", md)
        mbox = read(self.dest, "01-core-line5-more.mbox")
        self.assertIn("[PATCH 1/2] core: bound line5", mbox)
        self.assertIn("[PATCH 2/2] core: raise line5 further", mbox)

    def test_stacked_on_the_fewest_it_needs(self):
        # 0003 changes line 30 after 0002 did, far from 0001's line 5 in
        # the same file, and 0004 the timer after 0003's change there:
        # 0003 needs 0002 alone, 0004 needs 0003 and so 0002, never 0001.
        core = CORE.replace("int line5 = 5;", "int line5 = 50;")
        core2 = core.replace("int line30 = 30;", "int line30 = 300;")
        self.make_patch(3, "core-line30", {"src/core.c": core2},
                        subject="core: set line30\n\nIt was 30.\n")
        core3 = core2.replace("int line30 = 300;", "int line30 = 301;")
        self.make_patch(4, "core-line30-again", {
            "src/core.c": core3,
            "src/timer.c": "int timer_a = 1;\nint timer_b = 21;\n"
                           "int timer_c = 3;\n"},
            subject="core: set line30 and timer_b again\n\nOnce more.\n")
        res = self.up(self.dest)
        self.assertOk(res)
        subjects = {}
        for b in self.branches():
            if b != "pr/base":
                subjects[b] = git(["log", "--format=%s", "%s..%s"
                                   % (self.commit, b)],
                                  self.dest).stdout.split("\n")[:-1]
        self.assertEqual(subjects, {
            "pr/01-core-bound-line5": ["core: bound line5"],
            "pr/02-timer-b": ["timer: set timer_b"],
            # 0001 has no part in line30: its own branch, not this one.
            "pr/03-core-line30": ["core: set line30"],
            "pr/04-core-line30-again": ["core: set line30 and timer_b "
                                        "again", "core: set line30",
                                        "timer: set timer_b"],
        })

    def test_order_fixes_then_smallest(self):
        # A bigger change that fixes a named commit goes before a smaller
        # one that does not; among equals, the smaller first.
        self.make_patch(3, "guide", {"docs/guide.rst": "Say more.\n"},
                        subject="doc: say more\n\nIt said little.\n\n"
                                "Say more.\n")
        big = "".join("int big%d;\n" % i for i in range(9))
        self.make_patch(4, "big", {"src/big.c": big},
                        subject="core: add big\n\nIt was small.\n\n"
                                "Add it.\n\nFixes: https://github.com/"
                                "libuv/libuv/issues/9\n")
        self.assertOk(self.up(self.dest))
        self.assertEqual(self.branches(), [
            "pr/01-core-bound-line5", "pr/02-big", "pr/03-guide",
            "pr/04-timer-b", "pr/base"])

    def test_bare_hash_trailer_refused(self):
        self.make_patch(3, "bare", {"README.md": "x\n"}, subject=(
            "doc: bare\n\nIt was bare.\n\nFixes: 80a5e3ba0 (\"linux: "
            "add MSG_ERRQUEUE\")\n"))
        res = self.up(self.dest)
        self.assertFails(res, "0003-bare.patch cannot go upstream",
                         "is not a URL", "https://github.com/libuv/libuv/"
                         "commit/")
        self.assertEqual(res.returncode, 3)
        self.assertFalse(os.path.exists(self.dest))

    def test_message_naming_the_tool_refused(self):
        self.make_patch(3, "tool", {"README.md": "x\n"}, subject=(
            "doc: tool\n\nRun `scripts/uvpatch test` to see it.\n"))
        res = self.up(self.dest)
        self.assertFails(res, "0003-tool.patch cannot go upstream",
                         "names this project's tool (scripts/uvpatch)")
        self.assertFalse(os.path.exists(self.dest))

    def test_unknown_patch(self):
        res = self.up("--patch", "7", self.dest)
        self.assertFails(res, "--patch 7", "0001-core-bound-line5.patch")
        self.assertFalse(os.path.exists(self.dest))

    def test_onto_a_newer_upstream(self):
        write(os.path.join(self.upstream, "src", "core.c"),
              "// moved down\n" + CORE)
        git(["commit", "-q", "-a", "-m", "newer"], self.upstream)
        git(["tag", "v0.0.2"], self.upstream)
        newer = git(["rev-parse", "HEAD"], self.upstream).stdout.strip()
        res = self.up("--onto", "v0.0.2", self.dest)
        self.assertOk(res)
        self.assertEqual(git(["rev-parse", "pr/01-core-bound-line5^"],
                             self.dest).stdout.strip(), newer)
        self.assertIn("// moved down\nint line0", read(self.dest, "src",
                                                       "core.c"))
        self.assertIn("v0.0.2", read(self.dest, "01-core-bound-line5.md"))

    def test_onto_conflict_is_refused(self):
        write(os.path.join(self.upstream, "src", "core.c"),
              CORE.replace("int line5 = 5;", "int line5 = 6;"))
        git(["commit", "-q", "-a", "-m", "conflicting"], self.upstream)
        res = self.up("--onto", "main", self.dest)
        self.assertFails(res, "0001-core-bound-line5.patch does not apply",
                         "src/core.c", "rebase --onto")
        self.assertFalse(os.path.exists(self.dest))
        self.assertEqual([n for n in os.listdir(self.tmp)
                          if n.startswith(".")], [])

    def test_already_upstream_is_refused(self):
        write(os.path.join(self.upstream, "src", "timer.c"),
              "int timer_a = 1;\nint timer_b = 20;\nint timer_c = 3;\n")
        git(["commit", "-q", "-a", "-m", "took it"], self.upstream)
        res = self.up("--onto", "main", "--patch", "2", self.dest)
        self.assertFails(res, "0002-timer-b.patch is already in")
        self.assertFalse(os.path.exists(self.dest))

    def test_missing_ref(self):
        res = self.up("--onto", "v9.9.9", self.dest)
        self.assertFails(res, "no commit, branch or tag 'v9.9.9'")
        self.assertFalse(os.path.exists(self.dest))

    def test_existing_dest_refused(self):
        os.makedirs(self.dest)
        self.assertFails(self.up(self.dest), "already exists")

    def test_local_path_in_message_refused(self):
        # The home folder: the test's own folders name the tool.
        home = os.path.realpath(os.path.expanduser("~"))
        self.make_patch(3, "leak", {"README.md": "x\n"},
                        subject="doc: leak\n\nSeen in %s/build.\n" % home)
        res = self.up(self.dest)
        self.assertFails(res, "0003-leak.patch", "would reveal")
        self.assertFalse(os.path.exists(self.dest))


class PrTextTest(unittest.TestCase):
    def test_sections(self):
        body = MESSAGE.split("\n")[2:]
        part = prtext.sections(message.clean_message(body))
        self.assertEqual(part["defect"][0][0][:20], "line5 was unbounded:")
        self.assertEqual(part["fix"][0][0][:12], "Bound it to ")
        self.assertEqual(len(part["table"]), 2)
        self.assertIn("Signed-off-by: Test <test@invalid>", part["trailers"])

    def test_markdown_table_kept(self):
        body = ["It broke.", "", "Fix it.", "", "| | before | after |",
                "|---|---|---|", "| ms | 9 | 1 |"]
        md = prtext.pull_request("x: y", body, "base")
        self.assertIn("| | before | after |\n|---|---|---|", md)

    def test_upstream_body_signed_off_once_by_the_sender(self):
        body = MESSAGE.split("\n")[2:] + ["Signed-off-by: Other <o@x>"]
        got = prtext.upstream_body(body, "Ada <ada@invalid>")
        self.assertEqual(got[-3:], [
            "Fixes: https://example.invalid/libuv/issues/1",
            "Refs: https://example.invalid/libuv/pull/2",
            "Signed-off-by: Ada <ada@invalid>"])
        self.assertEqual(sum(ln.startswith("Signed-off-by") for ln in got),
                         1)
        self.assertFalse(any(ln.startswith(("Upstream-Status", "Forwarded"))
                             for ln in got))
        # No trailer paragraph: the sign-off gets one of its own.
        self.assertEqual(prtext.upstream_body(["It broke.", "",
                                               "Fix it."], "A <a@b>"),
                         ["It broke.", "", "Fix it.", "",
                          "Signed-off-by: A <a@b>"])

    def test_results_and_not_run(self):
        block = {"title": "Run 2026-12-04 10:00 UTC on Linux 6.18 x86_64.",
                 "columns": ("unpatched 6179e7af8741", "with the change"),
                 "rows": [("udp_recv_budget_mmsg",
                           ("FAIL", "exit status 1; Assertion failed"),
                           ("PASS", "")),
                          ("udp_recv_budget", ("PASS", ""), ("PASS", ""))],
                 "notes": ["libuv's UDP tests on the branch: 43 pass."]}
        tests = [("test/test-udp-recv-budget.c", "udp_recv_budget_mmsg"),
                 ("test/test-udp-recv-budget.c", "udp_recv_budget")]
        md = prtext.pull_request("x: y", ["It broke.", "", "Fix it."],
                                 "libuv v1.x", tests=tests, results=[block])
        self.assertIn("## What the tests show\n\nRun 2026-12-04 10:00 UTC "
                      "on Linux 6.18 x86_64.\n\n| test | unpatched "
                      "6179e7af8741 | with the change |", md)
        self.assertIn("| `udp_recv_budget_mmsg` | fail: exit status 1; "
                      "Assertion failed | pass |", md)
        self.assertIn("libuv's UDP tests on the branch: 43 pass.", md)
        none = prtext.pull_request("x: y", ["It broke."], "libuv v1.x",
                                   tests=tests)
        self.assertIn("These tests were not run for this text", none)
        self.assertNotIn("| test |", none)
        for text in (md, none):
            self.assertNotIn("before and after", text)
            self.assertEqual(message.tool_names(text), [])

    def test_related_pull_request_cited(self):
        body = ["It broke.", "", "Convert it first. The open pull request",
                "5243 fixes the same line; either can land. Unrelated 52430.",
                "", "Refs: https://github.com/libuv/libuv/pull/5243",
                "Refs: https://github.com/golang/go/issues/44343"]
        self.assertEqual(prtext.related(body), [
            "#5243 (pull request, Refs): The open pull request 5243 fixes "
            "the same line; either can land."])
        md = prtext.pull_request("x: y", body, "base")
        self.assertIn("## Related\n\n- #5243 (pull request, Refs)", md)

    def test_windows_only_change_says_where(self):
        md = prtext.pull_request("win: y", ["It broke.", "", "Fix it."],
                                 "libuv v1.x", tests=[("test/t.c", "t")],
                                 system="Windows", depends=["a: b"],
                                 base_ref="6179e7af8741",
                                 revert=["src/win/core.c"])
        self.assertIn("(in `test/t.c`). On Windows, with the change, on "
                      "libuv v1.x:", md)
        self.assertIn("without the changes of this branch", md)
        self.assertIn("git checkout 6179e7af8741 -- src/win/core.c", md)


DIFF_ADD = """diff --git a/test/test-a.c b/test/test-a.c
new file mode 100644
--- /dev/null
+++ b/test/test-a.c
@@ -0,0 +1,4 @@
+TEST_IMPL(a_one) {
+  return 0;
+}
+TEST_IMPL(a_two) {
"""
B_FILE = """static int helper(void) {
  return 1;
}

TEST_IMPL(b_one) {
  return helper();
}

TEST_IMPL(b_two) {
  return 0;
}
"""


class OwnTestsTest(unittest.TestCase):
    def test_added(self):
        self.assertEqual(prtext.own_tests(DIFF_ADD, lambda p: None), [
            ("test/test-a.c", "a_one"), ("test/test-a.c", "a_two")])

    def diff_b(self, new_line, old="  return 0;", new="  return 2;"):
        return ("diff --git a/test/test-b.c b/test/test-b.c\n"
                "--- a/test/test-b.c\n+++ b/test/test-b.c\n"
                "@@ -%d,3 +%d,3 @@\n ctx\n-%s\n+%s\n ctx\n"
                % (new_line - 1, new_line - 1, old, new))

    def test_changed_body_only(self):
        got = prtext.own_tests(self.diff_b(10), lambda p: B_FILE)
        self.assertEqual(got, [("test/test-b.c", "b_two")])

    def test_changed_helper_counts_for_all(self):
        got = prtext.own_tests(self.diff_b(2), lambda p: B_FILE)
        self.assertEqual(got, [("test/test-b.c", "b_one"),
                               ("test/test-b.c", "b_two")])

    def test_not_a_test_file(self):
        diff = self.diff_b(10).replace("test/test-b.c", "src/b.c")
        self.assertEqual(prtext.own_tests(diff, lambda p: B_FILE), [])


class TestPartTest(unittest.TestCase):
    DIFF = """diff --git a/CMakeLists.txt b/CMakeLists.txt
index 1..2 100644
--- a/CMakeLists.txt
+++ b/CMakeLists.txt
@@ -10,2 +10,3 @@
   src/a.c
+  src/new.c
   src/b.c
@@ -50,2 +51,3 @@
   test/test-a.c
+  test/test-new.c
   test/test-b.c
diff --git a/src/unix/udp.c b/src/unix/udp.c
--- a/src/unix/udp.c
+++ b/src/unix/udp.c
@@ -1 +1 @@
-int a;
+int b;
diff --git a/test/test-new.c b/test/test-new.c
new file mode 100644
--- /dev/null
+++ b/test/test-new.c
@@ -0,0 +1 @@
+TEST_IMPL(n) {
"""

    def test_tests_and_their_build_entries_only(self):
        got = prtext.test_part(self.DIFF)
        self.assertIn("+  test/test-new.c", got)
        self.assertNotIn("src/new.c", got)
        self.assertNotIn("udp.c", got)
        self.assertIn("+TEST_IMPL(n) {", got)
        self.assertEqual(got.count("diff --git a/CMakeLists.txt"), 1)
        self.assertTrue(got.startswith("diff --git a/CMakeLists.txt"))

    def test_nothing_of_tests(self):
        self.assertEqual(prtext.test_part(self.DIFF.split(
            "diff --git a/test/")[0].replace("test/test-new.c",
                                             "src/x.c")), "")


class TargetsTest(unittest.TestCase):
    def test_where_the_code_runs(self):
        t = prcheck.targets_of
        win = ["src/win/core.c", "src/uv-common.h", "CMakeLists.txt",
               "test/test-timer-precision.c", "docs/src/timer.rst"]
        self.assertEqual(t(win, {"windows"}, "linux"), ["windows"])
        self.assertEqual(t(win, set(), "linux"), ["windows"])
        self.assertEqual(t(["src/unix/udp.c", "test/t.c"], {"unix"},
                           "linux"), ["linux"])
        self.assertEqual(t(["src/uv-common.c"], set(), "linux"), ["linux"])
        self.assertEqual(t(["src/win/core.c", "src/unix/core.c"], set(),
                           "linux"), ["linux", "windows"])
        self.assertEqual(t(["include/uv/unix.h"], set(), "linux"),
                         ["linux"])


# A libuv in small that CMake builds: its static library and a test
# runner that lists its tests and runs one by name, as libuv's does.
FAKE_CMAKE = """cmake_minimum_required(VERSION 3.13)
project(fakeuv C)
add_library(uv_a STATIC src/core.c src/timer.c)
add_executable(uv_run_tests_a test/run.c
  test/test-udp.c
  )
target_link_libraries(uv_run_tests_a uv_a)
"""
FAKE_RUNNER = """#include <stdio.h>
#include <string.h>
#define TEST_DECLARE(name) int run_test_##name(void);
#include "test-list.h"
#undef TEST_DECLARE
#define TEST_DECLARE(name) {#name, run_test_##name},
static struct { const char* name; int (*fn)(void); } tests[] = {
#include "test-list.h"
  {NULL, NULL}};
int main(int argc, char** argv) {
  int i;
  for (i = 0; tests[i].name; i++) {
    if (strcmp(argv[1], "--list") == 0)
      puts(tests[i].name);
    else if (strcmp(argv[1], tests[i].name) == 0)
      return tests[i].fn();
  }
  return strcmp(argv[1], "--list") == 0 ? 0 : 2;
}
"""
TASK_H = "#define TEST_IMPL(name) int run_test_##name(void)\n"
CORE_TEST = """#include <stdio.h>
#include "task.h"
extern int line5;

TEST_IMPL(core_line5) {
  if (line5 != 50)
    fprintf(stderr, "Assertion failed in %s: line5 == %d\\n", __FILE__,
            line5);
  return line5 == 50 ? 0 : 1;
}
"""


@unittest.skipUnless(shutil.which("cmake") and shutil.which("ninja") and
                     shutil.which("cc"), "needs cmake, ninja and cc")
class UpstreamCheckTest(World):
    """upstream --check on a libuv in small: each branch built alone, its
    own tests run unpatched and patched, the results in its text."""

    def setUp(self):
        super().setUp()
        for name, text in (("CMakeLists.txt", FAKE_CMAKE),
                           ("test/run.c", FAKE_RUNNER),
                           ("test/task.h", TASK_H),
                           ("test/test-list.h", "TEST_DECLARE(udp_fake)\n"),
                           ("test/test-udp.c", '#include "task.h"\n\n'
                            "TEST_IMPL(udp_fake) {\n  return 0;\n}\n")):
            write(os.path.join(self.upstream, name), text)
        git(["add", "-A"], self.upstream)
        git(["commit", "-q", "-m", "buildable"], self.upstream)
        self.commit = git(["rev-parse", "HEAD"], self.upstream).stdout.strip()
        self.deps["upstream"]["commit"] = self.commit
        self.deps["upstream"]["tree"] = git(
            ["rev-parse", "HEAD^{tree}"], self.upstream).stdout.strip()
        self.save_deps()
        self.dest = os.path.join(self.tmp, "send")

    def fix_with_test(self, number, value, subject):
        core = CORE.replace("int line5 = 5;", "int line5 = %d;" % value)
        return self.make_patch(number, "core-line5", {
            "src/core.c": core,
            "CMakeLists.txt": FAKE_CMAKE.replace(
                "  test/test-udp.c\n", "  test/test-core.c\n"
                "  test/test-udp.c\n"),
            "test/test-list.h": "TEST_DECLARE(core_line5)\n"
                                "TEST_DECLARE(udp_fake)\n",
            "test/test-core.c": CORE_TEST}, subject=subject)

    def test_own_tests_unpatched_and_patched(self):
        self.fix_with_test(1, 50, "core: set line5\n\nIt was 5.\n\n"
                                  "Set it to 50.\n")
        self.make_patch(2, "timer-b", {"src/timer.c": "int timer_a = 1;\n"
                                       "int timer_b = 20;\n"
                                       "int timer_c = 3;\n"},
                        subject="timer: set timer_b\n\nIt was 2.\n\n"
                                "Use 20.\n")
        res = self.tool("upstream", "--author", "Ada <ada@invalid>",
                        "--check", self.dest)
        self.assertOk(res)
        self.assertIn("PASS upstream 01-core-line5 linux: builds alone; its "
                      "1 test(s): 1 pass (unpatched: 1 fail); 1 UDP tests "
                      "pass, 0 skip themselves", res.stdout)
        self.assertIn("PASS upstream 02-timer-b linux: builds alone; it has "
                      "no test of its own; 1 UDP tests pass", res.stdout)
        md = read(self.dest, "01-core-line5.md")
        self.assertIn("| `core_line5` | fail: exit status 1; Assertion "
                      "failed in test/test-core.c: line5 == 5 | pass |", md)
        self.assertIn("`uname -srm`", md)
        self.assertIn("Unpatched: %s with only the test changes"
                      % self.commit[:12], md)
        self.assertIn("libuv's UDP tests on the branch: 1 pass", md)
        self.assertNotIn("not run", md)
        for local in (self.tmp, self.out):
            self.assertNotIn(local, md)
        self.assertEqual(message.tool_names(md), [])
        # One tree and one build folder served both branches and sides.
        builds = os.listdir(os.path.join(self.work, "build"))
        self.assertEqual(builds, ["linux-pr-Release"])

    @unittest.skipUnless(shutil.which("ccache"), "needs ccache")
    def test_checkout_and_build_under_one_folder(self):
        # As a new user who clones under /tmp: the tool's checkout and the
        # build folder share a parent, which ccache then takes as its base
        # folder and writes __FILE__ relative to the build folder. The
        # text must still name the test's file as libuv has it.
        # Spaces too, as in a home folder named "My Projects".
        checkout = os.path.join(self.tmp, "my checkout")
        out = os.path.join(self.tmp, "out dir")
        shutil.copytree(os.path.join(fixture.REPO, "scripts"),
                        os.path.join(checkout, "scripts"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        self.fix_with_test(1, 51, "core: set line5\n\nIt was 5.\n\n"
                                  "Set it to 51.\n")
        env = dict(os.environ, XDG_CACHE_HOME=self.cache,
                   GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
                   CCACHE_DIR=os.path.join(self.tmp, "ccache"))
        env.pop("UVPATCH_CCACHE", None)
        env.pop("UVPATCH_SOURCE", None)
        res = subprocess.run(
            [sys.executable, os.path.join(checkout, "scripts", "uvpatch"),
             "--repo", self.root, "--out", out, "upstream", "--author",
             "Ada <ada@invalid>", "--check", self.dest], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertFails(res, "1 branch(es) fail on their own")
        md = read(self.dest, "01-core-line5.md")
        self.assertIn("Assertion failed in test/test-core.c: line5 == 5 |",
                      md)
        self.assertIn("Assertion failed in test/test-core.c: line5 == 51 |",
                      md)
        self.assertNotIn("../", md)
        self.assertNotIn(self.tmp, md)
        self.assertNotIn("out dir", md)

    def test_failing_own_test_fails_the_check(self):
        # The "fix" sets 51: its own test fails on the branch.
        self.fix_with_test(1, 51, "core: set line5\n\nIt was 5.\n\n"
                                  "Set it to 51.\n")
        res = self.tool("upstream", "--author", "Ada <ada@invalid>",
                        "--check", self.dest)
        self.assertFails(res, "1 branch(es) fail on their own")
        self.assertIn("FAIL upstream 01-core-line5 linux: builds alone; its "
                      "1 test(s): 1 fail", res.stdout)
        # DEST is kept, and its text says what failed.
        md = read(self.dest, "01-core-line5.md")
        self.assertIn("| `core_line5` | fail: exit status 1; Assertion "
                      "failed in test/test-core.c: line5 == 5 | fail: exit "
                      "status 1; Assertion failed in test/test-core.c: "
                      "line5 == 51 |", md)

"""check knows the regression cases: every program and case deps.json
names is in tests/regress (read from the C sources' case tables, without
a build), with a "did you mean" for a near miss; and a patch of our own
is signed off by its author."""

import json
import os
import shutil
import tempfile
import unittest

from fixture import REPO, World, git, write

from uvpatchlib.series.cases import known_cases, name_problems
from uvpatchlib.series.check import lint_message

from test_check import DIFF


def own_patch(author, signed):
    return ("From 0000000000000000000000000000000000000000 Mon Sep 17 "
            "00:00:00 2001\nFrom: %s\nDate: Mon, 1 Jan 2024 00:00:00 +0000\n"
            "Subject: [PATCH] core: fix it\n\nIt broke.\n\n"
            "Upstream-Status: Pending\nForwarded: no\n"
            "Last-Update: 2026-12-03\n%s%s"
            % (author, "".join("Signed-off-by: %s\n" % s for s in signed),
               DIFF))


class CaseTableTest(unittest.TestCase):
    """The reader on programs written the ways tests/regress writes
    them."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="uvpatch-cases-")
        self.addCleanup(shutil.rmtree, self.root, True)
        self.regress = os.path.join(self.root, "tests", "regress")

    def put(self, rel, text):
        write(os.path.join(self.regress, rel), text)

    def test_one_file_table(self):
        self.put("plain.c", """/* a comment that doesn't close a "string */
static const test_case cases[] = {
  { "first_case", first_case },  /* it's first */
  { "threaded", threaded, CASE_THREADS },
#ifdef _WIN32
  { "windows_only", windows_only },
#endif
  { NULL, NULL }
};
""")
        self.assertEqual(known_cases(self.root), {
            "plain": ["first_case", "threaded", "windows_only"]})

    def test_folder_with_x_macro_table(self):
        # The list in the header, the table in main.c stringizing each
        # name; an argument holds a call with commas of its own.
        self.put("matrix/matrix.h", """#define MATRIX(X) \\
  X(cell_v4, run(1, 2)) \\
  X(cell_v6, run(3, 4))
""")
        self.put("matrix/cells.c", "int run(int a, int b);\n")
        self.put("matrix/main.c", """#include "matrix.h"
#define MATRIX_FN(name, body) static int case_##name(void) { return body; }
MATRIX(MATRIX_FN)
#define MATRIX_ENTRY(name, body) { #name, case_##name, 0 },
static const test_case cases[] = {
  MATRIX(MATRIX_ENTRY)
  { "extra", extra, 0 },
  { NULL, NULL, 0 }
};
""")
        self.assertEqual(known_cases(self.root),
                         {"matrix": ["cell_v4", "cell_v6", "extra"]})

    def test_no_table(self):
        self.put("broken.c", "int main(void) { return 0; }\n")
        known = known_cases(self.root)
        self.assertEqual(known, {"broken": None})
        self.assertEqual(name_problems(
            {"proof": [{"target": "linux", "cases": ["broken/x"]}]}, known),
            ["proof names broken/x, but no table of cases was found in "
             "tests/regress/broken"])

    def test_near_misses(self):
        known = {"timer_due_in": ["stopped_timer", "late_timer"],
                 "udp_budget": ["backlog"]}
        problems = name_problems({
            "tests": ["timer_due", "udp_budget"],
            "proof": [{"target": "linux",
                       "cases": ["timer_due_in/stoped_timer",
                                 "timer_due/late_timer",
                                 "udp_budget/backlog"]}],
            "repairs": ["udp_budget/nothing_like_it"]}, known)
        self.assertEqual(problems, [
            "tests names timer_due, which is no program of tests/regress "
            "(did you mean timer_due_in?)",
            "proof names timer_due_in/stoped_timer, which is no case of "
            "timer_due_in (did you mean timer_due_in/stopped_timer?)",
            "proof names timer_due/late_timer, but tests/regress has no "
            "program timer_due (did you mean timer_due_in/late_timer?)",
            "repairs names udp_budget/nothing_like_it, which is no case of "
            "udp_budget"])


class RepositoryNamesTest(unittest.TestCase):
    """This repository's deps.json names only cases that exist."""

    def test_every_named_case_exists(self):
        known = known_cases(REPO)
        self.assertTrue(known)
        self.assertNotIn(None, known.values(), known)
        with open(os.path.join(REPO, "deps.json"), encoding="utf-8") as f:
            doc = json.load(f)
        problems = ["%s %s: %s" % (base["name"], entry["file"], p)
                    for base in doc["bases"] for entry in base["series"]
                    for p in name_problems(entry, known)]
        self.assertEqual(problems, [])


class AuthorTest(unittest.TestCase):
    def test_author_signs_off(self):
        me = "Ada Lovelace <ada@example.org>"
        self.assertEqual(lint_message("0001-x.patch", own_patch(me, [me])),
                         [])
        # Another sign-off beside the author's is fine; case of the
        # address is not a difference.
        self.assertEqual(lint_message("0001-x.patch", own_patch(
            "Ada Lovelace <ADA@example.org>", ["Bob <bob@example.org>", me])),
            [])

    def test_machine_identity_above_the_sign_off(self):
        problems = lint_message("0001-x.patch", own_patch(
            "root <root@buildhost.localdomain>",
            ["Ada Lovelace <ada@example.org>"]))
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("From: root <root@buildhost.localdomain> is not among "
                      "its Signed-off-by: (Ada Lovelace <ada@example.org>)",
                      problems[0])

    def test_backport_keeps_upstream_author(self):
        text = own_patch("Upstream <up@example.org>",
                         ["Ada Lovelace <ada@example.org>"]).replace(
            "Upstream-Status: Pending\nForwarded: no\n",
            "Origin: upstream, https://github.com/libuv/libuv/commit/%s\n"
            "Upstream-Status: Backport\n" % ("a" * 40))
        self.assertEqual(lint_message("0001-x.patch", text), [])


OWN = ("core: fix it\n\nIt broke.\n\nUpstream-Status: Pending\n"
       "Forwarded: no\nLast-Update: 2026-12-03\n"
       "Signed-off-by: Test <test@invalid>\n")


class CheckNamesCommandTest(World):
    """What a newcomer wrote: a program that does not exist and a typo
    in a proof. check fails at once, naming both."""

    def setUp(self):
        super().setUp()
        self.make_patch(1, "core-fix", {"src/core.c": "int fixed;\n"},
                        subject=OWN)
        self.add_program("timer_due_in", ["stopped_timer"])
        self.assertOk(self.tool("apply"))
        self.assertOk(self.tool("refresh"))
        self.deps = self.base_now()
        self.name = self.deps["series"][0]["file"]

    def named(self, tests, cases):
        self.deps["series"][0]["tests"] = tests
        self.deps["series"][0]["proof"] = [{"target": "linux",
                                            "cases": cases}]
        self.save_deps()
        return self.tool("check")

    def test_missing_names_fail(self):
        res = self.named(["timer_due"], ["timer_due_in/stoped_timer"])
        self.assertFails(res, "1 check(s) of the series failed")
        self.assertIn("FAIL check %s: " % self.name, res.stdout)
        self.assertIn("tests names timer_due, which is no program of "
                      "tests/regress (did you mean timer_due_in?)",
                      res.stdout)
        self.assertIn("proof names timer_due_in/stoped_timer, which is no "
                      "case of timer_due_in (did you mean "
                      "timer_due_in/stopped_timer?)", res.stdout)

    def test_right_names_pass(self):
        res = self.named(["timer_due_in"], ["timer_due_in/stopped_timer"])
        self.assertOk(res)
        self.assertIn("1 proof case(s); the programs and cases it names "
                      "are in tests/regress", res.stdout)

    def test_commit_by_another_identity_fails(self):
        self.named(["timer_due_in"], ["timer_due_in/stopped_timer"])
        src = os.path.join(self.work, "src")
        git(["commit", "-q", "--amend", "--no-edit", "--author",
             "root <root@localhost>"], src)
        self.assertOk(self.tool("refresh"))
        res = self.tool("check")
        self.assertFails(res, "1 check(s) of the series failed")
        self.assertIn("From: root <root@localhost> is not among its "
                      "Signed-off-by: (Test <test@invalid>)", res.stdout)


if __name__ == "__main__":
    unittest.main()

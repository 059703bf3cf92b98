"""check's lint of patch messages: our own patches follow libuv's style
rules, backports keep upstream's message and must say where they come
from."""

import json
import os
import unittest

from fixture import World, git

from uvpatchlib.series.check import lint_message, proof_problems
from uvpatchlib.series.patchfile import Patch

COMMIT = "80a5e3ba0" + "0" * 31
# Longer than 50 characters and not in lower case after the subsystem:
# what an upstream subject may look like.
LONG_SUBJECT = "linux: add MSG_ERRQUEUE ipv4/ipv6 udp support for real"
DIFF = """---
 src/core.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/src/core.c b/src/core.c
index 0000000..1111111 100644
--- a/src/core.c
+++ b/src/core.c
@@ -1 +1,2 @@
 int a;
+int b;
"""


def patch_text(subject, body):
    return ("From 0000000000000000000000000000000000000000 Mon Sep 17 "
            "00:00:00 2001\nFrom: Test <test@invalid>\n"
            "Date: Mon, 1 Jan 2024 00:00:00 +0000\nSubject: [PATCH] %s\n\n"
            "%s%s" % (subject, body, DIFF))


BACKPORT_BODY = (
    "A paragraph of upstream's own, which may run on for quite a bit longer "
    "than seventy-two columns.\n\n"
    "Origin: upstream, https://github.com/libuv/libuv/commit/%s\n"
    "Upstream-Status: Backport\nLast-Update: 2026-12-02\n" % COMMIT)


def applied_backport(world):
    """One backport patch in ``world``'s series, applied and refreshed
    into its canonical form and name."""
    world.make_patch(1, "core-one", {"src/core.c": "int x;\n"},
                     subject=LONG_SUBJECT + "\n\n" + BACKPORT_BODY)
    world.deps["series"][0]["upstream_status"] = "Backport"
    world.deps["series"][0]["no_proof"] = "upstream's own test covers it"
    world.save_deps()
    world.assertOk(world.tool("apply"))
    world.assertOk(world.tool("refresh"))


class LintTest(unittest.TestCase):
    def test_backport_keeps_upstream_message(self):
        self.assertGreater(len(LONG_SUBJECT), 50)
        problems = lint_message("0001-x.patch",
                                patch_text(LONG_SUBJECT, BACKPORT_BODY))
        self.assertEqual(problems, [])

    def test_same_message_of_our_own_is_refused(self):
        body = BACKPORT_BODY.replace("Backport", "Pending")
        problems = lint_message("0001-x.patch",
                                patch_text(LONG_SUBJECT, body))
        text = "; ".join(problems)
        self.assertIn("subject is %d characters, more than 50"
                      % len(LONG_SUBJECT), text)
        self.assertIn("message line 1 is", text)
        self.assertIn("no Forwarded: field", text)
        self.assertIn("no Signed-off-by: field", text)

    def test_backport_needs_origin(self):
        for origin in (None, "upstream, https://github.com/libuv/libuv/"
                       "commit/80a5e3ba0",  # not the full id
                       "https://github.com/libuv/libuv/commit/" + COMMIT):
            lines = [ln for ln in BACKPORT_BODY.split("\n")
                     if not ln.startswith("Origin: ")]
            if origin:
                lines.insert(2, "Origin: " + origin)
            problems = lint_message("0001-x.patch", patch_text(
                LONG_SUBJECT, "\n".join(lines)))
            self.assertEqual(problems, [
                "a backport needs 'Origin: upstream, <url>/commit/<40-hex "
                "id>'"], origin)

    def test_backport_needs_last_update(self):
        body = BACKPORT_BODY.replace("Last-Update: 2026-12-02\n", "")
        self.assertEqual(lint_message("0001-x.patch",
                                      patch_text(LONG_SUBJECT, body)),
                         ["no Last-Update: field"])


OWN_BODY = ("It broke.\n\nFix it.\n\n%s\nUpstream-Status: Pending\n"
            "Forwarded: no\nLast-Update: 2026-12-03\n"
            "Signed-off-by: Test <test@invalid>\n")


class EncodedSubjectTest(unittest.TestCase):
    """refresh runs git format-patch --encode-email-headers: a subject
    that is not ASCII comes as RFC 2047 encoded words, folded."""

    # As git 2.47 writes "unix: don’t read the café's queue twice".
    ENCODED = ("=?UTF-8?q?unix:=20don=E2=80=99t=20read=20the=20caf=C3=A9's"
               "=20qu?=\n =?UTF-8?q?eue=20twice?=")

    def test_subject_is_decoded(self):
        text = patch_text(self.ENCODED, OWN_BODY % "")
        self.assertEqual(Patch(text).subject,
                         "unix: don\u2019t read the caf\u00e9's queue twice")
        # 39 characters, not the 89 of the encoded form; and lower case.
        self.assertEqual(lint_message("0001-x.patch", text), [])

    def test_plain_folded_subject(self):
        text = patch_text("core: a subject\n that git folded", OWN_BODY % "")
        self.assertEqual(Patch(text).subject,
                         "core: a subject that git folded")

    def test_broken_encoding_is_kept_as_it_is(self):
        text = patch_text("=?UTF-8?q?core:=20fix", OWN_BODY % "")
        self.assertEqual(Patch(text).subject, "=?UTF-8?q?core:=20fix")


class UpstreamFormTest(unittest.TestCase):
    """A message of our own goes upstream: its trailers in libuv's URL
    form, and no word about this project's tool."""

    def lint(self, trailers, subject="core: fix it", body=OWN_BODY):
        return lint_message("0001-x.patch",
                            patch_text(subject, body % trailers))

    def test_url_trailers_pass(self):
        self.assertEqual(self.lint(
            "Fixes: https://github.com/libuv/libuv/commit/%s\n"
            "Refs: https://github.com/libuv/libuv/pull/5243\n"
            "Refs: https://github.com/golang/go/issues/44343" % COMMIT), [])

    def test_bare_hash_trailers_refused(self):
        for trailer in ('Fixes: 9f0101dcb ("linux: close streams")',
                        "Refs: " + COMMIT, "Fixes: #4447",
                        "refs: 80a5e3ba0"):
            problems = self.lint(trailer)
            self.assertEqual(len(problems), 1, trailer)
            self.assertIn("'%s' is not a URL" % trailer, problems[0])
            self.assertIn("https://github.com/libuv/libuv/commit/",
                          problems[0])

    def test_naming_the_tool_refused(self):
        body = OWN_BODY.replace("Fix it.", "Fix it; `scripts/uvpatch test` "
                                "shows it.")
        problems = self.lint("", body=body)
        self.assertEqual(problems, [
            "names this project's tool (scripts/uvpatch): upstream's "
            "history has no use for it"])
        self.assertEqual(len(self.lint("", subject="uvpatch: fix it")), 1)

    def test_fork_fields_and_sign_off_not_counted(self):
        # DEP-3 fields and the sign-off are replaced on the way out.
        body = OWN_BODY.replace("Forwarded: no", "Forwarded: no, see "
                                "uvpatch notes")
        self.assertEqual(self.lint("", body=body), [])

    def test_backport_keeps_upstream_trailers(self):
        body = BACKPORT_BODY.replace("Origin:", "Fixes: 9f0101dcb\nOrigin:")
        self.assertEqual(lint_message("0001-x.patch",
                                      patch_text(LONG_SUBJECT, body)), [])


class ProofRuleTest(unittest.TestCase):
    """A fix of our own names a proof case; a backport or a tests-only
    patch without one says why."""

    def problems(self, status="Pending", subject="core: fix it",
                 diff=DIFF, **fields):
        entry = {"file": "0001-x.patch", "upstream_status": status}
        entry.update(fields)
        text = patch_text(subject, OWN_BODY % "").replace(DIFF, diff)
        return proof_problems(entry, text)

    PROOF = [{"target": "linux", "cases": ["udp_x/fails_before"]}]

    def test_fix_needs_a_proof(self):
        for status in ("Pending", "Submitted", "Accepted", "Inappropriate"):
            problems = self.problems(status)
            self.assertEqual(len(problems), 1, status)
            self.assertIn("a fix patch (Upstream-Status %s, not tests-only) "
                          "must name a proof case in deps.json" % status,
                          problems[0])
        # A reason does not stand in for a fix's proof.
        self.assertEqual(len(self.problems(no_proof="hard to test")), 1)
        self.assertEqual(self.problems(proof=self.PROOF), [])

    def test_backport_says_why_it_has_none(self):
        problems = self.problems("Backport")
        self.assertEqual(problems, [
            "a backport with no proof case must say why in deps.json: "
            "\"no_proof\": \"reason\""])
        self.assertEqual(self.problems("Backport", no_proof="upstream's "
                                       "test covers it"), [])
        self.assertEqual(self.problems("Backport", proof=self.PROOF), [])

    def test_tests_only_says_why_it_has_none(self):
        tests_diff = DIFF.replace("src/core.c", "test/test-core.c")
        for subject, diff in (("test: cover it", DIFF),
                              ("core: cover it", tests_diff)):
            problems = self.problems(subject=subject, diff=diff)
            self.assertEqual(problems, [
                "a tests-only patch with no proof case must say why in "
                "deps.json: \"no_proof\": \"reason\""], subject)
            self.assertEqual(self.problems(subject=subject, diff=diff,
                                           no_proof="passes on the base"),
                             [])

    def test_proof_and_reason_together(self):
        self.assertEqual(self.problems(proof=self.PROOF, no_proof="why"), [
            "deps.json names proof cases and a no_proof reason: keep one"])


class CheckCommandTest(World):
    """check through the CLI, on a series holding a backport."""

    def test_check_passes_a_backport_and_fails_without_origin(self):
        applied_backport(self)
        res = self.tool("check")
        self.assertOk(res)
        name = self.base_now()["series"][0]["file"]
        self.assertIn("PASS check %s: canonical (refresh would not change "
                      "it); upstream's message with Origin: upstream's "
                      "commit, Upstream-Status and Last-Update; no proof "
                      "case: upstream's own test covers it" % name,
                      res.stdout)

        # The same patch without its Origin: line fails check.
        src = os.path.join(self.work, "src")
        message = git(["log", "-1", "--format=%B"], src).stdout
        git(["commit", "-q", "--amend", "-m", "\n".join(
            ln for ln in message.split("\n")
            if not ln.startswith("Origin: "))], src)
        self.assertOk(self.tool("refresh"))
        res = self.tool("check")
        self.assertFails(res, "1 check(s) of the series failed")
        self.assertIn("FAIL check %s: a backport needs 'Origin: upstream, "
                      % self.base_now()["series"][0]["file"], res.stdout)

    def test_check_fails_a_fix_without_proof(self):
        self.make_patch(1, "core-fix", {"src/core.c": "int fixed;\n"},
                        subject="core: fix it\n\n" + OWN_BODY % "")
        self.assertOk(self.tool("apply"))
        self.assertOk(self.tool("refresh"))
        name = self.base_now()["series"][0]["file"]
        res = self.tool("check")
        self.assertFails(res, "1 check(s) of the series failed")
        self.assertIn("FAIL check %s: a fix patch (Upstream-Status Pending, "
                      "not tests-only) must name a proof case in deps.json"
                      % name, res.stdout)
        self.deps = self.base_now()
        self.deps["series"][0]["proof"] = [
            {"target": "linux", "cases": ["core/fails_before"]}]
        self.save_deps()
        self.add_program("core", ["fails_before"])
        res = self.tool("check")
        self.assertOk(res)
        self.assertIn("PASS check %s: canonical (refresh would not change "
                      "it); 'subsystem: summary' subject of at most 50 "
                      "characters" % name, res.stdout)
        self.assertIn("; 1 proof case(s)", res.stdout)

    def test_check_fails_deps_in_another_form(self):
        # A file typed in another form, here one line: carry and refresh
        # would rewrite it, so check says so first, and names the
        # command as typed for the default base: without --base.
        applied_backport(self)
        path = os.path.join(self.root, "deps.json")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(doc) + "\n")
        res = self.tool("check")
        self.assertFails(res, "1 check(s) of the series failed")
        self.assertIn("FAIL check deps.json: not in the form the tool writes "
                      "(two-space indent, a value per line, a newline at the "
                      "end); `scripts/uvpatch refresh --base v0.0.1` "
                      "rewrites it so",
                      res.stdout)
        self.assertOk(self.tool("refresh"))
        self.assertOk(self.tool("check"))


class CheckWarningsTest(World):
    def test_no_unclosed_file_under_warnings_as_errors(self):
        applied_backport(self)
        from test_fetch import make_tarball
        tarball = os.path.join(self.tmp, "fake-1.0.tar.gz")
        make_tarball(tarball, self.upstream)
        dest = os.path.join(self.tmp, "project", "libuv")
        os.makedirs(os.path.dirname(dest))
        for args in (["check"], ["fetch", "--source", tarball], ["apply"],
                     ["refresh"], ["vendor", dest], ["bases"]):
            res = self.tool(*args, env={"PYTHONWARNINGS": "error"})
            self.assertOk(res)
            self.assertNotIn("Warning", res.stderr, args)
            self.assertNotIn("Traceback", res.stderr, args)


if __name__ == "__main__":
    unittest.main()

"""check: lint the series without building it.

deps.json is valid and its hashes current (loading it checks that), every
patch is in canonical form (refresh would not change it), its message
follows libuv's rules (a message of our own: subject, width, Fixes: and
Refs: as URLs, no word about this tool) and carries the DEP-3 and
Upstream-Status fields, and the series applies exactly on its base.

Proofs: a fix of our own (any Upstream-Status but Backport, and not
tests-only) names in deps.json at least one `proof` case, a regression
case that fails on the unpatched base. A backport or a tests-only patch
(subject `test: ...`, or it changes only test/ and docs/) that names
none says why in `no_proof`.

Names: every program (`tests`) and case (`proof`, `repairs`) that an entry
names exists in tests/regress, read from the C sources' case tables; a
near miss gets a "did you mean". A patch of our own is signed off by its
author: its `From:` is one of its `Signed-off-by:` lines.
"""

import email.utils
import os
import re
import tempfile

from ..errors import UvPatchError
from .apply import BASE_TAG, apply_series
from .cases import (known_cases, name_problems, needed_patch_problems,
                    needed_patches)
from .manifest import UPSTREAM_STATUSES, dump
from .message import upstream_problems
from .patchfile import Patch, header
from .refresh import format_series

SUBJECT_MAX = 50
BODY_MAX = 72
_SUBJECT = re.compile(r"^[a-z0-9_,./-]+: [a-z]")
# Lines that may run past 72 columns: links and trailers.
_LONG_OK = re.compile(r"^(\S+: )?<?https?://\S+>?$|^[A-Za-z-]+: .*<.*@.*>$")


_ORIGIN = re.compile(r"^upstream, https?://\S+/commit/[0-9a-f]{40}$")


def _style_problems(subject, body):
    """libuv's rules for a message of our own."""
    problems = []
    if not _SUBJECT.match(subject):
        problems.append("subject %r is not 'subsystem: imperative summary' "
                        "in lower case" % subject)
    if len(subject) > SUBJECT_MAX:
        problems.append("subject is %d characters, more than %d"
                        % (len(subject), SUBJECT_MAX))
    for n, line in enumerate(body, 1):
        if len(line) > BODY_MAX and not _LONG_OK.match(line):
            problems.append("message line %d is %d columns, more than %d"
                            % (n, len(line), BODY_MAX))
        if line != line.rstrip():
            problems.append("message line %d has trailing white space" % n)
    return problems


def lint_message(name, text):
    """Problems with one patch file's text, as sentences."""
    problems = []
    if "\r\n" in text:
        problems.append("has CRLF line ends")
    patch = Patch(text)
    subject = patch.subject
    body = patch.message()
    fields = {}
    for line in body:
        m = re.match(r"^([A-Z][A-Za-z-]+): (.*)$", line)
        if m:
            fields[m.group(1)] = m.group(2)
    status = fields.get("Upstream-Status", "").split(" ")[0]
    if not status:
        problems.append("no Upstream-Status: field")
    elif status not in UPSTREAM_STATUSES:
        problems.append("Upstream-Status %r is not one of %s"
                        % (status, ", ".join(UPSTREAM_STATUSES)))
    if status == "Backport":
        # A backport keeps upstream's author, subject and message as they
        # are; DEP-3 asks it to say where it comes from.
        if not _ORIGIN.match(fields.get("Origin", "")):
            problems.append("a backport needs 'Origin: upstream, "
                            "<url>/commit/<40-hex id>'")
        required = ("Last-Update",)
    else:
        problems.extend(_style_problems(subject, body))
        problems.extend(upstream_problems(subject, body))
        required = ("Forwarded", "Last-Update", "Signed-off-by")
        problems.extend(_author_problems(text, body))
    for field in required:
        if field not in fields:
            problems.append("no %s: field" % field)
    if "Last-Update" in fields and not re.match(r"^\d{4}-\d{2}-\d{2}$",
                                                fields["Last-Update"]):
        problems.append("Last-Update %r is not YYYY-MM-DD"
                        % fields["Last-Update"])
    return problems


def _identity(text):
    name, address = email.utils.parseaddr(text)
    return " ".join(name.split()), address.lower()


def _author_problems(text, body):
    """A patch of ours is signed off by whoever it names as its author."""
    author = str(header(text).get("From") or "").strip()
    signed = [ln.split(":", 1)[1].strip() for ln in body
              if ln.startswith("Signed-off-by:")]
    if not author or not signed or _identity(author) in [
            _identity(s) for s in signed]:
        return []
    return ["From: %s is not among its Signed-off-by: (%s): the author "
            "signs off their own patch (set user.name and user.email, "
            "then git commit --amend --reset-author in out/<base>/src, "
            "or sign off as the author)" % (author, "; ".join(signed))]


def tests_only(patch):
    """A change to libuv's tests: libuv's `test:` subsystem, or nothing
    outside test/ and docs/."""
    return patch.subject.startswith("test: ") or bool(patch.files) and all(
        f.startswith(("test/", "docs/")) for f in patch.files)


def proof_problems(entry, text):
    """Problems with what one deps.json entry says proves its patch."""
    patch = Patch(text)
    backport = entry["upstream_status"] == "Backport"
    cases = sum(len(p["cases"]) for p in entry.get("proof", []))
    if cases:
        if "no_proof" in entry:
            return ["deps.json names proof cases and a no_proof reason: "
                    "keep one"]
        return []
    if not backport and not tests_only(patch):
        return ["a fix patch (Upstream-Status %s, not tests-only) must name "
                "a proof case in deps.json, a regression case of "
                "tests/regress that fails on the unpatched base "
                "(CONTRIBUTING.md, \"Add a patch to a series\")"
                % entry["upstream_status"]]
    if "no_proof" not in entry:
        return ["a %s with no proof case must say why in deps.json: "
                "\"no_proof\": \"reason\""
                % ("backport" if backport else "tests-only patch")]
    return []


def _rules_kept(entry):
    """The rules a patch that passed kept, as its PASS line says them."""
    if entry["upstream_status"] == "Backport":
        message = ("upstream's message with Origin: upstream's commit, "
                   "Upstream-Status and Last-Update")
    else:
        message = ("'subsystem: summary' subject of at most %d characters, "
                   "lines of at most %d columns, Upstream-Status, "
                   "Forwarded, Last-Update and Signed-off-by (the "
                   "author's)" % (SUBJECT_MAX, BODY_MAX))
    cases = sum(len(p["cases"]) for p in entry.get("proof", []))
    proof = "%d proof case(s)" % cases if cases else \
        "no proof case: " + entry["no_proof"]
    if entry.get("tests") or cases or entry.get("repairs"):
        proof += "; the programs and cases it names are in tests/regress"
    return "canonical (refresh would not change it); %s; %s" % (message,
                                                               proof)


def check(manifest, out, report):
    """Calls ``report(status, name, why)`` per finding; returns the number
    of failures."""
    failures = 0
    folder = manifest.patch_dir
    with open(manifest.path, encoding="utf-8") as f:
        written = f.read()
    if written != dump(manifest.doc):
        # refresh and carry write this form: a file in another one
        # would come back reformatted from the next of them.
        failures += 1
        report("FAIL", "check deps.json", "not in the form the tool writes "
               "(two-space indent, a value per line, a newline at the "
               "end); `scripts/uvpatch refresh%s` rewrites it so"
               % manifest.base_option)
    else:
        report("PASS", "check deps.json", "valid, %d patches, hashes "
               "current" % len(manifest.series))
    try:
        src = apply_series(manifest, out)
    except UvPatchError as e:
        report("FAIL", "check series applies exactly", e.message)
        return 1
    report("PASS", "check series applies exactly",
           "on %s" % manifest.commit[:12])
    known = known_cases(manifest.root)
    needed = needed_patch_problems(manifest.root, manifest.doc["bases"])
    if needed:
        failures += 1
        report("FAIL", "check tests/regress patch names", "; ".join(needed))
    elif needed_patches(manifest.root):
        report("PASS", "check tests/regress patch names",
               "every patch a case needs is in a series")
    with tempfile.TemporaryDirectory(prefix="uvpatch-check-") as tmp:
        names = format_series(src, BASE_TAG, "HEAD", tmp) \
            if manifest.series else []
        for entry, fresh in zip(manifest.series, names + [None] * len(
                manifest.series)):
            name = entry["file"]
            text = _read(os.path.join(folder, name))
            problems = lint_message(name, text) + proof_problems(
                entry, text) + name_problems(entry, known)
            if fresh != name:
                problems.append("refresh would name it %s" % fresh)
            elif _read(os.path.join(tmp, fresh)) != text:
                problems.append("not canonical: `scripts/uvpatch refresh` "
                                "would rewrite it")
            if problems:
                failures += 1
                report("FAIL", "check " + name, "; ".join(problems))
            else:
                report("PASS", "check " + name, _rules_kept(entry))
    return failures


def _read(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()

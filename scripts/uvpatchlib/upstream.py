"""upstream: prepare patches for sending to libuv.

DEST becomes a git repository holding the base (or --onto REF) and one
branch `uvpatch/NNNN-slug` per chosen patch, each patch alone on the base,
with its message cleaned of this fork's fields; next to the branches, an
mbox and a pull-request description per patch. Nothing in them names this
machine: no local path, no host name.
"""

import json
import os
import re
import socket
import subprocess

from . import gitref, proc
from .apply import AM_IDENTITY, BASE_TAG, apply_series
from .errors import UvPatchError, EXIT_APPLY, EXIT_STATE, EXIT_USAGE
from .fsutil import remove_tree, write_atomic
from .patchfile import Patch
from .testing import results_path
from .prtext import clean_message, clean_patch, pull_request
from .vendor import check_dest

BASE_BRANCH = "uvpatch/base"
# The author of the branches when git has no user.name/user.email.
PLACEHOLDER = "Your Name <you@example.com>"
_FROM = re.compile(r"^From: .*$", re.M)
_SIGNED = re.compile(r"^Signed-off-by: ")
OLD_BASE = "refs/uvpatch-old/base"
OLD_HEAD = "refs/uvpatch-old/head"


def choose(manifest, wanted):
    """The series entries named by ``wanted`` (numbers or file names);
    all of them when it is empty."""
    if not wanted:
        return list(manifest.series)
    chosen = []
    for w in [w for item in wanted for w in item.split(",") if w]:
        hit = None
        for i, e in enumerate(manifest.series, 1):
            if w == e["file"] or w.isdigit() and int(w) == i or \
                    w == e["file"][:-len(".patch")]:
                hit = e
        if hit is None:
            raise UvPatchError(
                "--patch %s: no such patch in the series" % w,
                hint="give a number or a file name: %s"
                % (", ".join(e["file"] for e in manifest.series)
                   or "the series is empty"), status=EXIT_USAGE)
        if hit not in chosen:
            chosen.append(hit)
    return chosen


def sender(root):
    """(``Name <email>`` of whoever sends the pull requests, is it the
    placeholder): git's user.name and user.email, as `git commit` takes
    them."""
    # Not proc.git: that one hides the user's own configuration.
    found = []
    for key in ("user.name", "user.email"):
        res = subprocess.run(["git", "config", key], cwd=root, text=True,
                             stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, check=False)
        found.append(res.stdout.strip() if res.returncode == 0 else "")
    if all(found):
        return "%s <%s>" % tuple(found), False
    return PLACEHOLDER, True


def _is_backport(entry):
    return entry["upstream_status"] == "Backport"


def _leaks(text, places):
    """The local facts ``text`` would reveal."""
    found = [p for p in places if p and p in text]
    host = socket.gethostname()
    if len(host) > 3 and re.search(r"(?<![\w.-])%s(?![\w-])"
                                   % re.escape(host), text):
        found.append("the host name %s" % host)
    return found


def prepare(manifest, out, dest, onto=None, source=None, wanted=()):
    dest = os.path.abspath(dest)
    check_dest(dest, manifest, out)
    if os.path.lexists(dest):
        raise UvPatchError("%s already exists" % dest,
                           hint="give a new folder; the tool makes it",
                           status=EXIT_STATE)
    chosen = choose(manifest, wanted)
    for e in [e for e in chosen if _is_backport(e)]:
        # Upstream's own change, on an older base: nothing to send.
        proc.note("%s: a backport of upstream's own commit: not sent"
                  % e["file"])
    chosen = [e for e in chosen if not _is_backport(e)]
    if not chosen:
        raise UvPatchError("the series is empty: nothing to send upstream",
                           hint="add patches first (see README.md)",
                           status=EXIT_USAGE)
    if onto:
        src = source or gitref.default_source(manifest)
        if src is None:
            raise UvPatchError("deps.json has no git source to find %r in"
                               % onto, hint="pass --source with a git "
                               "repository or bundle", status=EXIT_USAGE)
        found = gitref.resolve(src, onto)
    old_src = apply_series(manifest, out)
    proc.step("upstream")
    # Where this machine keeps things; /tmp alone is too common a word
    # in libuv's own messages to refuse.
    home = os.path.realpath(os.path.expanduser("~")).rstrip(os.sep) + os.sep
    places = sorted(({os.path.realpath(p) for p in (
        manifest.root, out, os.path.dirname(dest))} | {home}) - {os.sep})
    scratch = os.path.join(os.path.dirname(dest),
                           ".%s.uvpatch-new" % os.path.basename(dest))
    remove_tree(scratch)
    try:
        os.makedirs(scratch)
        proc.git(["init", "-q"], cwd=scratch)
        # The series' own commits give `git am -3` the blobs a patch was
        # made against, even when it builds on an earlier patch.
        proc.git(["fetch", "-q", "--no-tags", "--update-shallow", "--",
                  old_src,
                  "+refs/tags/%s:%s" % (BASE_TAG, OLD_BASE),
                  "+HEAD:%s" % OLD_HEAD], cwd=scratch)
        if onto:
            gitref.fetch_commit(scratch, src, found.commit)
            base, label = found.commit, found.label
            upstream_commit = found.commit
        else:
            base = proc.git_out(["rev-parse", OLD_BASE], cwd=scratch)
            label = "libuv %s" % manifest.upstream["tag"]
            # From a tarball the base commit is ours; name upstream's.
            upstream_commit = manifest.commit
        proc.git(["checkout", "-q", "-B", BASE_BRANCH, base], cwd=scratch)
        # base-commit: in the mails only when the base is upstream's own
        # commit (a tarball's base commit exists nowhere else).
        real = onto or base == manifest.commit
        label = "%s, commit %s" % (label, upstream_commit[:12])
        author = sender(manifest.root)
        measured = _measured(out)
        made = [_one(manifest, scratch, e, base, label, real, places,
                     author, measured) for e in chosen]
        proc.git(["checkout", "-q", BASE_BRANCH], cwd=scratch)
        for ref in (OLD_BASE, OLD_HEAD):
            proc.git(["update-ref", "-d", ref], cwd=scratch)
        remove_tree(os.path.join(scratch, ".git", "FETCH_HEAD"))
        with open(os.path.join(scratch, ".git", "info", "exclude"), "a",
                  encoding="utf-8") as f:
            for stem in made:
                f.write("/%s.mbox\n/%s.md\n" % (stem, stem))
        os.rename(scratch, dest)
    finally:
        remove_tree(scratch)
    for stem in made:
        proc.note("branch uvpatch/%s, %s.mbox, %s.md" % (stem, stem, stem))
    return dest


def _read(manifest, entry, author=None):
    """The patch's text, parsed, and its message for upstream: without
    this fork's fields and, given ``author`` (``Name <email>``), signed
    off by that author instead of this fork."""
    with open(manifest.patch_path(entry), encoding="utf-8",
              errors="surrogateescape", newline="") as f:
        text = f.read()
    patch = Patch(text)
    body = clean_message(patch.message())
    if author:
        body = ["Signed-off-by: " + author if _SIGNED.match(ln) else ln
                for ln in body]
    return text, patch, body


def _am(manifest, work, entry, author=None):
    """Applies one patch, message cleaned, on HEAD, by ``author`` when
    given; None when it went in, else what stopped it."""
    text, _, body = _read(manifest, entry, author)
    mail = clean_patch(text, body)
    if author:
        mail = _FROM.sub(lambda m: "From: " + author, mail, count=1)
    path = os.path.join(work, ".git", "uvpatch-" + entry["file"])
    write_atomic(path, mail)
    mail = path
    res = proc.git(["am", "-q", "-3", "--committer-date-is-author-date",
                    "--", mail], cwd=work, env=AM_IDENTITY, check=False)
    os.unlink(mail)
    if res.returncode == 0:
        return None
    files = proc.git_out(["diff", "--name-only", "--diff-filter=U"],
                         cwd=work).split()
    proc.git(["am", "--abort"], cwd=work, check=False)
    return ("conflict in " + ", ".join(files) if files
            else (res.stdout + res.stderr).strip())


def _stack(manifest, work, entry, branch, base, author):
    """Puts ``entry`` on ``branch``: alone on the base when it applies so,
    else on the fewest nearest earlier patches sharing a file with it (it
    was made on top of them). Returns (the patches it needs, problem)."""
    proc.git(["checkout", "-q", "-B", branch, base], cwd=work)
    problem = _am(manifest, work, entry, author)
    if problem is None:
        return [], None
    files = set(_read(manifest, entry)[1].files)
    index = manifest.series.index(entry)
    earlier = [e for e in manifest.series[:index]
               if files & set(_read(manifest, e)[1].files)]
    for k in range(1, len(earlier) + 1):
        needs = earlier[-k:]
        proc.git(["checkout", "-q", "-B", branch, base], cwd=work)
        if all(_am(manifest, work, e, author) is None
               for e in needs + [entry]):
            return needs, None
    proc.git(["checkout", "-q", "-B", branch, base], cwd=work)
    return [], problem


def _measured(out):
    """{target: results} of the last regression run on this base."""
    found = {}
    for target in ("linux", "windows", "macos"):
        try:
            with open(results_path(out, target, "Release"),
                      encoding="utf-8") as f:
                found[target] = json.load(f)
        except (OSError, ValueError):
            pass
    return found


def _evidence(manifest, entry, measured):
    """(the command, its date and machine, one line per proof case) of
    what the regression programs gave for ``entry``, base vs patched."""
    lines, when = [], set()
    for proof in entry.get("proof", []):
        results = measured.get(proof["target"])
        for case in proof["cases"]:
            got = results and results["cases"].get(case)
            if not got:
                continue
            when.add("%s, on %s" % (results["when"], results["machine"]))
            lines.append((proof["target"], case, got))
    command = "scripts/uvpatch test --base %s" % manifest.name
    return command, sorted(when), lines


def _one(manifest, work, entry, base, label, real, places, author,
         measured):
    name = entry["file"]
    stem = name[:-len(".patch")]
    who, placeholder = author
    text, patch, body = _read(manifest, entry, who)
    branch = "uvpatch/" + stem
    needs, problem = _stack(manifest, work, entry, branch, base, who)
    if problem is not None:
        raise UvPatchError(
            "%s does not apply on %s: %s" % (name, label, problem),
            hint="move the series there first (`scripts/uvpatch rebase "
                 "--onto REF`), or send it against the pinned base",
            status=EXIT_APPLY)
    if len(proc.git_out(["rev-list", "%s..%s" % (base, branch)],
                        cwd=work).split()) == len(needs):
        raise UvPatchError("%s is empty on %s: it is already upstream"
                           % (name, label),
                           hint="drop it from the series (`scripts/uvpatch "
                                "rebase --onto REF` does)",
                           status=EXIT_APPLY)
    if needs:
        proc.note("%s builds on %s: its branch holds %s too"
                  % (name, ", ".join(e["file"] for e in needs),
                     "them" if len(needs) > 1 else "it"))
    args = ["format-patch", "--stdout", "--no-signature"]
    if real:
        args.append("--base=" + base)
    mbox = proc.git(args + ["%s..%s" % (base, branch)], cwd=work).stdout
    described = pull_request(
        patch.subject, body, text, label,
        depends=[_read(manifest, e)[1].subject for e in needs],
        evidence=_evidence(manifest, entry, measured))
    if placeholder:
        described = ("> The commits are authored and signed off by the "
                     "placeholder `%s` (git has no user.name and "
                     "user.email here). Replace it before sending: `git "
                     "commit --amend --reset-author -s` on the branch, "
                     "after `git config user.name` and `user.email`.\n\n"
                     % PLACEHOLDER) + described
    # The diff is upstream's code; the words around it are ours.
    for what, content in (("message", "\n".join(body)),
                          ("description", described)):
        leaks = _leaks(content, places)
        if leaks:
            raise UvPatchError(
                "%s: the %s would reveal %s" % (name, what,
                                               ", ".join(leaks)),
                hint="reword the commit message in out/src (git commit "
                     "--amend), `scripts/uvpatch refresh`, and retry",
                status=EXIT_STATE)
    write_atomic(os.path.join(work, stem + ".mbox"), mbox)
    write_atomic(os.path.join(work, stem + ".md"), described)
    return stem


# Tests that every branch must pass: libuv's own UDP tests.
CHECK_TESTS = "udp_"


def verify(manifest, out, dest, report):
    """Builds each branch of DEST on its own and runs libuv's UDP tests
    there; calls ``report(status, name, why)`` per branch and returns the
    number that failed. The branches are what upstream's CI would see."""
    from .apply import export_commit
    from .build import Variant, build_tree, host_target
    from .testing import Runner, _libuv_tests, libuv_run
    target = host_target()
    runner = Runner(target)
    failures = 0
    branches = proc.git_out(["for-each-ref", "--format=%(refname:short)",
                             "refs/heads/uvpatch/"], cwd=dest).split()
    for branch in [b for b in branches if b != BASE_BRANCH]:
        stem = branch[len("uvpatch/"):]
        name = "upstream %s" % stem
        tree = os.path.join(out, "upstream-check", stem)
        export_commit(dest, branch, tree)
        variant = Variant(manifest.root, out, target, True, "Release",
                          source=tree, label="upstream-" + stem[:4])
        try:
            build_tree(variant, libuv_only=True)
        except UvPatchError as e:
            failures += 1
            report("FAIL", name, "does not build: %s"
                   % e.message.splitlines()[0])
            continue
        tests = [t for t in _libuv_tests(runner, variant)
                 if t.startswith(CHECK_TESTS)]
        failed, skipped = [], 0
        for test in tests:
            status, why = libuv_run(runner, variant, test)
            if status == "FAIL" and libuv_run(runner, variant,
                                              test)[0] == "FAIL":
                failed.append("%s (%s)" % (test, why))
            skipped += status == "SKIP"
        if failed:
            failures += 1
            report("FAIL", name, "%d of %d UDP tests fail: %s"
                   % (len(failed), len(tests), "; ".join(failed)[:400]))
        else:
            report("PASS", name, "builds on its own; %d UDP tests pass, "
                   "%d skip themselves" % (len(tests) - skipped, skipped))
    return failures

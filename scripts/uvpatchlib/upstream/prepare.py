"""upstream: prepare patches for sending to libuv.

DEST becomes a git repository holding the base (or --onto REF) as
`pr/base` and one branch `pr/NN-slug` per chosen patch, NN its place in
the order to send them: each branch holds the base and only the commits
its patch needs (prdeps decides which, by applying), authored and
signed off by the sender. Next to the branches, an mbox and a
pull-request description per patch (prtext). With --check every branch
is built and tested on its own (prcheck), and the descriptions say what
the patch's tests gave. Nothing in them names this machine (no local
path, no host name) or this project's tool.
"""

import os
import re
import socket
import subprocess

from .. import console, subproc
from ..errors import (UvPatchError, EXIT_APPLY, EXIT_MANIFEST, EXIT_STATE,
                      EXIT_USAGE)
from ..source import gitref
from ..source.fetch import fetch_commit
from ..fsutil import remove_tree, scratch_index, write_atomic
from ..series.apply import BASE_TAG, apply_series
from ..series.message import clean_message, tool_names, upstream_problems
from ..series.patchfile import Patch
from ..build.vendor import check_dest
from . import prdeps
from .prcheck import Branch, targets_of, verify
from .prtext import (clean_patch, code_lines, own_tests, pull_request,
                     upstream_body)

PREFIX = "pr/"
BASE_BRANCH = PREFIX + "base"
OLD_BASE = "refs/prep/base"
_FROM = re.compile(r"^From: .*$", re.M)
_IDENTITY = re.compile(r"^([^<>\n]*[^<>\s])\s*<([^<>\s@]+@[^<>\s]+)>$")
_FIXES = re.compile(r"^Fixes: ", re.I)
_BUILD_LISTS = ("CMakeLists.txt", "Makefile.am")


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


def sender(root, given=None):
    """``Name <email>`` that authors and signs off the commits: ``given``
    (--author), else git's user.name and user.email as `git commit`
    takes them. Nobody: refused, never a placeholder that could be sent
    as it is."""
    if given is not None:
        m = _IDENTITY.match(given.strip())
        if not m:
            raise UvPatchError(
                "--author %r is not 'Name <email>'" % given,
                hint='give it as --author "Ada Lovelace <ada@example.org>"',
                status=EXIT_USAGE)
        who = "%s <%s>" % m.groups()
    else:
        # Not subproc.git: that one hides the user's own configuration.
        found = []
        for key in ("user.name", "user.email"):
            res = subprocess.run(["git", "config", key], cwd=root,
                                 text=True, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, check=False)
            found.append(res.stdout.strip() if res.returncode == 0 else "")
        missing = [k for k, v in zip(("user.name", "user.email"), found)
                   if not v]
        if missing:
            raise UvPatchError(
                "no author for the commits: git has no %s"
                % " and no ".join(missing),
                hint='set yours (git config --global user.name "Your '
                     'Name"; git config --global user.email you@your.'
                     'domain), or pass --author "Name <email>"',
                status=EXIT_USAGE)
        who = "%s <%s>" % tuple(found)
    if tool_names(who):
        raise UvPatchError("the author %s names this project's tool" % who,
                           hint='sign your pull requests as yourself: '
                                '--author "Name <email>"',
                           status=EXIT_USAGE)
    return who


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


def prepare(manifest, out, dest, onto=None, source=None, wanted=(),
            author=None, check=False, report=None):
    """Makes DEST; returns (its path, the number of branches --check
    found failing)."""
    dest = os.path.abspath(dest)
    check_dest(dest, manifest, out)
    if os.path.lexists(dest):
        raise UvPatchError("%s already exists" % dest,
                           hint="give a new folder; the tool makes it",
                           status=EXIT_STATE)
    who = sender(manifest.root, author)
    chosen = choose(manifest, wanted)
    for e in [e for e in chosen if _is_backport(e)]:
        # Upstream's own change, on an older base: nothing to send.
        console.note("%s: a backport of upstream's own commit: not sent"
                     % e["file"])
    chosen = [e for e in chosen if not _is_backport(e)]
    if not chosen:
        raise UvPatchError("the series is empty: nothing to send upstream",
                           hint="add patches first (see CONTRIBUTING.md, "
                                "Add a patch to a series)",
                           status=EXIT_USAGE)
    patches = {e["file"]: _read(manifest, e) for e in manifest.series}
    for e in chosen:
        patch = patches[e["file"]]
        problems = upstream_problems(patch.subject, patch.message())
        if problems:
            raise UvPatchError(
                "%s cannot go upstream as it is: %s"
                % (e["file"], "; ".join(problems)),
                hint=_reword_hint(manifest, out), status=EXIT_MANIFEST)
    if onto:
        src = source or gitref.default_source(manifest)
        if src is None:
            raise UvPatchError("deps.json has no git source to find %r in"
                               % onto, hint="pass --source with a git "
                               "repository or bundle", status=EXIT_USAGE)
        found = gitref.resolve(src, onto)
    old_src = apply_series(manifest, out)
    console.step("upstream")
    # Where this machine keeps things; /tmp alone is too common a word
    # in libuv's own messages to refuse.
    home = os.path.realpath(os.path.expanduser("~")).rstrip(os.sep) + os.sep
    places = sorted(({os.path.realpath(p) for p in (
        manifest.root, out, os.path.dirname(dest))} | {home}) - {os.sep})
    scratch = os.path.join(os.path.dirname(dest),
                           ".%s.new" % os.path.basename(dest))
    remove_tree(scratch)
    try:
        os.makedirs(scratch)
        subproc.git(["init", "-q"], cwd=scratch)
        subproc.git(["fetch", "-q", "--no-tags", "--update-shallow", "--",
                     old_src,
                     "+refs/tags/%s:%s" % (BASE_TAG, OLD_BASE)], cwd=scratch)
        if onto:
            fetch_commit(scratch, src, found.commit)
            base, label = found.commit, found.label
            upstream_commit = found.commit
        else:
            base = subproc.git_out(["rev-parse", OLD_BASE], cwd=scratch)
            label = "libuv %s" % manifest.upstream["tag"]
            # From a tarball the base commit is ours; name upstream's.
            upstream_commit = manifest.commit
        subproc.git(["checkout", "-q", "-B", BASE_BRANCH, base], cwd=scratch)
        # base-commit: in the mails only when the base is upstream's own
        # commit (a tarball's base commit exists nowhere else).
        real = onto or base == manifest.commit
        label = "%s, commit %s" % (label, upstream_commit[:12])
        made = _branches(manifest, scratch, base, label, chosen, patches,
                         who)
        texts = {}
        for pr in made:
            texts[pr["stem"]] = _describe(pr, label, base, None, places,
                                          _reword_hint(manifest, out))
        failed = 0
        if check:
            failed = verify(manifest, out, scratch, base,
                            [pr["check"] for pr in made], report)
            for pr in made:
                texts[pr["stem"]] = _describe(pr, label, base,
                                              pr["check"].results, places,
                                              _reword_hint(manifest, out))
        for pr in made:
            args = ["format-patch", "--stdout", "--no-signature"]
            if real:
                args.append("--base=" + base)
            mbox = subproc.git(args + ["%s..%s" % (base, pr["branch"])],
                               cwd=scratch).stdout
            write_atomic(os.path.join(scratch, pr["stem"] + ".mbox"), mbox)
            write_atomic(os.path.join(scratch, pr["stem"] + ".md"),
                         texts[pr["stem"]])
        subproc.git(["checkout", "-q", BASE_BRANCH], cwd=scratch)
        subproc.git(["update-ref", "-d", OLD_BASE], cwd=scratch)
        remove_tree(os.path.join(scratch, ".git", "FETCH_HEAD"))
        with open(os.path.join(scratch, ".git", "info", "exclude"), "a",
                  encoding="utf-8") as f:
            for pr in made:
                f.write("/%s.mbox\n/%s.md\n" % (pr["stem"], pr["stem"]))
        os.rename(scratch, dest)
    finally:
        remove_tree(scratch)
    return dest, failed


def _read(manifest, entry):
    with open(manifest.patch_path(entry), encoding="utf-8",
              errors="surrogateescape", newline="") as f:
        return Patch(f.read())


def _mail(patch, entry, who):
    """The patch as git am takes it upstream: our own changes authored
    and signed off by ``who``, without this fork's fields; a backport as
    upstream wrote it, without them."""
    if _is_backport(entry):
        return clean_patch(patch.text, clean_message(patch.message()))
    mail = clean_patch(patch.text, upstream_body(patch.message(), who))
    return _FROM.sub(lambda m: "From: " + who, mail, count=1)


def _weight(patch, index):
    """The send order among patches that need none of each other: fixes
    of a named commit first (Fixes:, a regression), then the smallest
    change to libuv's code, then the series' order."""
    fixes = any(_FIXES.match(ln) for ln in patch.message())
    return (0 if fixes else 1, code_lines(patch.text), index)


def _branches(manifest, work, base, label, chosen, patches, who):
    """One branch per chosen patch, in the order to send them; returns
    what each needs for its description and --check."""
    folder = os.path.join(work, ".git", "prep")
    os.makedirs(folder)
    items = []
    for k, e in enumerate(manifest.series):
        patch = patches[e["file"]]
        mail = os.path.join(folder, e["file"])
        write_atomic(mail, _mail(patch, e, who))
        items.append(prdeps.Item(e["file"], mail, patch.files,
                                 _weight(patch, k)))
    needs = prdeps.plan(work, base, items)
    wanted = [i for i in items if i.name in {e["file"] for e in chosen}]
    for item in wanted:
        if needs[item.name] is None:
            _refuse(work, base, label, item)
    entries = {e["file"]: e for e in manifest.series}
    committer = {"GIT_COMMITTER_NAME": who.rsplit(" <", 1)[0],
                 "GIT_COMMITTER_EMAIL": who.rsplit("<", 1)[1].rstrip(">")}
    made = []
    for n, item in enumerate(prdeps.send_order(wanted, needs), 1):
        stem = "%02d-%s" % (n, item.name[:-len(".patch")].split("-", 1)[-1])
        branch = PREFIX + stem
        subproc.git(["checkout", "-q", "-B", branch, base], cwd=work)
        on = needs[item.name] + [item.name]
        for name in on:
            res = subproc.git(["am", "-q", "--committer-date-is-author-date",
                               "--", os.path.join(folder, name)], cwd=work,
                              env=committer, check=False)
            if res.returncode != 0:
                subproc.git(["am", "--abort"], cwd=work, check=False)
                raise UvPatchError("%s does not apply on %s: %s" % (
                    name, label, (res.stdout + res.stderr).strip()),
                    hint="move the series there first (`scripts/uvpatch "
                         "rebase --onto REF`)", status=EXIT_APPLY)
        commit = subproc.git_out(["rev-parse", "HEAD"], cwd=work)
        top = subproc.git(["diff-tree", "-p", "--no-color", "--no-renames",
                           "HEAD^", "HEAD"], cwd=work).stdout
        tests = own_tests(top, lambda path: subproc.git(
            ["show", "HEAD:" + path], cwd=work, check=False).stdout)
        changed = subproc.git_out(["diff", "--name-status", "--no-renames",
                                   base, "HEAD"], cwd=work).splitlines()
        files = [ln.split("\t", 1)[1] for ln in changed]
        revert = [f for st, f in (ln.split("\t", 1) for ln in changed)
                  if st == "M" and not f.startswith(("test/", "docs/"))
                  and f not in _BUILD_LISTS]
        platforms, proofs = set(), []
        for name in on:
            platforms.update(entries[name]["platforms"])
            for proof in entries[name].get("proof", []):
                if proof["target"] == "windows" and \
                        not proof.get("native_only"):
                    proofs += proof["cases"]
        if needs[item.name]:
            console.note("%s needs %s: its branch holds %s too" % (
                   item.name, ", ".join(needs[item.name]),
                   "them" if len(needs[item.name]) > 1 else "it"))
        console.note("%s: %s, %d commit(s) on %s" % (
               branch, item.name, len(on), base[:12]))
        patch = patches[item.name]
        made.append({
            "stem": stem, "branch": branch, "file": item.name,
            "subject": patch.subject,
            "body": upstream_body(patch.message(), who),
            "tests": tests, "revert": revert,
            "depends": [patches[d].subject for d in needs[item.name]],
            "check": Branch(stem, commit, files, [t for _, t in tests],
                            platforms, proofs)})
    remove_tree(folder)
    return made


def _refuse(work, base, label, item):
    """Says why a patch goes on the base with no set of earlier ones."""
    env = {"GIT_INDEX_FILE": scratch_index(os.path.join(work, ".git",
                                                        "refuse.index"))}
    subproc.git(["read-tree", base], cwd=work, env=env)
    if subproc.git(["apply", "--cached", "-R", "--check", item.mail], cwd=work,
                   env=env, check=False).returncode == 0:
        raise UvPatchError("%s is already in %s" % (item.name, label),
                           hint="drop it from the series (`scripts/uvpatch "
                                "rebase --onto REF` does)",
                           status=EXIT_APPLY)
    res = subproc.git(["apply", "--cached", "--check", item.mail], cwd=work,
                      env=env, check=False)
    detail = "; ".join(ln for ln in res.stderr.strip().splitlines()[:4])
    raise UvPatchError(
        "%s does not apply on %s, alone or on earlier patches: %s"
        % (item.name, label, detail),
        hint="move the series there first (`scripts/uvpatch rebase "
             "--onto REF`), or send it against the pinned base",
        status=EXIT_APPLY)


def _reword_hint(manifest, out):
    return ("reword the commit message in %s (git commit --amend), "
            "`scripts/uvpatch refresh%s`, and retry"
            % (console.shown(os.path.join(out, "src")), manifest.base_option))


def _describe(pr, label, base, results, places, hint):
    """The pull-request text, refused if it or the commit message would
    reveal this machine or name this project's tool (``hint``: how to
    reword it)."""
    b = pr["check"]
    system = "Windows" if targets_of(b.files, b.platforms, "host") == [
        "windows"] else None
    text = pull_request(pr["subject"], pr["body"], label, tests=pr["tests"],
                        depends=pr["depends"], results=results,
                        base_ref=base[:12], revert=pr["revert"],
                        system=system)
    # The diff is upstream's code; the words around it are ours.
    for what, content in (("message", "\n".join(pr["body"])),
                          ("description", text)):
        found = _leaks(content, places) + [
            "this project's tool (%s)" % w for w in tool_names(content)]
        if found:
            raise UvPatchError(
                "%s: the %s would reveal %s" % (pr["file"], what,
                                               ", ".join(found)),
                hint=hint,
                status=EXIT_STATE)
    return text

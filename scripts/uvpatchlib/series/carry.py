"""carry: one patch, or a change to it, from one series to the others,
by three-way merge.

The patch is taken from out/<from>/src (apply makes it match patches/).
In a series that has no patch of the same subject it is cherry-picked
onto the series' last patch, its deps.json entry (summary, tests, proof)
copied. In a series that has one, the change is carried: the difference
between the patch as the checkout's git has it (--since, default HEAD)
and as it is now is cherry-picked and squashed into that series' own
patch, its message too where the two messages merge cleanly. A conflict
stops the command in out/<to>/src with the files and what to run next.
Each series touched is refreshed and checked.
"""

import json
import os
import shlex
import subprocess
import tempfile

from .. import console, subproc
from ..console import git_hint
from ..errors import UvPatchError, EXIT_STATE, EXIT_USAGE
from ..fsutil import Lock, write_atomic
from .apply import BASE_TAG, apply_series, read_state
from .check import check
from .manifest import dump, load
from .patchfile import Patch
from .refresh import refresh

# The fields of a deps.json entry that say what a patch does and what
# proves it: a carried patch does the same on every base.
PROOF_FIELDS = ("tests", "proof", "repairs", "no_proof")
CARRIED_FIELDS = ("summary",) + PROOF_FIELDS


def _slug(name):
    return name[5:]


def pick(manifest, wanted):
    """The entry of ``manifest.series`` that ``wanted`` (a number or a
    file name) names."""
    for i, entry in enumerate(manifest.series):
        if wanted in (entry["file"], entry["file"][:4]) or \
                wanted.isdigit() and int(wanted) == i + 1:
            return i, entry
    raise UvPatchError("--patch %s: no such patch in series %s"
                       % (wanted, manifest.name),
                       hint="give a number or a file name: %s" % ", ".join(
                           e["file"] for e in manifest.series),
                       status=EXIT_USAGE)


def _checkout_git(root, args):
    """git in the user's checkout, which the tool only reads."""
    res = subprocess.run(["git"] + args, cwd=root, env=subproc.git_environ(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, check=False)
    return res.stdout if res.returncode == 0 else None


def old_version(root, since, base, name):
    """The patch's text in the checkout at ``since``: the file of that
    name, else the one of the same number; None when it had none."""
    folder = "patches/%s/" % base
    listed = _checkout_git(root, ["ls-tree", "--name-only", since, folder])
    if listed is None:
        return None
    names = [os.path.basename(n) for n in listed.split()]
    for old in [name] + [n for n in names if n[:4] == name[:4]]:
        if old in names:
            return _checkout_git(root, ["show", "%s:%s%s" % (since, folder,
                                                             old)])
    return None


def _message(src, commit):
    return subproc.git_out(["log", "-1", "--format=%B", commit], cwd=src)


def _old_commit(src, parent, text):
    """A commit of ``text`` (a patch) on ``parent``, made in a scratch
    index; None when it does not apply there."""
    with tempfile.TemporaryDirectory(prefix="uvpatch-carry-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        path = os.path.join(tmp, "old.patch")
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        subproc.git(["read-tree", parent], cwd=src, env=env)
        if subproc.git(["apply", "--cached", path], cwd=src, env=env,
                       check=False).returncode != 0:
            return None
        tree = subproc.git_out(["write-tree"], cwd=src, env=env)
    patch = Patch(text)
    message = patch.subject + "\n\n" + "\n".join(patch.message())
    return subproc.git_out(["commit-tree", tree, "-p", parent, "-m",
                            message.strip()], cwd=src)


def _fetch(src, commit, dest):
    """Makes ``commit`` of repository ``src`` known in ``dest``."""
    ref = "refs/uvpatch/carry"
    subproc.git(["update-ref", ref, commit], cwd=src)
    try:
        subproc.git(["fetch", "-q", "--no-tags", src, ref], cwd=dest)
    finally:
        subproc.git(["update-ref", "-d", ref], cwd=src, check=False)


def _merge_messages(theirs_old, theirs_new, ours):
    """``ours`` with the change from ``theirs_old`` to ``theirs_new``, or
    None when the two conflict."""
    with tempfile.TemporaryDirectory(prefix="uvpatch-carry-") as tmp:
        paths = []
        for label, text in (("ours", ours), ("base", theirs_old),
                            ("theirs", theirs_new)):
            paths.append(os.path.join(tmp, label))
            with open(paths[-1], "w", encoding="utf-8") as f:
                f.write(text.rstrip("\n") + "\n")
        res = subproc.git(["merge-file", "-p"] + paths, check=False)
    return res.stdout.rstrip("\n") if res.returncode == 0 else None


def _stop(tm, tsrc, what, failed, res, next_step, then, undo=None):
    """Stops a carry on git ``failed``; the hint's ``next_step`` keeps
    git's editor shut, as the user may have no terminal. Short of a
    conflict, the series goes back to ``undo``, its commit before."""
    files = subproc.git_out(["diff", "--name-only", "--diff-filter=U"],
                            cwd=tsrc).split()
    shown = console.shown(tsrc)
    if not files:
        # Not a conflict (an empty pick: the series has the change):
        # nothing is left half done.
        for args in (["cherry-pick", "--abort"], ["rebase", "--abort"]):
            subproc.git(args, cwd=tsrc, check=False)
        if undo:
            subproc.git(["reset", "-q", "--hard", undo], cwd=tsrc)
        raise UvPatchError(
            "%s: git %s failed: %s" % (what, failed,
                                       (res.stdout + res.stderr).strip()),
            hint="%s is as it was; if the series has the change already, "
                 "there is nothing to carry" % shown, status=EXIT_STATE)
    raise UvPatchError(
        "%s: conflict in %s, in %s" % (what, ", ".join(files) or
                                       "the merge", shown),
        hint="resolve the files in %s, `git add` them and run %s; then "
             "`scripts/uvpatch refresh%s` and %s. To drop the carry: "
             "`scripts/uvpatch apply%s --discard`"
             % (shown, next_step, tm.base_option, then, tm.base_option),
        status=EXIT_STATE)


def _carry_change(tm, tsrc, src, counterpart, old, new, what, then):
    """Squashes the change old..new (commits of out/<from>/src) into the
    counterpart patch of out/<to>/src; returns what it says of the
    message."""
    k = [p["commit"] for p in read_state(tsrc)["patches"]
         if p["file"] == counterpart["file"]][0]
    ours = _message(tsrc, k)
    merged = _merge_messages(_message(src, old), _message(src, new), ours)
    subject = ours.split("\n", 1)[0]
    if merged is None or merged == ours:
        text = "fixup! " + subject
        said = "its message kept" if merged == ours else \
            "its message kept: the message change conflicts with it, " \
            "carry that by hand"
    else:
        text = "amend! %s\n\n%s" % (subject, merged)
        said = "the message change merged"
    change = subproc.git_out(["commit-tree", new + "^{tree}", "-p", old,
                              "-m", text], cwd=src)
    _fetch(src, change, tsrc)
    undo = subproc.git_out(["rev-parse", "HEAD"], cwd=tsrc)
    res = subproc.git(["cherry-pick", "--allow-empty", change], cwd=tsrc,
                      check=False)
    if res.returncode != 0:
        _stop(tm, tsrc, what, "cherry-pick", res,
              "%s and %s (on its conflict the same, then %s)"
              % (git_hint(tsrc, "cherry-pick --continue --no-edit"),
                 git_hint(tsrc, "-c sequence.editor=true rebase -i "
                          "--autosquash " + BASE_TAG),
                 git_hint(tsrc, "-c core.editor=true rebase --continue")),
              then, undo)
    res = subproc.git(["rebase", "-q", "-i", "--autosquash", BASE_TAG],
                      cwd=tsrc, env={"GIT_SEQUENCE_EDITOR": "true",
                                     "GIT_EDITOR": "true"}, check=False)
    if res.returncode != 0:
        _stop(tm, tsrc, what, "rebase", res,
              git_hint(tsrc, "-c core.editor=true rebase --continue"),
              then, undo)
    return said


def carry(manifest, root, out_root, wanted, targets=None, since="HEAD",
          report=None):
    """Carries patch ``wanted`` of ``manifest``'s series to ``targets``
    (default: every other base); returns the number of failed checks."""
    src = apply_series(manifest, os.path.join(out_root, manifest.name))
    index, entry = pick(manifest, wanted)
    commit = read_state(src)["patches"][index]["commit"]
    with open(manifest.patch_path(entry), encoding="utf-8",
              newline="") as f:
        now = f.read()
    before = old_version(root, since, manifest.name, entry["file"])
    old = None
    if before is not None and before != now:
        old = _old_commit(src, commit + "^", before)
        if old is None:
            raise UvPatchError(
                "%s as at %s does not apply where it is now in series %s"
                % (entry["file"], since, manifest.name),
                hint="an earlier patch changed under it: give --since a "
                     "checkout revision whose series had it in place",
                status=EXIT_USAGE)
    names = [name for name in targets or [b["name"] for b in
                                          manifest.doc["bases"]]
             if name != manifest.name]
    failures = 0
    for k, name in enumerate(names):
        tout = os.path.join(out_root, name)
        with Lock(tout, "carry"):
            failures += _carry_to(load(root, base=name), tout, src, entry,
                                  commit, old, since, report, before,
                                  _Again(manifest, index, since, names[k:]))
    return failures


class _Again:
    """The carry command that takes up a carry stopped on a conflict, for
    the bases from the one it stopped at on."""

    def __init__(self, manifest, index, since, bases):
        self.command = "scripts/uvpatch carry%s --patch %d" % (
            manifest.base_option, index + 1)
        if since != "HEAD":
            self.command += " --since " + shlex.quote(since)
        self.bases = bases

    def to(self, bases):
        return "`%s%s`" % (self.command,
                           "".join(" --to " + name for name in bases))


# A new patch's deps.json entry as refresh writes it, before a carry that
# stopped on a conflict gave it the fields that say what proves it.
def _bare(entry):
    return not any(field in entry for field in PROOF_FIELDS)


def _carry_to(tm, tout, src, entry, commit, old, since, report,
              before, again):
    """Carries to one series; returns its failed checks."""
    tsrc = apply_series(tm, tout)
    what = "carrying %s to %s" % (entry["file"], tm.name)
    label = "carry %s to %s" % (entry["file"], tm.name)
    counterpart = [e for e in tm.series
                   if _slug(e["file"]) == _slug(entry["file"])]
    if counterpart and _bare(counterpart[0]) and not _bare(entry):
        # What a carry stopped on a conflict leaves, once resolved: the
        # whole patch, its entry naming no proof, which check fails.
        name = counterpart[0]["file"]
        keep = () if counterpart[0].get("summary") == _subject(tm, name) \
            else ("summary",)
        tm = _copy_fields(tm, entry, name, keep)
        report("PASS", label, "%s named no proof in deps.json: given the "
               "fields of %s" % (name, entry["file"]))
        return check(tm, tout, report)
    if counterpart and old is None:
        report("SKIP", label, "it has %s, and %s has no change since %s"
               % (counterpart[0]["file"], entry["file"], since)
               if before is not None else
               "it has %s already; %s has no earlier version at %s to take "
               "a change from" % (counterpart[0]["file"], entry["file"],
                                  since))
        return 0
    if counterpart:
        # Its entry is whole: the bases after this one are what is left.
        then = "`scripts/uvpatch check%s`" % tm.base_option
        if again.bases[1:]:
            then += ", then " + again.to(again.bases[1:])
        said = _carry_change(tm, tsrc, src, counterpart[0], old, commit,
                             what, then)
        done = "the change merged into %s, %s" % (counterpart[0]["file"],
                                                  said)
    else:
        _fetch(src, commit, tsrc)
        res = subproc.git(["cherry-pick", commit], cwd=tsrc, check=False)
        if res.returncode != 0:
            _stop(tm, tsrc, what, "cherry-pick", res,
                  git_hint(tsrc, "cherry-pick --continue --no-edit"),
                  "%s (it gives the new patch its deps.json fields and "
                  "goes on)" % again.to(again.bases))
        done = "a new patch on its series"
    refresh(tm, tout)
    tm = load(tm.root, base=tm.name)
    if not counterpart:
        tm = _copy_fields(tm, entry, tm.series[-1]["file"])
    report("PASS", label, done)
    return check(tm, tout, report)


def _subject(tm, name):
    with open(tm.patch_path({"file": name}), encoding="utf-8",
              newline="") as f:
        return Patch(f.read()).subject


def _copy_fields(tm, entry, name, keep=()):
    """Patch ``name``'s deps.json entry says what the carried one says,
    but for the fields in ``keep``."""
    data = json.loads(json.dumps(tm.data))
    new = [e for e in data["series"] if e["file"] == name][0]
    for field in CARRIED_FIELDS:
        if field in entry and field not in keep:
            new[field] = json.loads(json.dumps(entry[field]))
    write_atomic(tm.path, dump(tm.doc_with(data)))
    return load(tm.root, base=tm.name)

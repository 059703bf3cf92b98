"""refresh: regenerate patches/ and deps.json from the commits in
out/<base>/src.

The output is canonical: `git format-patch` with zero commit ids, full
blob ids, no signature and no rename detection, file names from the
subjects. Run on an unchanged out/<base>/src, it changes no byte.
"""

import json
import os
import re
import tempfile

from .. import console, subproc
from ..errors import UvPatchError, EXIT_STATE
from ..fsutil import Lock, remove_tree, sha256_file, write_atomic
from .apply import BASE_TAG, STATE_FILE, read_state, wanted_state
from .manifest import dump, validate
from .patchfile import Patch, unusable

# --full-index: abbreviated blob ids grow with the repository's object
# count, so the same series would print differently from a shallow cache
# and from a full clone.
FORMAT_PATCH = ["format-patch", "--zero-commit", "--no-signature",
                "--full-index", "--no-renames", "--no-numbered",
                "--subject-prefix=PATCH", "--no-cover-letter",
                "--encode-email-headers"]
_STATUS = re.compile(r"^Upstream-Status:\s*([A-Za-z-]+)", re.M)


def format_series(src, base, head, dest):
    """Writes base..head as numbered patches in ``dest``; returns names."""
    subproc.git(FORMAT_PATCH + ["-o", dest, "%s..%s" % (base, head)], cwd=src)
    return sorted(n for n in os.listdir(dest) if n.endswith(".patch"))


def platforms_of(files):
    """The platforms a change touches, from the files it edits."""
    found = set()
    for path in files:
        if path.startswith("src/win/") or path.startswith("include/uv/win"):
            found.add("windows")
        elif re.search(r"src/unix/(linux|.*epoll)", path):
            found.add("linux")
        elif re.search(r"src/unix/(darwin|kqueue|fsevents)", path):
            found.add("macos")
        elif path.startswith("src/unix/") or path == "include/uv/unix.h":
            found.add("unix")
    if "unix" in found:
        found -= {"linux", "macos"}
    return sorted(found) or ["unix", "windows"]


def _slug(name):
    return name[5:]  # drop "NNNN-"


def _prior_entry(name, index, names, old_series):
    """The deps.json entry a regenerated patch inherits (platforms, tests,
    proofs): the one with the same subject; else, for a reworded subject,
    the one at the same place, unless that one lives on under its own
    subject (a patch was dropped or moved)."""
    for entry in old_series:
        if _slug(entry["file"]) == _slug(name):
            return entry
    if index < len(old_series):
        candidate = old_series[index]
        if _slug(candidate["file"]) not in {_slug(n) for n in names}:
            return candidate
    return None


def _summary_after_rename(entry, prior, patches_dir, commit, src, name):
    """A patch whose subject changed keeps its deps.json entry, summary
    included: a summary that was the old subject becomes the new one;
    one written by hand is kept, and named, as it may no longer say what
    the patch changes. Returns the line that says which."""
    subject = subproc.git_out(["log", "-1", "--format=%s", commit], cwd=src)
    old_subject = None
    try:
        with open(os.path.join(patches_dir, prior["file"]),
                  encoding="utf-8", errors="replace", newline="") as f:
            old_subject = Patch(f.read()).subject
    except OSError:
        pass
    if entry.get("summary") in (old_subject, _slug(prior["file"])[:-6]):
        entry["summary"] = subject
        return ("%s was %s: its summary in deps.json was the old subject, "
                "now the new one" % (name, prior["file"]))
    return ("check the summary of %s (was %s) in deps.json: %r was "
            "written for the old patch; rewrite it if it no longer says "
            "what the patch changes" % (name, prior["file"],
                                        entry.get("summary")))


def _read_or_none(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _restore(before):
    """Puts back the files ``before`` recorded ({path: bytes or None});
    True when every one is back."""
    whole = True
    for path, data in before.items():
        try:
            if os.path.isfile(path) and _read_or_none(path) == data:
                continue    # never written (a read-only folder)
            if data is None:
                remove_tree(path)
            else:
                write_atomic(path, data)
        except OSError:
            whole = False   # the error being raised says what went wrong
    return whole


# While refresh writes patches/ and deps.json, the repository root holds
# what they were, so that a kill between two writes is undone by the next
# command (see undo_interrupted): a folder with "files.json" (relative
# path: index of its copy, or null for a file that did not exist) and the
# copies. Made whole beside it, then renamed into place.
JOURNAL = ".refresh-journal"


def _write_journal(root, before):
    journal = os.path.join(root, JOURNAL)
    staged = journal + ".new"
    remove_tree(staged)
    try:
        os.makedirs(staged)
        listing = {}
        for k, (path, data) in enumerate(sorted(before.items())):
            # out/<base>/src's state file, wherever --out puts it, by its
            # absolute path; patches/ and deps.json relative to the root.
            rel = os.path.abspath(path) if _is_state(path) else \
                os.path.relpath(path, root).replace(os.sep, "/")
            listing[rel] = None if data is None else str(k)
            if data is not None:
                write_atomic(os.path.join(staged, str(k)), data)
        write_atomic(os.path.join(staged, "files.json"),
                     json.dumps(listing, indent=2) + "\n")
        os.rename(staged, journal)
    except BaseException:
        remove_tree(staged)
        raise


def _is_state(path):
    return os.path.basename(path) == STATE_FILE and \
        os.path.basename(os.path.dirname(path)) == ".git"


def _drop_journal(root):
    journal = os.path.join(root, JOURNAL)
    if os.path.lexists(journal):
        os.rename(journal, journal + ".old")
    for left in (journal + ".old", journal + ".new"):
        remove_tree(left)


def _journal_lock(root):
    # The root folder itself, so no lock file stays in the repository.
    return Lock(root, "refresh", wait=True, name=None)


def undo_interrupted(root):
    """Puts patches/ and deps.json back as they were before a refresh that
    was killed while it wrote them; True when it did. Run by every command
    before deps.json is read, so any of them repairs the repository."""
    journal = os.path.join(root, JOURNAL)
    if not any(os.path.lexists(journal + end) for end in ("", ".new",
                                                          ".old")):
        return False
    with _journal_lock(root):
        listing = None
        try:
            with open(os.path.join(journal, "files.json"),
                      encoding="utf-8") as f:
                listing = json.load(f)
        except (OSError, ValueError):
            pass    # not renamed into place: nothing was written yet
        if not isinstance(listing, dict):
            _drop_journal(root)
            return False
        before = {}
        for rel, copy in listing.items():
            rel = str(rel)
            parts = rel.split("/")
            if os.path.isabs(rel) and _is_state(rel):
                path = rel
            elif parts[0] in ("patches", "deps.json") and ".." not in parts:
                path = os.path.join(root, *parts)
            else:
                continue    # not a file refresh writes
            data = None
            if copy is not None:
                with open(os.path.join(journal, str(copy)), "rb") as f:
                    data = f.read()
            before[path] = data
        if not _restore(before):
            raise UvPatchError(
                "cannot put back patches/ and deps.json as they were before "
                "an interrupted refresh (%s)" % journal,
                hint="make them writable, then run the command again",
                status=EXIT_STATE)
        _drop_journal(root)
    console.note("put back patches/ and deps.json as they were before a "
                 "refresh that was interrupted; run refresh again")
    return True


def _check_applied(manifest, state, shown):
    """Refuses when deps.json or patches/<base>/ changed since ``shown``
    (out/<base>/src) was applied: refresh would write the older series
    over that change."""
    applied = {p["file"]: p["sha256"] for p in state["patches"]}
    now = wanted_state(manifest)
    changed = []
    if state["tree"] != now["tree"]:
        changed.append("the base tree in deps.json")
    for e in now["patches"]:
        if e["file"] not in applied:
            changed.append("%s (new)" % e["file"])
        elif applied[e["file"]] != e["sha256"]:
            changed.append(e["file"])
    changed += ["%s (removed)" % f for f in applied
                if f not in {e["file"] for e in now["patches"]}]
    if changed:
        patches = "patches/%s/" % manifest.name
        raise UvPatchError(
            "%s changed since %s was applied: %s; refresh would overwrite "
            "that with the older series in %s"
            % (patches, shown, ", ".join(changed), shown),
            hint="to keep the change in %s, run `scripts/uvpatch apply%s` "
                 "(with --discard if %s has commits of its own), then "
                 "refresh; to keep %s instead, restore %s and deps.json "
                 "(git checkout -- %s deps.json)"
                 % (patches, manifest.base_option, shown, shown, patches,
                    patches), status=EXIT_STATE)


# What git leaves in .git while an operation is stopped halfway, and
# the command that finishes it with git's editor shut (core.editor), as
# the user may have no terminal. A rebase by "git am" marks its own.
_MIDWAY = (("rebase-merge", "a rebase",
            "-c core.editor=true rebase --continue"),
           ("rebase-apply/rebasing", "a rebase",
            "-c core.editor=true rebase --continue"),
           ("rebase-apply", "an am", "am --continue"),
           ("CHERRY_PICK_HEAD", "a cherry-pick",
            "-c core.editor=true cherry-pick --continue"),
           ("REVERT_HEAD", "a revert",
            "-c core.editor=true revert --continue"),
           ("MERGE_HEAD", "a merge", "-c core.editor=true merge --continue"))


def _check_settled(src, shown):
    """Refuses a tree stopped inside a git operation, or on a detached
    HEAD: its HEAD is not the series, and refresh would cut the series
    to the commits before the stop."""
    for name, what, how in _MIDWAY:
        if os.path.lexists(os.path.join(src, ".git", name)):
            words = how.split()
            verb = words[words.index("--continue") - 1]
            raise UvPatchError(
                "%s is in the middle of %s: its HEAD is not the whole "
                "series" % (shown, what),
                hint="finish it (%s) or abort it (%s), then refresh"
                     % (console.git_hint(src, how),
                        console.git_hint(src, verb + " --abort")),
                status=EXIT_STATE)
    if subproc.git(["symbolic-ref", "-q", "HEAD"], cwd=src,
                   check=False).returncode != 0:
        raise UvPatchError(
            "%s has a detached HEAD: it may not be the whole series"
            % shown,
            hint="check out the series' branch (%s, or a branch made at "
                 "HEAD with git switch -c), then refresh"
                 % console.git_hint(src, "checkout series"),
            status=EXIT_STATE)


def _check_dropped(manifest, used, src, shown):
    """Refuses to drop a patch of deps.json (and its proof cases) that no
    commit in ``shown`` carries on, unless told to."""
    gone = [e for e in manifest.series if id(e) not in used]
    if not gone:
        return
    names = ["%s%s" % (e["file"], " (proof: %s)" % ", ".join(
        c for p in e["proof"] for c in p.get("cases", []))
        if e.get("proof") else "") for e in gone]
    raise UvPatchError(
        "refresh would drop %d patch(es) that %s no longer has: %s"
        % (len(gone), shown, "; ".join(names)),
        hint="to drop them, run `scripts/uvpatch refresh%s --drop`; to keep "
             "them, put their commits back (%s), or start again from "
             "patches/ with `scripts/uvpatch apply%s --discard`"
             % (manifest.base_option, console.git_hint(src, "reflog"),
                manifest.base_option),
        status=EXIT_STATE)


def _check_round_trip(src, base, head, tmp, names, commits, shown):
    """Refuses, before anything is written, a series that apply would
    not take back: an empty commit, a file name git quotes, whitespace
    damage; applied to the base in an index of its own, the patches must
    give HEAD's tree."""
    hint = ("fix the commit in %s (%s: drop an empty commit, give a file "
            "an ASCII name, remove trailing white space), then refresh; "
            "nothing was written"
            % (shown, console.git_hint(src, "rebase -i " + BASE_TAG)))
    if len(names) != len(commits):
        raise UvPatchError(
            "git format-patch wrote %d patches for the %d commits in %s "
            "(an empty commit?)" % (len(names), len(commits), shown),
            hint=hint, status=EXIT_STATE)
    env = {"GIT_INDEX_FILE": os.path.join(tmp, "round-trip.index")}
    subproc.git(["read-tree", base], cwd=src, env=env)
    for name, commit in zip(names, commits):
        path = os.path.join(tmp, name)
        with open(path, encoding="utf-8", errors="surrogateescape",
                  newline="") as f:
            problem = unusable(f.read())
        why = problem[0] if problem else None
        if not why:
            res = subproc.git(["apply", "--cached", "--whitespace=error",
                               "--", path], cwd=src, env=env, check=False)
            why = res.returncode and "git apply says: " + " ".join(
                res.stderr.split())[:300]
        if why:
            raise UvPatchError(
                "commit %s would become %s, which apply refuses: %s"
                % (commit[:12], name, why), hint=hint, status=EXIT_STATE)
    tree = subproc.git_out(["write-tree"], cwd=src, env=env)
    if tree != subproc.git_out(["rev-parse", head + "^{tree}"], cwd=src):
        raise UvPatchError(
            "the patches of %s, applied to the base, do not give its tree"
            % shown, hint=hint, status=EXIT_STATE)


def refresh(manifest, out, src=None, priors=None, drop=False):
    """``src`` defaults to out/<base>/src; ``priors`` (rebase) gives the old
    deps.json entry of each commit, as numbering may have shifted. Unless
    ``drop``, a patch of deps.json that no commit carries on is refused."""
    own = src is None   # rebase hands a tree it made for the new base
    src = src or os.path.join(out, "src")
    state = read_state(src)
    shown = console.shown(src)
    if state is None:
        raise UvPatchError("%s is missing or was not made by apply" % shown,
                           hint="run `scripts/uvpatch apply%s`, commit your "
                                "changes in %s, then refresh"
                                % (manifest.base_option, shown),
                           status=EXIT_STATE)
    if own:
        _check_settled(src, shown)
        _check_applied(manifest, state, shown)
    dirty = subproc.git_out(["status", "--porcelain"], cwd=src)
    if dirty:
        raise UvPatchError("%s has uncommitted edits:\n  " % shown
                           + "\n  ".join(dirty.splitlines()[:10]),
                           hint="commit them (%s, or a new commit), then "
                                "refresh"
                                % console.git_hint(src, "commit --amend"),
                           status=EXIT_STATE)
    base = subproc.git_out(["rev-parse", BASE_TAG], cwd=src)
    head = subproc.git_out(["rev-parse", "HEAD"], cwd=src)
    merges = subproc.git_out(["rev-list", "--merges", "%s..%s" % (base, head)],
                             cwd=src)
    if merges:
        raise UvPatchError("%s has merge commits: a series is linear"
                           % shown,
                           hint="rebase them away (%s)" % console.git_hint(
                               src, "rebase -i " + BASE_TAG),
                           status=EXIT_STATE)
    patches_dir = manifest.patch_dir
    os.makedirs(patches_dir, exist_ok=True)
    old_by_index = list(manifest.series)
    # Scratch in out/, under its lock: what a killed run left there goes.
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        if name.startswith(".refresh-"):
            remove_tree(os.path.join(out, name))
    with tempfile.TemporaryDirectory(prefix=".refresh-", dir=out) as tmp:
        names = format_series(src, base, head, tmp)
        commits = subproc.git_out(["rev-list", "--reverse", "%s..%s"
                                   % (base, head)], cwd=src).split()
        _check_round_trip(src, base, head, tmp, names, commits, shown)
        series, changed, renamed, used = [], [], [], set()
        for i, (name, commit) in enumerate(zip(names, commits)):
            path = os.path.join(tmp, name)
            message = subproc.git_out(["log", "-1", "--format=%B", commit],
                                      cwd=src)
            files = subproc.git_out(["diff-tree", "--no-commit-id",
                                     "--name-only", "-r", commit],
                                    cwd=src).split("\n")
            if priors is not None:
                prior = priors[i]
            else:
                prior = _prior_entry(name, i, names, old_by_index)
            if prior:
                used.add(id(prior))
            entry = dict(prior) if prior else {
                "file": name, "sha256": "", "platforms": platforms_of(files),
                "upstream_status": "Pending",
                "summary": subproc.git_out(
                    ["log", "-1", "--format=%s", commit], cwd=src)}
            if prior and _slug(prior["file"]) != _slug(name):
                renamed.append(_summary_after_rename(
                    entry, prior, patches_dir, commit, src, name))
            entry["file"] = name
            entry["sha256"] = sha256_file(path)
            m = _STATUS.search(message)
            if m:
                entry["upstream_status"] = m.group(1)
            old_path = os.path.join(patches_dir, name)
            if not os.path.isfile(old_path) or \
                    sha256_file(old_path) != entry["sha256"]:
                changed.append(name)
            series.append(entry)
        if own and not drop:
            _check_dropped(manifest, used, src, shown)
        data = json.loads(json.dumps(manifest.data))
        data["series"] = series
        # Every other patch in the folder goes: when rebase makes an
        # existing base of another series, its old files are not in
        # ``manifest.series``.
        removed = sorted(({e["file"] for e in manifest.series} | {
            n for n in os.listdir(patches_dir) if n.endswith(".patch")})
            - set(names))
        # Check the new manifest against the new files before writing.
        staged = os.path.join(tmp, "root")
        os.makedirs(os.path.join(staged, "patches", manifest.name))
        for name in names:
            os.link(os.path.join(tmp, name),
                    os.path.join(staged, "patches", manifest.name, name))
        doc = manifest.doc_with(data)
        validate({**doc, "bases": [data], "default_base": manifest.name},
                 staged)
        # patches/ and deps.json change together or not at all: if a
        # write fails (a full disk, a read-only file), undo the others.
        text = dump(doc)
        with open(manifest.path, encoding="utf-8") as f:
            new_deps = f.read() != text
        before = {os.path.join(patches_dir, name): _read_or_none(
            os.path.join(patches_dir, name)) for name in removed
            + [n for n in names if n in changed]}
        if new_deps:
            before[manifest.path] = _read_or_none(manifest.path)
        # out/<base>/src matches patches/ again: recorded with them, so
        # apply is a no-op, and undone with them.
        state["patches"] = [{"file": e["file"], "sha256": e["sha256"],
                             "commit": c} for e, c in zip(series, commits)]
        state["head"] = head
        state_path = os.path.join(src, ".git", STATE_FILE)
        before[state_path] = _read_or_none(state_path)
        with _journal_lock(manifest.root):
            if len(before) > 1:     # not the state file alone
                _write_journal(manifest.root, before)
            try:
                for name in names:
                    if name in changed:
                        with open(os.path.join(tmp, name), "rb") as f:
                            write_atomic(os.path.join(patches_dir, name),
                                         f.read())
                for name in removed:
                    remove_tree(os.path.join(patches_dir, name))
                if new_deps:
                    write_atomic(manifest.path, text)
                write_atomic(state_path, json.dumps(state, indent=2) + "\n")
            except BaseException:
                if _restore(before):
                    _drop_journal(manifest.root)
                raise
            _drop_journal(manifest.root)
    # The base's own folder: each base has one under patches/.
    for name in changed:
        console.note("wrote patches/%s/%s" % (manifest.name, name))
    for name in removed:
        console.note("removed patches/%s/%s" % (manifest.name, name))
    if not changed and not removed:
        console.note("patches/ is up to date (%d patches)" % len(series))
    for line in renamed:
        console.note(line)
    return changed, removed

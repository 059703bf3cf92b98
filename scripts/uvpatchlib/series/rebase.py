"""rebase: move the series to another upstream commit.

The new base is fetched and verified like the pinned one, and every patch
is applied with a three-way merge (`git am -3`) in out/rebase, a git
repository of its own. Only when all of them are in does the series get
refreshed against the new base and deps.json rewritten; a conflict stops
with the pinned series untouched and the conflicted tree left in
out/rebase for `rebase --continue` or `rebase --abort`. Where REF is
found, and the base it becomes, is newbase.py's part.
"""

import copy
import json
import os
import re
import shlex
import shutil

from .. import console, subproc
from ..errors import UvPatchError, EXIT_APPLY, EXIT_STATE
from ..source.fetch import Fetcher, fetch_ref
from ..fsutil import remove_tree, replace_dir, sha256_file, write_atomic
from . import rebasetry
from .apply import (AM_IDENTITY, BASE_TAG, STATE_FILE, _build, apply_series,
                    declare_shallow, local_changes, read_state)
from .manifest import Manifest, load, validate
from .newbase import base_entry
from .refresh import refresh

STATE = "uvpatch-rebase.json"       # in out/rebase/.git
PATCHES = "uvpatch-rebase-patches"  # copies of the series being moved
OLD_REFS = "refs/uvpatch-old/"      # the old series, for the merge bases

RESOLVE_HINT = ("resolve it in %s: edit the files, `git add` them, then run "
                "`scripts/uvpatch rebase --continue`; or give up with "
                "`scripts/uvpatch rebase --abort` (patches/ and deps.json "
                "are untouched until the rebase completes)")


def _dir(out):
    return os.path.join(out, "rebase")


def _load(work):
    try:
        with open(os.path.join(work, ".git", STATE), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _save(work, state):
    write_atomic(os.path.join(work, ".git", STATE),
                 json.dumps(state, indent=2) + "\n")


# Starting: the new base, verified, and the series copied aside.

def start(manifest, out_root, ref, source=None, name=None, nearest=True):
    """Moves ``manifest``'s series (or, with ``nearest``, that of the base
    nearest to REF) onto REF, as the base ``name``."""
    work = _dir(out_root)
    if _load(work) is not None:
        raise UvPatchError(
            "a rebase is already in progress in %s" % work,
            hint="finish it with `scripts/uvpatch rebase --continue` or "
                 "drop it with `scripts/uvpatch rebase --abort`",
            status=EXIT_STATE)
    console.step("rebase: fetch %s" % ref)
    found, scratch = fetch_ref(manifest, out_root, ref, source)
    # Every tree the rebase needs comes from --source too when it is a
    # repository or bundle (it holds the old bases as well as REF).
    also = rebasetry.tree_sources(source)
    try:
        onto, notes = base_entry(manifest, found, name)
        target = validate(manifest.doc_with(onto), manifest.root,
                          check_files=False, base=onto["name"])
        entry = Fetcher(target).fetch(found["fetch_from"])
        if nearest:
            manifest = rebasetry.choose(manifest, out_root, found, entry,
                                        also)
            onto, notes = base_entry(manifest, found, name)
            target = validate(manifest.doc_with(onto), manifest.root,
                              check_files=False, base=onto["name"])
        upstream_has = rebasetry.already_upstream(manifest, found)
        # The old series must apply on the old base: its commits give
        # the three-way merges their common ancestors.
        rebasetry.fetch_base(manifest, also)
        old_src = apply_series(manifest, os.path.join(out_root,
                                                      manifest.name))
    finally:
        remove_tree(scratch)
    for note in notes:
        console.note(note)

    console.step("rebase %s onto %s (%s), as base %s"
                 % (manifest.name, onto["upstream"]["tag"],
                    onto["upstream"]["commit"][:12], onto["name"]))
    remove_tree(work)
    try:
        bare = copy.deepcopy(onto)
        bare["series"] = []
        base = _build(Manifest(bare, manifest.root, manifest.path), entry,
                      work)["base"]
        # A base fetched shallow lacks its parents: both repositories must
        # say so, or git walks into the missing history and fails.
        declare_shallow(old_src, subproc.git_out(
            ["rev-parse", BASE_TAG + "^{commit}"], cwd=old_src))
        declare_shallow(work, base)
        subproc.git(["fetch", "-q", "--no-tags", "--update-shallow", "--",
                     old_src,
                     "+refs/tags/%s:%sbase" % (BASE_TAG, OLD_REFS),
                     "+HEAD:%shead" % OLD_REFS], cwd=work)
        folder = os.path.join(work, ".git", PATCHES)
        os.makedirs(folder)
        for e in manifest.series:
            shutil.copy(manifest.patch_path(e), folder)
    except BaseException:
        remove_tree(work)
        raise
    state = {
        "from": manifest.name,
        "onto": onto,
        "notes": notes,
        "deps_sha256": sha256_file(manifest.path),
        "base": base,
        "patches": [{"file": e["file"], "status": "pending"}
                    for e in manifest.series],
    }
    for item in state["patches"]:
        if item["file"] in upstream_has:
            item.update(status="upstream", commit=upstream_has[item["file"]])
            console.note("%s: dropped: already upstream (commit %s is in %s)"
                         % (item["file"], item["commit"][:12],
                            onto["upstream"]["commit"][:12]))
    _save(work, state)
    return _run(manifest, out_root, work, state)


# Applying: one `git am -3` per patch, stopping at a conflict.

def _run(manifest, out, work, state):
    folder = os.path.join(work, ".git", PATCHES)
    for item in state["patches"]:
        if item["status"] != "pending":
            continue
        before = _head(work)
        # Saved first, so a crash in `git am` can be told apart later.
        item.update(status="running", before=before)
        _save(work, state)
        res = subproc.git(["am", "-q", "-3", "--committer-date-is-author-date",
                           "--", os.path.join(folder, item["file"])], cwd=work,
                          env=AM_IDENTITY, check=False)
        if res.returncode == 0:
            _record(item, work, before)
            del item["before"]
            _save(work, state)
            continue
        item["status"] = "conflict"
        item["files"] = _unmerged(work)
        _save(work, state)
        raise UvPatchError(_describe_conflict(work, item, state, res),
                           hint=RESOLVE_HINT % work, status=EXIT_APPLY)
    return _finish(manifest, out, work, state)


def _record(item, work, before):
    head = _head(work)
    if head == before:
        item["status"] = "dropped"
        console.note("%s: no changes left on the new base (already "
                     "upstream): dropped" % item["file"])
    else:
        item["status"] = "applied"
        item["commit"] = head
        console.note("applied %s" % item["file"])


def _head(work):
    return subproc.git_out(["rev-parse", "HEAD"], cwd=work)


def _unmerged(work):
    out = subproc.git_out(["diff", "--name-only", "--diff-filter=U"], cwd=work)
    return sorted(set(out.splitlines()))


def _status(work):
    # Not git_out: its strip() would eat the first line's status column.
    return subproc.git(["status", "--porcelain"], cwd=work).stdout.splitlines()


_KINDS = {"UU": "both changed", "AA": "both added",
          "DU": "deleted upstream, changed by the patch",
          "UD": "changed upstream, deleted by the patch",
          "AU": "added upstream", "UA": "added by the patch",
          "DD": "deleted on both sides"}


def _markers(path):
    """[(first, last)] line ranges of the conflict blocks in ``path``."""
    ranges, first = [], None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if line.startswith("<<<<<<< "):
                    first = n
                elif line.startswith(">>>>>>> ") and first is not None:
                    ranges.append((first, n))
                    first = None
    except OSError:
        pass
    return ranges


def _lines(blocks):
    return ("lines " + ", ".join("%d-%d" % b for b in blocks)) if blocks \
        else ""


def _describe_conflict(work, item, state, res):
    up = state["onto"]["upstream"]
    lines = ["%s does not apply on %s (%s): conflict"
             % (item["file"], up["tag"], up["commit"][:12])]
    codes = {}
    for line in _status(work):
        codes[line[3:]] = line[:2]
    for path in item["files"]:
        blocks = _markers(os.path.join(work, path))
        where = _lines(blocks)
        kind = _KINDS.get(codes.get(path), "in conflict")
        lines.append("  %s: %s%s" % (path, kind,
                                     "; " + where if where else ""))
    if not item["files"]:
        detail = (res.stdout + res.stderr).strip()
        lines.append("  git am said: " + detail.replace("\n", "\n    "))
    done = [p["file"] for p in state["patches"] if p["status"] == "applied"]
    if done:
        lines.append("applied before it: " + ", ".join(done))
    gone = [p["file"] for p in state["patches"]
            if p["status"] in ("upstream", "dropped")]
    if gone:
        lines.append("dropped as already upstream: " + ", ".join(gone))
    return "\n".join(lines)


# Continuing and aborting.

def _in_progress(out):
    work = _dir(out)
    state = _load(work)
    if state is None:
        raise UvPatchError("no rebase in progress (%s holds none)" % work,
                           hint="start one with `scripts/uvpatch rebase "
                                "--onto REF`", status=EXIT_STATE)
    return work, state


def resume(root, out):
    work, state = _in_progress(out)
    manifest = load(root, base=state["from"])
    if sha256_file(manifest.path) != state["deps_sha256"]:
        raise UvPatchError("deps.json changed since the rebase started",
                           hint="run `scripts/uvpatch rebase --abort` and "
                                "start again from the new series",
                           status=EXIT_STATE)
    am = os.path.join(work, ".git", "rebase-apply")
    for p in state["patches"]:
        if p["status"] == "running":  # interrupted inside `git am`
            if os.path.isdir(am):
                subproc.git(["am", "--abort"], cwd=work, check=False)
            if _head(work) != p["before"]:
                _record(p, work, p["before"])
            else:
                p["status"] = "pending"
            del p["before"]
    item = next((p for p in state["patches"]
                 if p["status"] == "conflict"), None)
    if item is None:  # interrupted, or stopped after the merges
        _save(work, state)
        return _run(manifest, out, work, state)
    unmerged = _unmerged(work)
    if unmerged:
        raise UvPatchError(
            "%s: unresolved files:\n  %s" % (item["file"],
                                             "\n  ".join(unmerged)),
            hint=RESOLVE_HINT % work, status=EXIT_APPLY)
    marked = ["%s: %s" % (p, _lines(blocks))
              for p in item["files"]
              for blocks in [_markers(os.path.join(work, p))] if blocks]
    if marked:
        raise UvPatchError(
            "%s: conflict markers are still in:\n  %s"
            % (item["file"], "\n  ".join(marked)),
            hint=RESOLVE_HINT % work, status=EXIT_APPLY)
    loose = [ln for ln in _status(work) if ln[1] != " "]
    if loose:
        raise UvPatchError(
            "%s: edits not added to the index:\n  %s"
            % (item["file"], "\n  ".join(loose)),
            hint="`git add` them (or remove the untracked files) in %s, "
                 "then `scripts/uvpatch rebase --continue`" % work,
            status=EXIT_APPLY)
    if os.path.isdir(am):
        staged = subproc.git(["diff", "--cached", "--quiet"], cwd=work,
                             check=False).returncode != 0
        if not staged:
            # Dropping a patch is a choice to make explicitly.
            raise UvPatchError(
                "%s: the resolution leaves no change to commit" % item["file"],
                hint="to drop the patch from the series, run `git am "
                     "--skip` in %s, then `scripts/uvpatch rebase "
                     "--continue`; to keep it, redo its change (`git am "
                     "--show-current-patch=diff` shows it) and `git add`"
                     % work, status=EXIT_APPLY)
        env = dict(AM_IDENTITY)
        date = _author_date(am)
        if date:
            env["GIT_COMMITTER_DATE"] = date
        subproc.git(["am", "--continue"], cwd=work, env=env)
    # Without `git am` state the user finished it by hand; HEAD tells.
    _record(item, work, item["before"])
    for key in ("before", "files"):
        item.pop(key, None)
    _save(work, state)
    return _run(manifest, out, work, state)


def _author_date(am):
    try:
        with open(os.path.join(am, "author-script"), encoding="utf-8") as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                if key == "GIT_AUTHOR_DATE":
                    return shlex.split(value)[0]
    except (OSError, ValueError, IndexError):
        pass
    return None


def abort(out):
    work, _ = _in_progress(out)
    if os.path.isdir(os.path.join(work, ".git", "rebase-apply")):
        subproc.git(["am", "--abort"], cwd=work, check=False)
    remove_tree(work)
    console.note("rebase aborted: %s removed; patches/ and deps.json are as "
                 "they were" % work)


# Finishing: refresh against the new base, then out/src is the result.

def _finish(manifest, out, work, state):
    onto = state["onto"]
    head = _head(work)
    applied = [p for p in state["patches"] if p["status"] == "applied"]
    by_file = {e["file"]: e for e in manifest.series}
    write_atomic(os.path.join(work, ".git", STATE_FILE), json.dumps({
        "tree": onto["upstream"]["tree"], "base": state["base"],
        "patches": [], "head": head}, indent=2) + "\n")
    target = validate(manifest.doc_with(onto), manifest.root,
                      check_files=False, base=onto["name"])
    console.step("rebase: refresh")
    before = {e["file"]: _read(manifest.patch_path(e))
              for e in manifest.series}
    changed, removed = refresh(target, out, src=work,
                               priors=[by_file[p["file"]] for p in applied])
    for ref in subproc.git_out(["for-each-ref", "--format=%(refname)",
                                OLD_REFS], cwd=work).split():
        subproc.git(["update-ref", "-d", ref], cwd=work)
    remove_tree(os.path.join(work, ".git", PATCHES))
    os.unlink(os.path.join(work, ".git", STATE))

    src = os.path.join(out, target.name, "src")
    if os.path.isdir(src) and local_changes(src, read_state(src)):
        console.note("%s has work of its own: kept; the rebased tree is "
                     "in %s" % (console.shown(src), console.shown(work)))
    else:
        # A new base has no folder in out/ yet.
        os.makedirs(os.path.dirname(src), exist_ok=True)
        replace_dir(work, src)
    _report(manifest, target, state, before)
    return changed, removed


def _read(path):
    with open(path, encoding="utf-8", errors="surrogateescape",
              newline="") as f:
        return f.read()


def _essence(text):
    """A patch without what a new base changes by itself: blob ids and
    line numbers."""
    keep = []
    for line in text.split("\n"):
        if line.startswith("index "):
            continue
        keep.append(re.sub(r"^@@ -\d+(,\d+)? \+\d+(,\d+)? @@", "@@", line))
    return "\n".join(keep)


def _report(manifest, target, state, before):
    old_up, new_up = manifest.upstream, state["onto"]["upstream"]
    print("base %s: upstream %s (%s) -> base %s: %s (%s)" % (
        manifest.name, old_up["tag"], old_up["commit"][:12], target.name,
        new_up["tag"], new_up["commit"][:12]), flush=True)
    names = sorted(n for n in os.listdir(target.patch_dir)
                   if n.endswith(".patch"))
    applied = [p for p in state["patches"] if p["status"] == "applied"]
    new_of = dict(zip([p["file"] for p in applied], names))
    for item in state["patches"]:
        old = item["file"]
        if item["status"] == "dropped":
            print("%s: dropped: empty on the new base (already upstream)"
                  % old, flush=True)
            continue
        if item["status"] == "upstream":
            print("%s: dropped: already upstream (%s is in %s)"
                  % (old, item["commit"][:12], new_up["tag"]), flush=True)
            continue
        new = new_of[old]
        text = _read(os.path.join(target.patch_dir, new))
        if text == before[old]:
            how = "unchanged"
        elif _essence(text) == _essence(before[old]):
            how = "same change, moved (line numbers or blob ids)"
        else:
            how = "changed by the merge: review it"
        print("%s%s: %s" % (old, " -> " + new if new != old else "", how),
              flush=True)
    for note in state["notes"]:
        print("deps.json: " + note, flush=True)

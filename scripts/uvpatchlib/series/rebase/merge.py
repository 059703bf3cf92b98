"""A rebase's merges: the new base fetched and verified, the old series
applied on its own base for the common ancestors, then one three-way
merge (`git am -3`) per patch in out/rebase, stopping at a conflict for
`rebase --continue` or `rebase --abort`.
"""

import copy
import os
import shlex
import shutil

from ... import console, subproc
from ...errors import UvPatchError, EXIT_APPLY, EXIT_STATE
from ...fsutil import remove_tree, sha256_file
from ...source.fetch import Fetcher, fetch_ref
from ..apply import (AM_IDENTITY, BASE_TAG, _build, apply_series,
                     declare_shallow)
from ..manifest import Manifest, load, validate
from . import choose
from .baseentry import base_entry
from .finish import finish
from .state import OLD_REFS, PATCHES, head, load as load_state, save, \
    work_dir

RESOLVE_HINT = ("resolve it in %s: edit the files, `git add` them, then run "
                "`scripts/uvpatch rebase --continue`; or give up with "
                "`scripts/uvpatch rebase --abort` (patches/ and deps.json "
                "are untouched until the rebase completes)")


# Starting: the new base, verified, and the series copied aside.

def start(manifest, out_root, ref, source=None, name=None, nearest=True):
    """Moves ``manifest``'s series (or, with ``nearest``, that of the base
    nearest to REF) onto REF, as the base ``name``."""
    work = work_dir(out_root)
    if load_state(work) is not None:
        raise UvPatchError(
            "a rebase is already in progress in %s" % work,
            hint="finish it with `scripts/uvpatch rebase --continue` or "
                 "drop it with `scripts/uvpatch rebase --abort`",
            status=EXIT_STATE)
    console.step("rebase: fetch %s" % ref)
    found, scratch = fetch_ref(manifest, out_root, ref, source)
    # Every tree the rebase needs comes from --source too when it is a
    # repository or bundle (it holds the old bases as well as REF).
    also = choose.tree_sources(source)
    try:
        onto, notes = base_entry(manifest, found, name)
        target = validate(manifest.doc_with(onto), manifest.root,
                          check_files=False, base=onto["name"])
        entry = Fetcher(target).fetch(found["fetch_from"],
                                      label=found["shown"])
        if nearest:
            manifest = choose.choose(manifest, out_root, found, entry,
                                     also)
            onto, notes = base_entry(manifest, found, name)
            target = validate(manifest.doc_with(onto), manifest.root,
                              check_files=False, base=onto["name"])
        upstream_has = choose.already_upstream(manifest, found)
        # The old series must apply on the old base: its commits give
        # the three-way merges their common ancestors.
        choose.fetch_base(manifest, also)
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
    save(work, state)
    return _run(manifest, out_root, work, state)


# Applying: one `git am -3` per patch, stopping at a conflict.

def _run(manifest, out, work, state):
    folder = os.path.join(work, ".git", PATCHES)
    for item in state["patches"]:
        if item["status"] != "pending":
            continue
        before = head(work)
        # Saved first, so a crash in `git am` can be told apart later.
        item.update(status="running", before=before)
        save(work, state)
        res = subproc.git(["am", "-q", "-3", "--committer-date-is-author-date",
                           "--", os.path.join(folder, item["file"])], cwd=work,
                          env=AM_IDENTITY, check=False)
        if res.returncode == 0:
            _record(item, work, before)
            del item["before"]
            save(work, state)
            continue
        item["status"] = "conflict"
        item["files"] = _unmerged(work)
        save(work, state)
        raise UvPatchError(_describe_conflict(work, item, state, res),
                           hint=RESOLVE_HINT % work, status=EXIT_APPLY)
    return finish(manifest, out, work, state)


def _record(item, work, before):
    last = head(work)
    if last == before:
        item["status"] = "dropped"
        console.note("%s: no changes left on the new base (already "
                     "upstream): dropped" % item["file"])
    else:
        item["status"] = "applied"
        item["commit"] = last
        console.note("applied %s" % item["file"])


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
    work = work_dir(out)
    state = load_state(work)
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
            if head(work) != p["before"]:
                _record(p, work, p["before"])
            else:
                p["status"] = "pending"
            del p["before"]
    item = next((p for p in state["patches"]
                 if p["status"] == "conflict"), None)
    if item is None:  # interrupted, or stopped after the merges
        save(work, state)
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
    save(work, state)
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

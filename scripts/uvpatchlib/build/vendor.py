"""vendor: export the patched (or pristine) tree into another repository.

DEST (e.g. deps/libuv of a project) receives exactly the files of the
tree and UVPATCH.json, which says where they came from and lists every
file's git blob id, so a later export can tell an untouched earlier
export from one with local edits. Two exports of the same inputs are
byte-for-byte the same.

What DEST holds that no export wrote (its .git, a submodule's .git file,
empty folders, FIFOs) is kept, and so are DEST's mode, owner and ACL
(see swap.py). A lock on DEST's parent folder keeps two runs apart.
"""

import json
import os

from .. import VERSION, console, subproc
from ..errors import UvPatchError, EXIT_FAILURE, EXIT_STATE, EXIT_USAGE
from ..fsutil import (Lock, inside, no_space, out_of_space, remove_tree,
                      scratch_index)
from ..source.extract import NotARegularFile, open_regular
from ..source.gittree import file_ids
from ..series.apply import BASE_TAG, apply_series
from . import swap

PROVENANCE = "UVPATCH.json"


def check_dest(dest, manifest, out):
    """Refuses a DEST that cannot or must not receive the export."""
    real = os.path.realpath(dest)
    parent = os.path.dirname(real)
    if not os.path.isdir(parent):
        raise UvPatchError("%s: its parent folder %s does not exist"
                           % (dest, parent),
                           hint="create the parent folder first (the tool "
                                "makes only DEST itself)", status=EXIT_USAGE)
    root = os.path.realpath(manifest.root)
    if inside(root, real):
        raise UvPatchError("%s is this repository or holds it" % dest,
                           hint="export into another repository, e.g. "
                                "../myproject/deps/libuv", status=EXIT_USAGE)
    for folder, what in ((os.path.realpath(os.path.dirname(out)),
                          "the work folder out/"),
                         (os.path.join(root, "patches"), "patches/")):
        if inside(real, folder):
            raise UvPatchError("%s is inside %s" % (dest, what),
                               hint="export outside this repository's "
                                    "out/ and patches/; they are rewritten "
                                    "by the tool", status=EXIT_USAGE)
    if os.path.lexists(real) and not os.path.isdir(real):
        raise UvPatchError("%s exists and is not a folder" % dest,
                           hint="remove it or choose another DEST",
                           status=EXIT_USAGE)
    if os.path.isdir(real) and os.path.ismount(real):
        raise UvPatchError(
            "%s is a mount point: the export is swapped in by renaming "
            "DEST, which a mount point cannot be" % dest,
            hint="export into a folder inside it, e.g. %s"
                 % os.path.join(dest, "libuv"), status=EXIT_USAGE)


# A provenance file lists every file of a libuv tree: some 100 KiB.
_PROVENANCE_MAX = 16 << 20


def read_provenance(path):
    """The provenance file at ``path``, parsed; None for anything but a
    small regular file of JSON (a FIFO there would block, a link to
    /dev/zero never end)."""
    try:
        f = open_regular(path)
    except (OSError, NotARegularFile):
        return None
    with f:
        data = f.read(_PROVENANCE_MAX + 1)
    if len(data) > _PROVENANCE_MAX:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return None


def local_edits(dest, name=PROVENANCE):
    """None when DEST is not an earlier export; else the sorted list of
    "changed|added|removed path" lines against its provenance file
    ``name`` (a path under DEST; UVPATCH.json for an export)."""
    try:
        prov = read_provenance(os.path.join(dest, *name.split("/")))
        recorded = prov["files"]
        tree = prov["tree"]
        if prov.get("tool") != "uvpatch" or not isinstance(recorded, dict):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    nested = "/" in name
    files, actual = file_ids(dest, exclude=() if nested else [name])
    if nested:
        # A file in a subfolder is part of the tree: the lists decide.
        files.pop(name, None)
        actual = tree
    if actual == tree and files == recorded:
        return []
    edits = []
    for path in sorted(set(files) | set(recorded)):
        if path not in files:
            edits.append("removed " + path)
        elif path not in recorded:
            edits.append("added " + path)
        elif files[path] != recorded[path]:
            edits.append("changed " + path)
    # A provenance file edited by hand: the lists agree, the tree not.
    return edits or ["changed " + name]


def provenance(manifest, patched, tree, files, extra=None, series=None):
    """UVPATCH.json's text: fixed key order, no time, no local path;
    ``extra`` ({key: value}) comes before the tree and its files;
    ``series``, the patches applied when not the whole series."""
    up = manifest.upstream
    series = manifest.series if series is None else series
    data = {
        "tool": "uvpatch",
        "version": VERSION,
        "base": manifest.name,
        "upstream": {"name": up["name"], "tag": up["tag"],
                     "commit": up["commit"], "tree": up["tree"]},
        "patched": patched,
        "patches": [{"file": e["file"], "sha256": e["sha256"]}
                    for e in series] if patched else [],
    }
    data.update(extra or {})
    data.update({
        "tree": tree,
        "files": dict(sorted(files.items())),
    })
    return json.dumps(data, indent=2) + "\n"


def _export(src, rev, work, index):
    """Writes the files of ``rev`` of the repository ``src`` to ``work``."""
    env = {"GIT_INDEX_FILE": scratch_index(index), "GIT_WORK_TREE": work}
    try:
        subproc.git(["read-tree", rev], cwd=src, env=env)
        subproc.git(["checkout-index", "-a", "-f"], cwd=src, env=env)
    except UvPatchError as e:
        if out_of_space(work):
            raise no_space(os.path.dirname(work), "exporting the tree",
                           e.message.split("\n")[0][:200], EXIT_FAILURE)
        raise
    finally:
        remove_tree(index)


def _check_local(dest, force):
    """DEST's local edits (a list, empty for none) or None for a new or
    empty DEST; refuses what may not be replaced."""
    if not (os.path.isdir(dest) and os.listdir(dest)):
        return None
    edits = local_edits(dest)
    if edits is None:
        raise UvPatchError(
            "%s is not empty and is not an earlier export (no valid %s)"
            % (dest, PROVENANCE),
            hint="choose a new or empty folder, or remove this one "
                 "yourself if its content may go", status=EXIT_STATE)
    if edits and not force:
        raise UvPatchError(
            "%s has local edits since its export:\n  %s"
            % (dest, "\n  ".join(edits)),
            hint="move the edits into a patch (see docs/commands.md, "
                 "Editing a patch), or pass --force to overwrite them",
            status=EXIT_STATE)
    return edits


def _ours(dest):
    """The files the earlier export wrote in DEST, its provenance too."""
    return set(read_provenance(os.path.join(dest, PROVENANCE))["files"]) \
        | {PROVENANCE}


def _lock(dest):
    # DEST's parent, as DEST itself is replaced by the swap.
    return Lock(os.path.dirname(dest), "vendor", name=None,
                busy=("another uvpatch vendor is exporting into %s"
                      % os.path.dirname(dest),
                      "wait for it to finish, then run vendor again if "
                      "its result is not the one you want"))


def vendor(manifest, out, dest, patched=True, force=False, source=None):
    check_dest(dest, manifest, out)
    # A link is followed: the export goes where it points.
    dest = os.path.realpath(dest)
    name = os.path.basename(dest)
    parent = os.path.dirname(dest)
    places = swap.Places(dest, os.path.join(parent, ".%s.uvpatch-new" % name),
                         os.path.join(parent, ".%s.uvpatch-old" % name),
                         os.path.join(parent, ".%s.uvpatch-kept" % name))
    with _lock(dest):
        swap.recover(places)
        edits = _check_local(dest, force)
        if edits:
            console.note("--force: overwriting %d local edit(s) in %s"
                         % (len(edits), dest))
        src = apply_series(manifest, out, source=source)
        console.step("vendor")
        rev = "HEAD" if patched else BASE_TAG
        want = subproc.git_out(["rev-parse", rev + "^{tree}"], cwd=src)
        scratch = places.new
        try:
            os.makedirs(scratch)
            _export(src, rev, scratch, os.path.join(out, ".vendor.index"))
            files, tree = file_ids(scratch)
            if PROVENANCE in files:
                raise UvPatchError(
                    "the tree has a %s of its own, where vendor writes "
                    "its provenance file" % PROVENANCE,
                    hint="drop that file from the series (a patch adds "
                         "it)", status=EXIT_STATE)
            if tree != want:
                raise UvPatchError(
                    "the exported files have tree %s, git says %s"
                    % (tree, want),
                    hint="the file system changed the files (case "
                         "folding, links or modes?); export to another "
                         "disk")
            # A new file, never through a link of the tree.
            fd = os.open(os.path.join(scratch, PROVENANCE),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL
                         | getattr(os, "O_NOFOLLOW", 0), 0o644)
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(provenance(manifest, patched, tree, files))
            # DEST again, as it is now: an edit made while the series
            # was applied is not overwritten unseen.
            now = local_edits(dest) if os.path.isdir(dest) and \
                os.listdir(dest) else None
            if now != edits:
                raise UvPatchError(
                    "%s changed while vendor ran:\n  %s"
                    % (dest, "\n  ".join(now or ["it is not an earlier "
                                                   "export any more"])),
                    hint="nothing was overwritten; run vendor again once "
                         "nothing else writes there", status=EXIT_STATE)
            swap.swap_in(places, _ours(dest) if edits is not None
                         else set())
        finally:
            swap.recover(places)
    console.note("%s: %d files, tree %s (%s)"
                 % (dest, len(files), tree[:12],
                    "%d patches" % len(manifest.series) if patched
                    else "unpatched"))
    return dest, tree

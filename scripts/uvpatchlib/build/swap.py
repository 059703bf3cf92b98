"""Swapping a staged folder in place of one the user has, keeping what is
not ours.

install and vendor write a whole new folder beside DEST and swap it in,
so nobody sees half of it. What DEST holds that the tool did not write
(a .git folder or file, empty folders, FIFOs, sockets, device nodes) is
moved into the new folder first, and DEST's own mode, owner, group and
extended attributes (ACLs among them) are given to it.

A kill at any moment is undone by ``recover``: a journal beside DEST
lists what was moved, and whatever of it is still in the staged folder
goes back before that folder is removed.
"""

import errno
import json
import os
import stat

from ..errors import UvPatchError, EXIT_STATE
from ..fsutil import exchange, remove_tree, write_atomic


class Places:
    """The folders and files beside DEST that a swap uses."""

    def __init__(self, dest, new, old, journal):
        self.dest = dest
        self.new = new
        self.old = old
        self.journal = journal


def foreign(dest, ours):
    """The paths under ``dest`` (relative, with '/') that the tool did
    not write, topmost only: ``ours`` is the set of files and links it
    wrote there. A folder that holds none of ours is foreign whole."""
    keep_dirs = set()
    for path in ours:
        parts = path.split("/")
        for k in range(1, len(parts)):
            keep_dirs.add("/".join(parts[:k]))
    found = []

    def walk(folder, prefix):
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda d: d.name)
        for d in entries:
            rel = prefix + d.name
            mode = d.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode) and rel in keep_dirs:
                walk(d.path, rel + "/")
            elif stat.S_ISDIR(mode) or not (stat.S_ISREG(mode)
                                            or stat.S_ISLNK(mode)):
                found.append(rel)
            elif rel == ".git":     # a submodule's .git file
                found.append(rel)
            # Other files and links are ours, or local edits the caller
            # has refused or been told to overwrite (--force).
    walk(dest, "")
    return found


def copy_folder_meta(src, dst):
    """Gives ``dst`` the mode, owner, group and extended attributes of the
    folder ``src``, as far as this user may."""
    st = os.stat(src, follow_symlinks=False)
    try:
        os.chown(dst, st.st_uid, st.st_gid)
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EINVAL):
            raise
        try:    # not root: at least the group, when we are in it
            os.chown(dst, -1, st.st_gid)
        except OSError:
            pass
    # After chown, which clears the set-group-id bit.
    os.chmod(dst, stat.S_IMODE(st.st_mode))
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(src, follow_symlinks=False)
    except OSError:
        return
    for name in names:
        try:
            os.setxattr(dst, name, os.getxattr(src, name,
                                               follow_symlinks=False),
                        follow_symlinks=False)
        except OSError:
            pass    # a namespace we may not write (trusted., security.)


def swap_in(places, ours):
    """Moves what DEST holds that is not ours into the staged folder,
    gives it DEST's metadata and swaps it in. Raises UvPatchError, with
    nothing changed, when a kept entry is in the way of a new file."""
    dest, new = places.dest, places.new
    if not os.path.lexists(dest):
        os.rename(new, dest)
        return
    kept = foreign(dest, ours)
    clash = [p for p in kept
             if os.path.lexists(os.path.join(new, *p.split("/")))]
    if clash:
        raise UvPatchError(
            "%s holds %s, where the new content has a file of its own"
            % (dest, ", ".join(clash[:5])),
            hint="move those entries elsewhere, then run the command "
                 "again", status=EXIT_STATE)
    # A fixed temporary name, which recover() removes after a kill.
    write_atomic(places.journal, json.dumps(kept) + "\n",
                 tmp=places.journal + ".new")
    try:
        for rel in kept:
            target = os.path.join(new, *rel.split("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.rename(os.path.join(dest, *rel.split("/")), target)
        copy_folder_meta(dest, new)
        if exchange(new, dest):
            remove_tree(new)    # now the earlier content
        else:
            os.rename(dest, places.old)
            os.rename(new, dest)
            remove_tree(places.old)
    except BaseException:
        recover(places)
        raise
    os.unlink(places.journal)


def recover(places):
    """Undoes or finishes a swap that a kill or an error interrupted, so
    DEST holds the earlier or the new content, with every kept entry."""
    dest, new, old = places.dest, places.new, places.old
    if not os.path.lexists(dest) and os.path.isdir(old):
        os.rename(old, dest)
    try:
        with open(places.journal, encoding="utf-8") as f:
            kept = json.load(f)
    except FileNotFoundError:
        kept = []
    except ValueError:
        kept = []   # torn before its rename: nothing was moved yet
    if os.path.isdir(new) and os.path.isdir(dest):
        for rel in kept:
            here = os.path.join(new, *rel.split("/"))
            back = os.path.join(dest, *rel.split("/"))
            if os.path.lexists(here) and not os.path.lexists(back):
                os.makedirs(os.path.dirname(back), exist_ok=True)
                os.rename(here, back)
    for left in (new, old, places.journal, places.journal + ".new"):
        if os.path.lexists(left):
            remove_tree(left)

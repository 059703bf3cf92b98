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
    # A stack, not recursion: only folders of ``ours`` are entered, but
    # a user's prefix may be deep.
    stack = [(dest, "")]
    while stack:
        folder, prefix = stack.pop()
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda d: d.name)
        for d in entries:
            rel = prefix + d.name
            mode = d.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode) and rel in keep_dirs:
                stack.append((d.path, rel + "/"))
            elif stat.S_ISDIR(mode) or not (stat.S_ISREG(mode)
                                            or stat.S_ISLNK(mode)):
                found.append(rel)
            elif rel == ".git":     # a submodule's .git file
                found.append(rel)
            # Other files and links are ours, or local edits the caller
            # has refused or been told to overwrite (--force).
    return sorted(found)


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


# A journal lists the entries a swap moved: a few, with short paths.
JOURNAL_MAX = 1 << 20


def _bad_journal(journal, why):
    return UvPatchError(
        "%s is not a journal this tool wrote: %s" % (journal, why),
        hint="nothing was moved; if you did not make it, look at what it "
             "and the .uvpatch-new folder beside it hold, remove them, then "
             "run the command again", status=EXIT_STATE)


def read_journal(journal):
    """The kept paths a journal lists ([] when there is none, or it was
    torn before its rename); refuses anything but a small regular file
    holding a list of relative paths. Never blocks on a FIFO."""
    try:
        fd = os.open(journal, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return []
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _bad_journal(journal, "it is a symbolic link")
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise _bad_journal(journal, "it is not a regular file")
        if st.st_size > JOURNAL_MAX:
            raise _bad_journal(journal, "%d bytes, over the %d a journal "
                               "takes" % (st.st_size, JOURNAL_MAX))
        data = f.read(JOURNAL_MAX + 1)
    try:
        kept = json.loads(data.decode("utf-8"))
    except ValueError:
        return []   # torn before its rename: nothing was moved yet
    if not isinstance(kept, list) or not all(
            isinstance(rel, str) for rel in kept):
        raise _bad_journal(journal, "not a list of paths")
    for rel in kept:
        parts = rel.split("/")
        if rel.startswith("/") or "\\" in rel or "\0" in rel or any(
                part in ("", ".", "..") for part in parts):
            raise _bad_journal(journal, "%r is not a path inside the "
                               "folder" % rel)
    return kept


def _plain_folders(top, parts):
    """True when ``top`` and each folder of ``parts`` under it that exists
    is a folder, not a link: a move there stays inside ``top``."""
    path = top
    for part in [""] + parts:
        path = os.path.join(path, part) if part else path
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return True
        if not stat.S_ISDIR(mode):
            return False
    return True


def recover(places):
    """Undoes or finishes a swap that a kill or an error interrupted, so
    DEST holds the earlier or the new content, with every kept entry."""
    dest, new, old = places.dest, places.new, places.old
    if not os.path.lexists(dest) and os.path.isdir(old) and \
            not os.path.islink(old):
        os.rename(old, dest)
    kept = read_journal(places.journal)
    if _plain_folders(new, []) and os.path.isdir(dest):
        for rel in kept:
            parts = rel.split("/")
            here = os.path.join(new, *parts)
            back = os.path.join(dest, *parts)
            # Never through a link: it would move a file from elsewhere.
            if not (_plain_folders(new, parts[:-1])
                    and _plain_folders(dest, parts[:-1])):
                continue
            if os.path.lexists(here) and not os.path.lexists(back):
                os.makedirs(os.path.dirname(back), exist_ok=True)
                os.rename(here, back)
    for left in (new, old, places.journal, places.journal + ".new"):
        if os.path.lexists(left):
            remove_tree(left)

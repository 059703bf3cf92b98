"""Git object ids of a plain directory, computed without git.

The pinned tree id is the one fact every source must agree on: a git
checkout, a tarball and a cache entry are all verified by hashing what
they hold exactly as ``git add -A -f && git write-tree`` would.
"""

import hashlib
import os
import stat


def _object_id(kind, data):
    header = b"%s %d\0" % (kind, len(data))
    return hashlib.sha1(header + data).digest()


def _blob_id(path):
    """A file's blob id, read in chunks: a file need not fit in memory."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        digest = hashlib.sha1(b"blob %d\0" % size)
        left = size
        while left:
            chunk = f.read(min(left, 1 << 20))
            if not chunk:   # shrank while read: the id cannot match
                break
            digest.update(chunk)
            left -= len(chunk)
    return digest.digest()


def _entry_sort_key(entry):
    # Git sorts tree entries by name, with directories compared as if
    # their name ended in '/'.
    name, mode = entry[0], entry[1]
    return name + b"/" if mode == b"40000" else name


def _entries(path, skip, prefix):
    """A folder's entries as (name, mode, oid or None, path, rel): a
    subfolder's oid is filled in once it is hashed."""
    found = []
    with os.scandir(path) as it:
        for dirent in it:
            name = os.fsencode(dirent.name)
            if name in skip:
                continue
            st = dirent.stat(follow_symlinks=False)
            rel = prefix + dirent.name
            if stat.S_ISLNK(st.st_mode):
                target = os.fsencode(os.readlink(dirent.path))
                found.append([name, b"120000", _object_id(b"blob", target),
                              dirent.path, rel])
            elif stat.S_ISDIR(st.st_mode):
                found.append([name, b"40000", None, dirent.path, rel])
            elif stat.S_ISREG(st.st_mode):
                mode = b"100755" if st.st_mode & stat.S_IXUSR else b"100644"
                found.append([name, mode, _blob_id(dirent.path),
                              dirent.path, rel])
            # Sockets, fifos and devices have no place in a source tree;
            # git ignores them too.
    return found


def _hash_dir(path, skip, files=None):
    """The tree id of ``path`` (bytes, None for no file in it), walked
    with a stack: a tree thousands of folders deep is no recursion."""
    top = [None, b"40000", None, path, ""]
    # Each frame: the entry being hashed, its children, the next child.
    stack = [[top, _entries(path, skip, ""), 0]]
    while stack:
        frame = stack[-1]
        entry, children, k = frame
        if k < len(children):
            frame[2] += 1
            child = children[k]
            if child[1] == b"40000":
                stack.append([child, _entries(child[3], (),
                                              child[4] + "/"), 0])
            continue
        stack.pop()
        kept = [c for c in children if c[2] is not None]
        if files is not None:
            for c in kept:
                if c[1] != b"40000":
                    files[c[4]] = "%s %s" % (c[1].decode(), c[2].hex())
        if kept:
            kept.sort(key=_entry_sort_key)
            entry[2] = _object_id(b"tree", b"".join(
                c[1] + b" " + c[0] + b"\0" + c[2] for c in kept))
    return top[2]


EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def tree_id(path, exclude=()):
    """The git tree id of the directory ``path`` (a top-level .git is
    left out, as git itself does, and so are top-level ``exclude``)."""
    skip = {b".git"} | {os.fsencode(n) for n in exclude}
    oid = _hash_dir(path, skip)
    return oid.hex() if oid is not None else EMPTY_TREE


def file_ids(path, exclude=()):
    """{relative path with '/': "mode blob-id"} of every file and link
    under ``path``, skipped names as for tree_id; and the tree id."""
    skip = {b".git"} | {os.fsencode(n) for n in exclude}
    files = {}
    oid = _hash_dir(path, skip, files)
    return files, oid.hex() if oid is not None else EMPTY_TREE

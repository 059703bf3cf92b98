"""A tarball's headers, read here before Python's tarfile parses them.

tarfile trusts what a header says: a pax header or a GNU long name is
read whole into memory whatever its size, the pax records go through
regular expressions that some Pythons run for hours on a few crafted
KiB (CVE-2024-6232; Debian's 3.11.2 has the fix, pyenv's 3.11.7 not),
and nothing limits how deep a name goes. This scan walks the 512-byte
blocks itself, with its own bounds, so whatever Python runs the tool, a
tarball tarfile would choke on is refused first as not a source of
libuv. It stops where tarfile stops: at an end block or a block that is
no header.
"""

import bz2
import gzip
import lzma

_BLOCK = 512
# libuv's tarballs: pax headers of a few hundred bytes (git archive's
# commit id, a long path), names under 200 characters, 6 folders deep.
MAX_PAX = 8 << 10
MAX_LONG_NAME = 4 << 10
MAX_DEPTH = 32
_PAX_TYPES = (b"x", b"g", b"X")
_LONG_TYPES = (b"L", b"K")
# Old GNU sparse members carry extra header blocks (libuv has none; the
# size caps refuse a large one).
_SPARSE = b"S"
_MAX_SPARSE_BLOCKS = 64


class BadTarball(Exception):
    """Why the tarball is not one of libuv's (its headers say so)."""


def _stream(f):
    """``f`` decompressed, tried as tarfile tries: plain when its first
    block is a header, else by the compressor's magic number."""
    first = f.read(_BLOCK)
    f.seek(0)
    packed = first[:2] == b"\x1f\x8b" or first[:3] == b"BZh" or \
        first[:6] == b"\xfd7zXZ\x00"
    if len(first) == _BLOCK and _is_header(first):
        if packed:
            # tarfile would fall back to the compressed reading if the
            # plain one failed further on: which one it uses is unclear.
            raise BadTarball("its start is both a tar header and a "
                             "compressed stream")
        return f
    if first[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=f, mode="rb")
    if first[:3] == b"BZh":
        return bz2.BZ2File(f, mode="rb")
    if first[:6] == b"\xfd7zXZ\x00":
        return lzma.LZMAFile(f, mode="rb")
    return f


def _number(field):
    """A numeric header field as tarfile reads it; None if unreadable."""
    if field[:1] in (b"\x80", b"\xff"):
        n = 0
        for byte in field[1:]:
            n = (n << 8) + byte
        return -(256 ** (len(field) - 1) - n) if field[:1] == b"\xff" \
            else n
    try:    # as tarfile: ASCII, cut at NUL, str's idea of white space
        text = field.split(b"\0", 1)[0].decode("ascii").strip()
        return int(text or "0", 8)
    except ValueError:
        return None


def _is_header(block):
    """True when ``block`` is a header tarfile accepts (its checksum)."""
    chksum = _number(block[148:156])
    if chksum is None:
        return False
    rest = block[:148] + b" " * 8 + block[156:]
    unsigned = sum(rest)
    signed = sum(b - 256 if b > 127 else b for b in rest)
    return chksum in (unsigned, signed)


def _pax_records(data):
    """{keyword: value} of a pax header, refusing any record that is not
    exactly "LEN KEYWORD=VALUE\\n" with LEN its length in bytes."""
    records, pos = {}, 0
    while pos < len(data):
        space = data.find(b" ", pos, pos + 21)
        if space <= pos or not data[pos:space].isdigit():
            raise BadTarball("a pax header record without its length")
        end = pos + int(data[pos:space])
        equals = data.find(b"=", space + 1, end)
        if end > len(data) or end <= space + 2 or equals <= space + 1 or \
                data[end - 1:end] != b"\n":
            raise BadTarball("a pax header record of the wrong length")
        keyword = data[space + 1:equals]
        if not keyword.isascii() or b"\n" in keyword:
            raise BadTarball("a pax header keyword that is not text")
        records[keyword] = data[equals + 1:end - 1]
        pos = end
    return records


def _depth(name):
    """The folders on a member's way: 2 for libuv-1.50.0/src/uv-common.c."""
    return len([p for p in name.split(b"/") if p not in (b"", b".")]) - 1


def _names(block, fields, long_name):
    """Every name the member could be given: the pax path, the GNU long
    name, the ustar prefix and name."""
    name = block[0:100].split(b"\0", 1)[0]
    if block[257:262] == b"ustar" and block[345:346] != b"\0":
        name = block[345:500].split(b"\0", 1)[0] + b"/" + name
    return [n for n in (fields.get(b"path"), long_name, name) if n]


def scan(f, max_members):
    """Reads the tarball ``f`` (a binary file at its start) header by
    header; raises BadTarball for what tarfile must not be given, and
    returns the number of headers. Keeps nothing in memory but pax
    headers and long names, both capped."""
    stream = _stream(f)
    pax_global, pax, long_name, before = {}, {}, None, []
    members = 0
    while True:
        block = stream.read(_BLOCK)
        if len(block) < _BLOCK or block.count(0) == _BLOCK or \
                not _is_header(block):
            return members      # where tarfile stops, or fails itself
        members += 1
        if members > max_members:
            raise BadTarball("it has more than %d headers" % max_members)
        kind = block[156:157]
        size = _number(block[124:136])
        if size is None or size < 0:
            raise BadTarball("a header with a bad size")
        if kind in _PAX_TYPES or kind in _LONG_TYPES:
            # tarfile reads these one inside the other, and the order
            # decides which wins: one of each kind at most, not mixed.
            local = b"x" if kind == b"X" else kind
            if local in before or len(before) > 2 or (
                    local == b"x" and b"L" in before or
                    local == b"L" and b"x" in before):
                raise BadTarball("a member with stacked extended headers")
            before.append(local)
            cap = MAX_PAX if kind in _PAX_TYPES else MAX_LONG_NAME
            if size > cap:
                raise BadTarball("a %s of %d bytes (at most %d)" % (
                    "pax header" if kind in _PAX_TYPES else "long name",
                    size, cap))
            data = stream.read(size)
            stream.read(-size % _BLOCK)
            if len(data) < size:
                return members  # truncated: tarfile says so itself
            if kind == b"L":
                long_name = data.split(b"\0", 1)[0]
            elif kind in _PAX_TYPES:
                records = _pax_records(data)
                if kind == b"g" and b"size" in records:
                    raise BadTarball("a global pax header that sets a size")
                if any(k.startswith(b"GNU.sparse.") for k in records):
                    # tarfile reads their maps from the data, unbounded.
                    raise BadTarball("a GNU sparse member (libuv's "
                                     "tarballs have none)")
                (pax_global if kind == b"g" else pax).update(records)
            continue
        if kind == b"\0" and block[0:100].split(b"\0", 1)[0].endswith(b"/"):
            kind = b"5"     # an old tar's folder, as tarfile reads it
        if kind == _SPARSE and block[482]:
            # Old GNU sparse: more maps follow in blocks of their own, each
            # saying whether another comes; tarfile reads them all.
            for _ in range(_MAX_SPARSE_BLOCKS):
                more = stream.read(_BLOCK)
                if len(more) < _BLOCK:
                    return members
                if not more[504]:
                    break
            else:
                raise BadTarball("a sparse member with more than %d map "
                                 "blocks" % _MAX_SPARSE_BLOCKS)
        for name in _names(block, {**pax_global, **pax}, long_name):
            if _depth(name) > MAX_DEPTH:
                raise BadTarball(
                    "member %r... is %d folders deep (at most %d)"
                    % (name[:60].decode("utf-8", "replace"), _depth(name),
                       MAX_DEPTH))
        if b"size" in pax:
            if not pax[b"size"].isdigit():
                raise BadTarball("a pax size that is not a number")
            size = int(pax[b"size"])
        pax, long_name, before = {}, None, []
        # The data, as tarfile skips it: in bounded reads.
        left = 0 if kind in (b"1", b"2", b"3", b"4", b"5", b"6") \
            else size + (-size % _BLOCK)
        while left > 0:
            chunk = stream.read(min(left, 1 << 20))
            if not chunk:
                return members
            left -= len(chunk)

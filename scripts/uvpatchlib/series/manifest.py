"""deps.json: the supported bases, each a pinned upstream, the ways to
obtain it, and the series of patches for it (in patches/<base>/).

Validation is strict: every field is checked for presence, type and form,
and each message names the field and how to fix it.
"""

import hashlib
import json
import os
import re
import stat
import urllib.parse

from ..errors import UvPatchError, EXIT_MANIFEST, EXIT_USAGE
from ..fsutil import file_kind

SCHEMA = 2

# Yocto's Upstream-Status values.
UPSTREAM_STATUSES = ("Pending", "Submitted", "Accepted", "Backport",
                     "Denied", "Inactive-Upstream", "Inappropriate")
PLATFORMS = ("unix", "linux", "macos", "windows")
TARGETS = ("linux", "macos", "windows")
SOURCE_KINDS = ("git", "archive", "debian")
# What .ci/run runs on a base beyond the test command, in this order:
# check --bisect, test --suite libuv, test --config asan/ubsan/tsan.
CI_STEPS = ("bisect", "libuv", "sanitizers")

# \Z, not $: "$" also matches before a trailing newline.
_HEX40 = re.compile(r"^[0-9a-f]{40}\Z")
_HEX64 = re.compile(r"^[0-9a-f]{64}\Z")
_PATCH_NAME = re.compile(r"^[0-9]{4}-[A-Za-z0-9][A-Za-z0-9._-]*\.patch\Z")
_CASE = re.compile(r"^[a-z0-9_]+/[a-z0-9_]+\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+/@-]*\Z")
# Debian's forms: a package name, a version, a suite; none can be an
# option to apt-get.
_DEBIAN_FIELDS = (
    ("package", re.compile(r"^[a-z0-9][a-z0-9+.-]+\Z"),
     "a Debian package name"),
    ("version", re.compile(r"^[0-9][A-Za-z0-9.+~:-]*\Z"),
     "a Debian version like 1.50.0-2"),
    ("suite", re.compile(r"^[a-z0-9][a-z0-9.-]*\Z"),
     "a Debian suite like trixie"),
    ("file", re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+~-]*\Z"),
     "a file name like libuv-1.50.0.tar.gz"))
# A base's name is also its folder under patches/ and out/.
_BASE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\Z")
# Folders of out/ that are no base's: `rebase` works in out/rebase.
RESERVED_NAMES = ("rebase",)

_FIELDS = {
    "top": {"schema": int, "default_base": str, "bases": list},
    "base": {"name": str, "for": str, "ci": list, "upstream": dict,
             "sources": list, "series": list},
    "upstream": {"name": str, "repository": str, "tag": str, "commit": str,
                 "tree": str},
    "git": {"kind": str, "url": str},
    "archive": {"kind": str, "url": str, "file": str, "sha256": str},
    "debian": {"kind": str, "package": str, "version": str, "suite": str,
               "file": str, "sha256": str},
    "series": {"file": str, "sha256": str, "platforms": list,
               "upstream_status": str, "summary": str, "tests": list,
               "proof": list, "repairs": list, "no_proof": str},
    "proof": {"target": str, "cases": list, "native_only": bool},
}
_OPTIONAL = {"proof": {"native_only"},
             "series": {"tests", "proof", "repairs", "no_proof"},
             "base": {"for", "ci"}}


class Manifest:
    """One base of a validated deps.json: ``data`` is that base's object,
    ``doc`` the whole file, ``root`` the folder that holds it."""

    def __init__(self, data, root, path, doc=None):
        self.data = data
        self.root = root
        self.path = path
        self.doc = doc if doc is not None else {
            "schema": SCHEMA, "default_base": data["name"], "bases": [data]}
        self.name = data["name"]
        self.upstream = data["upstream"]
        self.sources = data["sources"]
        self.series = data["series"]

    @property
    def is_default(self):
        return self.name == self.doc["default_base"]

    @property
    def base_option(self):
        """What a command in a hint adds to work on this base, the
        default one too: a bare command reads as a slip."""
        return " --base " + self.name

    @property
    def patch_dir(self):
        return os.path.join(self.root, "patches", self.name)

    def doc_with(self, data):
        """The whole deps.json with this base's object replaced by (or,
        for a new name, ``data`` added after the others)."""
        doc = json.loads(json.dumps(self.doc))
        for i, base in enumerate(doc["bases"]):
            if base["name"] == data["name"]:
                doc["bases"][i] = data
                return doc
        doc["bases"].append(data)
        return doc

    @property
    def tree(self):
        return self.upstream["tree"]

    @property
    def commit(self):
        return self.upstream["commit"]

    def patch_path(self, entry):
        return os.path.join(self.patch_dir, entry["file"])

    def source(self, kind):
        for src in self.sources:
            if src["kind"] == kind:
                return src
        return None


def _fail(field, problem, fix):
    raise UvPatchError("deps.json: %s: %s" % (field, problem), hint=fix,
                       status=EXIT_MANIFEST)


def _check_fields(obj, kind, where):
    if not isinstance(obj, dict):
        _fail(where or "the top level", "must be an object",
              "see README.md, The bases")
    spec = _FIELDS[kind]
    optional = _OPTIONAL.get(kind, set())
    for key in obj:
        if key not in spec:
            _fail("%s.%s" % (where, key) if where else key, "unknown key",
                  "remove it; known keys here: %s" % ", ".join(sorted(spec)))
    for key, typ in spec.items():
        name = "%s.%s" % (where, key) if where else key
        if key not in obj:
            if key in optional:
                continue
            _fail(name, "missing", "add it (%s)" % typ.__name__)
        value = obj[key]
        if typ is int and isinstance(value, bool) or \
                not isinstance(value, typ):
            _fail(name, "must be of type %s, not %s"
                  % (_json_type(typ), _json_type(type(value))),
                  "fix its value")
        if typ is str and not value.strip():
            _fail(name, "is empty", "give it a value")


def _json_type(typ):
    return {str: "string", int: "number", bool: "boolean", list: "array",
            dict: "object", float: "number", type(None): "null"}.get(
                typ, typ.__name__)


def _check_hex(value, pattern, field, what):
    if not pattern.match(value):
        length = 40 if pattern is _HEX40 else 64
        _fail(field, "%r is not a full %s (%d lowercase hex digits)"
              % (value, what, length),
              "write the full %d-digit value, not an abbreviation" % length)


def validate(doc, root, check_files=True, base=None):
    """Checks ``doc`` (parsed deps.json) and returns the Manifest of
    ``base`` (a name; None: the default base)."""
    _check_fields(doc, "top", "")
    if doc["schema"] != SCHEMA:
        _fail("schema", "unsupported version %r" % doc["schema"],
              "this tool reads schema %d (one object per base in "
              "\"bases\", see README.md)" % SCHEMA)
    if not doc["bases"]:
        _fail("bases", "is empty", "declare at least the default base")
    names = []
    for i, data in enumerate(doc["bases"]):
        where = "bases[%d]" % i
        _check_fields(data, "base", where)
        name = data["name"]
        if not _BASE_NAME.match(name):
            _fail(where + ".name", "%r is not a base name like v1.50.0"
                  % name, "use letters, digits and . _ + - (it names "
                  "folders under patches/ and out/)")
        if name.lower() in RESERVED_NAMES:
            _fail(where + ".name", "%r is the name of the tool's own folder "
                  "out/%s" % (name, name.lower()), "give the base another "
                  "name (say %s-base): its work folder is out/<name>"
                  % name)
        if name in names:
            _fail(where + ".name", "%r is declared twice" % name,
                  "declare each base once")
        names.append(name)
        _validate_base(data, where, os.path.join(root, "patches", name),
                       check_files)
    if doc["default_base"] not in names:
        _fail("default_base", "%r is not one of the bases (%s)"
              % (doc["default_base"], ", ".join(names)),
              "name one of the declared bases")
    if check_files:
        folder = os.path.join(root, "patches")
        if os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                if name not in names:
                    _fail("bases", "patches/%s belongs to no declared base"
                          % name, "declare the base in deps.json or "
                          "delete the folder")
    wanted = doc["default_base"] if base is None else base
    if wanted not in names:
        raise UvPatchError("no base %r in deps.json" % wanted,
                           hint="the bases are: %s (scripts/uvpatch bases "
                                "lists them)" % ", ".join(names),
                           status=EXIT_USAGE)
    data = doc["bases"][names.index(wanted)]
    return Manifest(data, root, os.path.join(root, "deps.json"), doc)


def _validate_base(data, where, folder, check_files):
    steps = data.get("ci", [])
    for step in steps:
        if step not in CI_STEPS:
            _fail(where + ".ci", "unknown CI step %r" % (step,),
                  "use %s (see .ci/run)" % ", ".join(CI_STEPS))
    if len(set(steps)) != len(steps):
        _fail(where + ".ci", "names a step twice", "name each step once")
    up = data["upstream"]
    _check_fields(up, "upstream", where + ".upstream")
    _check_hex(up["commit"], _HEX40, where + ".upstream.commit", "commit id")
    check_url(up["repository"], where + ".upstream.repository", local=True)
    if not _TAG.match(up["tag"]):
        _fail(where + ".upstream.tag", "%r is not a tag or label like "
              "v1.50.0" % up["tag"], "use letters, digits and . _ + - / @")
    _check_hex(up["tree"], _HEX40, where + ".upstream.tree", "tree id")

    kinds = set()
    for i, src in enumerate(data["sources"]):
        swhere = "%s.sources[%d]" % (where, i)
        kind = src.get("kind") if isinstance(src, dict) else None
        if kind not in SOURCE_KINDS:
            _fail(swhere + ".kind", "must be one of %s, not %r"
                  % (", ".join(SOURCE_KINDS), kind), "fix the kind")
        if kind in kinds:
            _fail(swhere + ".kind", "a second %r source" % kind,
                  "keep one source of each kind")
        kinds.add(kind)
        _check_fields(src, kind, swhere)
        if "sha256" in src:
            _check_hex(src["sha256"], _HEX64, swhere + ".sha256", "sha256")
        if "file" in src and os.path.basename(src["file"]) != src["file"]:
            _fail(swhere + ".file", "must be a plain file name",
                  "drop the directory part")
        if "url" in src:
            check_url(src["url"], swhere + ".url",
                      local=kind == "git")
        for key, pattern, example in _DEBIAN_FIELDS:
            if key in src and not pattern.match(src[key]):
                _fail("%s.%s" % (swhere, key), "%r is not %s"
                      % (src[key], example), "write it as Debian does")

    seen = set()
    for i, entry in enumerate(data["series"]):
        ewhere = "%s.series[%d]" % (where, i)
        _check_fields(entry, "series", ewhere)
        name = entry["file"]
        if not _PATCH_NAME.match(name):
            _fail(ewhere + ".file", "%r is not a patch name like "
                  "0001-subsystem-summary.patch" % name,
                  "rename the patch (scripts/uvpatch refresh names them)")
        if not name.startswith("%04d-" % (i + 1)):
            _fail(ewhere + ".file", "%r is entry %d of the series but is "
                  "numbered %s" % (name, i + 1, name[:4]),
                  "number the patches 0001, 0002, ... in series order")
        if name in seen:
            _fail(ewhere + ".file", "%r is listed twice" % name,
                  "list each patch once")
        seen.add(name)
        _check_hex(entry["sha256"], _HEX64, ewhere + ".sha256", "sha256")
        if not entry["platforms"]:
            _fail(ewhere + ".platforms", "is empty",
                  "list the platforms it changes: %s" % ", ".join(PLATFORMS))
        for p in entry["platforms"]:
            if p not in PLATFORMS:
                _fail(ewhere + ".platforms", "unknown platform %r" % (p,),
                      "use %s" % ", ".join(PLATFORMS))
        if entry["upstream_status"] not in UPSTREAM_STATUSES:
            _fail(ewhere + ".upstream_status", "unknown value %r"
                  % entry["upstream_status"],
                  "use one of Yocto's: %s" % ", ".join(UPSTREAM_STATUSES))
        for t in entry.get("tests", []):
            if not isinstance(t, str) or not re.match(r"^[a-z0-9_]+\Z", t):
                _fail(ewhere + ".tests", "%r is not a program name" % (t,),
                      "name programs of tests/regress/: a file without "
                      ".c, or a folder")
        for j, proof in enumerate(entry.get("proof", [])):
            pwhere = "%s.proof[%d]" % (ewhere, j)
            _check_fields(proof, "proof", pwhere)
            if proof["target"] not in TARGETS:
                _fail(pwhere + ".target", "unknown target %r"
                      % proof["target"], "use %s" % ", ".join(TARGETS))
            if not proof["cases"]:
                _fail(pwhere + ".cases", "is empty",
                      "list program/case names that fail on the base")
            for case in proof["cases"]:
                if not isinstance(case, str) or not _CASE.match(case):
                    _fail(pwhere + ".cases", "%r is not program/case"
                          % (case,), "write e.g. udp_budget/recvmmsg_20")
        # Cases an earlier patch breaks (an upstream defect a backport
        # brings) and this one mends: they pass on the base, so they
        # cannot be proofs, but check --bisect expects them to fail before.
        for case in entry.get("repairs", []):
            if not isinstance(case, str) or not _CASE.match(case):
                _fail(ewhere + ".repairs", "%r is not program/case"
                      % (case,), "write e.g. udp_errqueue/send_only")
        if check_files:
            _check_patch_file(os.path.join(folder, name), entry["sha256"],
                              ewhere, data["name"])
    if check_files:
        listed = set(seen)
        if os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                if name.endswith(".patch") and name not in listed:
                    _fail(where + ".series", "%s is not listed"
                          % _rel(os.path.join(folder, name)),
                          "add it to the series or delete the file")


def _check_patch_file(path, expected, where, base):
    """The listed patch file exists, is a regular file (a FIFO would
    hang the read) and has the recorded sha256."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        _fail(where + ".file", "%s does not exist" % _rel(path),
              "add the file or remove the entry")
    except OSError as e:
        _fail(where + ".file", "%s cannot be read: %s"
              % (_rel(path), e.strerror), "fix the name or the file")
    if not stat.S_ISREG(mode):
        _fail(where + ".file", "%s is %s, not a regular file"
              % (_rel(path), file_kind(mode)),
              "put the patch file itself there")
    with open(path, "rb") as f:
        raw = f.read()
    actual = hashlib.sha256(raw).hexdigest()
    if actual == expected:
        return
    if b"\r\n" in raw and hashlib.sha256(
            raw.replace(b"\r\n", b"\n")).hexdigest() == expected:
        # Not an edit: a checkout turned LF into CRLF (core.autocrlf).
        _fail(where + ".sha256", "%s has CRLF line endings; with LF, as "
              "recorded, it matches" % _rel(path), CRLF_HINT)
    _fail(where + ".sha256", "does not match %s (expected %s, actual %s)%s"
          % (_rel(path), expected, actual,
             "; its lines end in CRLF" if b"\r\n" in raw else ""),
          "if the patch change is intended, run `scripts/uvpatch refresh "
          "--base %s` or write the new sha256" % base)


CRLF_HINT = ("the patches must keep their exact bytes: delete patches/ and "
             "run `git checkout -- patches` (the repository's "
             ".gitattributes keeps them as committed, whatever "
             "core.autocrlf says), or clone with `git clone -c "
             "core.autocrlf=false`")


def check_url(url, field, local):
    """A URL in deps.json is data handed to git or urllib, never an
    option: https://HOST/..., file:///PATH or, with ``local``, an
    absolute local path. Anything else (an option, ssh, ext::, a bare
    name git would read as HOST:PATH) is refused."""
    allowed = "https://HOST/PATH or file:///PATH" + (
        ", or an absolute local path" if local else "")
    if _CONTROL.search(url) or url != url.strip():
        _fail(field, "%r holds control characters or surrounding blanks"
              % url, "write a plain URL: %s" % allowed)
    if url.startswith("-"):
        _fail(field, "%r starts with '-': git would read it as an option"
              % url, "write a URL: %s" % allowed)
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https" and parts.netloc and \
            not parts.netloc.startswith("-"):
        return
    if parts.scheme == "file" and parts.path.startswith("/") and \
            parts.netloc in ("", "localhost"):
        return
    # C:\ is a drive on Windows only; elsewhere git reads HOST:PATH.
    if local and (url.startswith("/") or os.name == "nt" and re.match(
            r"^[A-Za-z]:[\\/]", url)):
        return
    _fail(field, "%r is not an https, file:// or local source" % url,
          "write %s (other schemes, such as ssh, http or ext::, are not "
          "taken)" % allowed)


def _rel(path):
    """patches/<base>/<file>, for messages."""
    parts = path.replace(os.sep, "/").split("/")
    return "/".join(parts[-3:])


def load(root, check_files=True, base=None):
    path = os.path.join(root, "deps.json")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UvPatchError("deps.json not found in %s" % root,
                           hint="run from the repository or pass --repo",
                           status=EXIT_MANIFEST)
    if not stat.S_ISREG(mode):
        # Reading a FIFO would wait for a writer forever.
        raise UvPatchError("deps.json is %s, not a regular file"
                           % file_kind(mode), hint="restore it: `git "
                           "checkout -- deps.json`", status=EXIT_MANIFEST)
    with open(path, "rb") as f:
        raw = f.read()
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise UvPatchError("deps.json: not UTF-8: byte %d (0x%02x)"
                           % (e.start, raw[e.start]),
                           hint="save the file as UTF-8", status=EXIT_MANIFEST)
    except (ValueError, RecursionError) as e:
        raise UvPatchError("deps.json: not valid JSON: %s" % e,
                           hint="fix the syntax at that line and column",
                           status=EXIT_MANIFEST)
    return validate(data, root, check_files, base)


def dump(data):
    """deps.json's canonical text: two-space indent, keys in order."""
    return json.dumps(data, indent=2) + "\n"

"""deps.json: the pinned upstream, the ways to obtain it, and the series.

Validation is strict: every field is checked for presence, type and form,
and each message names the field and how to fix it.
"""

import hashlib
import json
import os
import re

from .errors import UvPatchError, EXIT_MANIFEST

SCHEMA = 1

# Yocto's Upstream-Status values.
UPSTREAM_STATUSES = ("Pending", "Submitted", "Accepted", "Backport",
                     "Denied", "Inactive-Upstream", "Inappropriate")
PLATFORMS = ("unix", "linux", "macos", "windows")
TARGETS = ("linux", "macos", "windows")
SOURCE_KINDS = ("git", "archive", "debian")

# \Z, not $: "$" also matches before a trailing newline.
_HEX40 = re.compile(r"^[0-9a-f]{40}\Z")
_HEX64 = re.compile(r"^[0-9a-f]{64}\Z")
_PATCH_NAME = re.compile(r"^[0-9]{4}-[A-Za-z0-9][A-Za-z0-9._-]*\.patch\Z")
_CASE = re.compile(r"^[a-z0-9_]+/[a-z0-9_]+\Z")

_FIELDS = {
    "top": {"schema": int, "upstream": dict, "sources": list,
            "series": list},
    "upstream": {"name": str, "repository": str, "tag": str, "commit": str,
                 "tree": str},
    "git": {"kind": str, "url": str},
    "archive": {"kind": str, "url": str, "file": str, "sha256": str},
    "debian": {"kind": str, "package": str, "version": str, "suite": str,
               "file": str, "sha256": str},
    "series": {"file": str, "sha256": str, "platforms": list,
               "upstream_status": str, "summary": str, "tests": list,
               "proof": list},
    "proof": {"target": str, "cases": list, "native_only": bool},
}
_OPTIONAL = {"proof": {"native_only"},
             "series": {"tests", "proof"}}


class Manifest:
    """A validated deps.json; ``root`` is the folder that holds it."""

    def __init__(self, data, root, path):
        self.data = data
        self.root = root
        self.path = path
        self.upstream = data["upstream"]
        self.sources = data["sources"]
        self.series = data["series"]

    @property
    def tree(self):
        return self.upstream["tree"]

    @property
    def commit(self):
        return self.upstream["commit"]

    def patch_path(self, entry):
        return os.path.join(self.root, "patches", entry["file"])

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
              "see README.md, deps.json")
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


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def validate(data, root, check_files=True):
    """Checks ``data`` (parsed deps.json) and returns a Manifest."""
    _check_fields(data, "top", "")
    if data["schema"] != SCHEMA:
        _fail("schema", "unsupported version %r" % data["schema"],
              "this tool reads schema %d" % SCHEMA)

    up = data["upstream"]
    _check_fields(up, "upstream", "upstream")
    _check_hex(up["commit"], _HEX40, "upstream.commit", "commit id")
    _check_hex(up["tree"], _HEX40, "upstream.tree", "tree id")

    kinds = set()
    for i, src in enumerate(data["sources"]):
        where = "sources[%d]" % i
        kind = src.get("kind") if isinstance(src, dict) else None
        if kind not in SOURCE_KINDS:
            _fail(where + ".kind", "must be one of %s, not %r"
                  % (", ".join(SOURCE_KINDS), kind), "fix the kind")
        if kind in kinds:
            _fail(where + ".kind", "a second %r source" % kind,
                  "keep one source of each kind")
        kinds.add(kind)
        _check_fields(src, kind, where)
        if "sha256" in src:
            _check_hex(src["sha256"], _HEX64, where + ".sha256", "sha256")
        if "file" in src and os.path.basename(src["file"]) != src["file"]:
            _fail(where + ".file", "must be a plain file name",
                  "drop the directory part")

    seen = set()
    for i, entry in enumerate(data["series"]):
        where = "series[%d]" % i
        _check_fields(entry, "series", where)
        name = entry["file"]
        if not _PATCH_NAME.match(name):
            _fail(where + ".file", "%r is not a patch name like "
                  "0001-subsystem-summary.patch" % name,
                  "rename the patch (scripts/uvpatch refresh names them)")
        if not name.startswith("%04d-" % (i + 1)):
            _fail(where + ".file", "%r is entry %d of the series but is "
                  "numbered %s" % (name, i + 1, name[:4]),
                  "number the patches 0001, 0002, ... in series order")
        if name in seen:
            _fail(where + ".file", "%r is listed twice" % name,
                  "list each patch once")
        seen.add(name)
        _check_hex(entry["sha256"], _HEX64, where + ".sha256", "sha256")
        if not entry["platforms"]:
            _fail(where + ".platforms", "is empty",
                  "list the platforms it changes: %s" % ", ".join(PLATFORMS))
        for p in entry["platforms"]:
            if p not in PLATFORMS:
                _fail(where + ".platforms", "unknown platform %r" % (p,),
                      "use %s" % ", ".join(PLATFORMS))
        if entry["upstream_status"] not in UPSTREAM_STATUSES:
            _fail(where + ".upstream_status", "unknown value %r"
                  % entry["upstream_status"],
                  "use one of Yocto's: %s" % ", ".join(UPSTREAM_STATUSES))
        for t in entry.get("tests", []):
            if not isinstance(t, str) or not re.match(r"^[a-z0-9_]+\Z", t):
                _fail(where + ".tests", "%r is not a program name" % (t,),
                      "name programs of tests/regress/ without .c")
        for j, proof in enumerate(entry.get("proof", [])):
            pwhere = "%s.proof[%d]" % (where, j)
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
        if check_files:
            path = os.path.join(root, "patches", name)
            if not os.path.isfile(path):
                _fail(where + ".file", "patches/%s does not exist" % name,
                      "add the file or remove the entry")
            actual = sha256_file(path)
            if actual != entry["sha256"]:
                _fail(where + ".sha256",
                      "does not match patches/%s (expected %s, actual %s)"
                      % (name, entry["sha256"], actual),
                      "if the patch change is intended, run "
                      "`scripts/uvpatch refresh` or write the new sha256")
    if check_files:
        listed = set(seen)
        folder = os.path.join(root, "patches")
        if os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                if name.endswith(".patch") and name not in listed:
                    _fail("series", "patches/%s is not listed" % name,
                          "add it to the series or delete the file")
    return Manifest(data, root, os.path.join(root, "deps.json"))


def load(root, check_files=True):
    path = os.path.join(root, "deps.json")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise UvPatchError("deps.json not found in %s" % root,
                           hint="run from the repository or pass --repo",
                           status=EXIT_MANIFEST)
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
    return validate(data, root, check_files)


def dump(data):
    """deps.json's canonical text: two-space indent, keys in order."""
    return json.dumps(data, indent=2) + "\n"

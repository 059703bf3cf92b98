"""What libuv's selection gave, kept for the run of all of libuv's suite.

`scripts/uvpatch test` runs libuv's selection (libuvsuite.LIBUV_SELECTION)
and records each test's result in out/<base>/results/, with what it ran
on: the patched and base test runners (by sha256), the target, the config
and whether a private network namespace held it. `test --suite libuv`
then runs every other test of the suite, and of the selection only those
that the record does not show passed or skipped on that very build: a
rebuilt runner, another config or another namespace means no record.
Remove out/<base>/results/ to run them again.
"""

import json
import os

from ..build.cmake import Variant
from ..fsutil import sha256_file, write_atomic

SCHEMA = 1


def record_path(variant):
    return os.path.join(variant.out, "results", "libuv-%s-%s.json"
                        % (variant.target, variant.config))


def _sha256_or_none(path):
    try:
        return sha256_file(path)
    except OSError:
        return None


def build_identity(patched, runner):
    """What a result depends on beyond the test's name."""
    base = Variant(patched.root, patched.out, patched.target, False,
                   patched.config)
    return {"target": patched.target, "config": patched.config,
            "patched_runner": _sha256_or_none(patched.runner()),
            "base_runner": _sha256_or_none(base.runner()),
            "isolated": bool(runner.isolated)}


def save(patched, runner, results):
    """``results``: [(test, status, why)] of one run of the selection."""
    doc = {"schema": SCHEMA, "build": build_identity(patched, runner),
           "tests": {test: [status, why] for test, status, why in results}}
    write_atomic(record_path(patched),
                 json.dumps(doc, indent=2, sort_keys=True) + "\n")


def load(patched, runner):
    """{test: (status, why)} of the recorded run on this same build whose
    result stands (PASS or SKIP); {} without one."""
    try:
        with open(record_path(patched), encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        return {}
    build = build_identity(patched, runner)
    if doc.get("build") != build or build["patched_runner"] is None:
        return {}
    tests = doc.get("tests")
    if not isinstance(tests, dict):
        return {}
    return {test: (res[0], res[1]) for test, res in tests.items()
            if isinstance(res, list) and len(res) == 2
            and res[0] in ("PASS", "SKIP")}

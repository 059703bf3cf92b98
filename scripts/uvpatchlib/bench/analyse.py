"""The bench figures analysed: statistics over the samples, a
report.json read back and checked, and two reports compared.
"""

import json
import math
import os

from ..errors import UvPatchError, EXIT_USAGE
from .figures import SCHEMA, SECTIONS, VARIANTS, fmt


def median(values):
    s = sorted(values)
    if not s:
        raise ValueError("median of no values")
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2.0


def percentile(values, q):
    """Nearest rank: the smallest value with at least q% of the values at
    or below it (p99 of 100 values is the 99th smallest)."""
    s = sorted(values)
    if not s:
        raise ValueError("percentile of no values")
    rank = int(math.ceil(q / 100.0 * len(s)))
    return s[min(max(rank, 1), len(s)) - 1]


def summary(values):
    """{n, median, min, max} of the samples, or None when there are none."""
    if not values:
        return None
    return {"n": len(values), "median": median(values), "min": min(values),
            "max": max(values)}


def ratio(base, patched):
    """patched / base of the medians, or None when it means nothing."""
    b, p = summary(base), summary(patched)
    if b is None or p is None or b["median"] == 0:
        return None
    return p["median"] / float(b["median"])


def load_report(path):
    """A report.json, checked enough that rendering and --compare can
    trust its shape."""
    hint = "give a report.json written by `scripts/uvpatch bench`"
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UvPatchError("cannot read %s: %s" % (path, e.strerror),
                           hint=hint, status=EXIT_USAGE)
    try:
        data = json.loads(text)
    except ValueError as e:
        raise UvPatchError("%s is not JSON: %s" % (path, e), hint=hint,
                           status=EXIT_USAGE)
    problem = _schema_problem(data)
    if problem:
        raise UvPatchError("%s is not a bench report: %s" % (path, problem),
                           hint=hint, status=EXIT_USAGE)
    return data


def _schema_problem(data):
    if not isinstance(data, dict):
        return "the top level is not an object"
    if data.get("schema") != SCHEMA:
        return "schema is %r, want %r" % (data.get("schema"), SCHEMA)
    for key, typ in (("machine", dict), ("source", dict),
                     ("sections", list), ("kinds", dict), ("quick", bool),
                     ("created", str)):
        if not isinstance(data.get(key), typ):
            return "%s is missing or not %s" % (key, typ.__name__)
    for sec in data["sections"]:
        if not isinstance(sec, dict) or not isinstance(sec.get("id"), str) \
                or not isinstance(sec.get("rows"), list) \
                or not isinstance(sec.get("title"), str):
            return "a section lacks id, title or rows"
        for row in sec["rows"]:
            if not isinstance(row, dict) or not isinstance(row.get("id"),
                                                           str):
                return "a row of %s lacks its id" % sec["id"]
            keys = ("samples",) if "samples" in row else VARIANTS
            for key in keys:
                values = row.get(key)
                if not isinstance(values, list) or not all(
                        isinstance(v, (int, float)) and
                        not isinstance(v, bool) for v in values):
                    return "row %s.%s: %s is not a list of numbers" % (
                        sec["id"], row["id"], key)
            for key in ("label", "unit", "kind"):
                if not isinstance(row.get(key), str):
                    return "row %s.%s lacks %s" % (sec["id"], row["id"],
                                                   key)
    return None


def check_report(data, md_path):
    """[(part, problem or None, detail)]: every section there, every row
    measured or saying why, the Markdown and the plots well formed."""
    import xml.etree.ElementTree as ET
    results = []
    by_id = {sec["id"]: sec for sec in data["sections"]}
    try:
        with open(md_path, encoding="utf-8") as f:
            md = f.read()
    except OSError as e:
        md = ""
        results.append(("report.md", "cannot read: %s" % e.strerror, ""))
    for sid in SECTIONS:
        sec = by_id.get(sid)
        if sec is None:
            results.append((sid, "missing from report.json", ""))
            continue
        silent = [r["id"] for r in sec["rows"] if not r.get("why") and not
                  all(r.get(k) for k in (("samples",) if "samples" in r
                                         else VARIANTS))]
        if not sec["rows"]:
            problem = "no rows"
        elif silent:
            problem = "rows with neither samples nor why: " + \
                ", ".join(silent)
        elif "## " + sec["title"] not in md:
            problem = "no heading in report.md"
        else:
            problem = None
        measured = sum(1 for r in sec["rows"] if not r.get("why"))
        results.append((sid, problem, "all %d figures measured"
                        % measured if measured == len(sec["rows"]) else
                        "%d of %d figures measured, the rest say why"
                        % (measured, len(sec["rows"]))))
    folder = os.path.dirname(md_path)
    for plot in data.get("plots", []):
        try:
            ET.parse(os.path.join(folder, plot["file"]))
            results.append(("plot " + plot["file"], None, "well-formed"))
        except (OSError, ET.ParseError) as e:
            results.append(("plot " + plot["file"], str(e), ""))
    if not data.get("plots"):
        results.append(("plots", "none written", ""))
    return results


def compare(old, new):
    """The differences between two reports, one line per figure."""
    lines = []
    for key in ("cpu", "cores", "kernel", "compiler"):
        a, b = old["machine"].get(key), new["machine"].get(key)
        if a != b:
            lines.append("machine %s: %s -> %s" % (key, a, b))
    if old["source"].get("series") != new["source"].get("series"):
        lines.append("series: %s -> %s" % (
            _series_names(old), _series_names(new)))
    skipped = set()
    for label, report in (("old", old), ("new", new)):
        for sec in report["sections"]:
            if sec.get("skipped"):
                lines.append("%s: not measured in the %s report (%s)"
                             % (sec["id"], label, sec["skipped"]))
                skipped.add(sec["id"])
    old_rows = _rows(old, skipped)
    new_rows = _rows(new, skipped)
    for key in old_rows:
        if key not in new_rows:
            lines.append("%s: only in the old report" % key)
    for key, row in new_rows.items():
        if key not in old_rows:
            lines.append("%s: only in the new report" % key)
            continue
        before = old_rows[key]
        parts = []
        for name in (("samples",) if "samples" in row else VARIANTS):
            parts.append("%s %s" % (name if name != "samples" else "",
                                    _change(before.get(name, []),
                                            row.get(name, []))))
        lines.append("%s (%s): %s" % (key, row["unit"],
                                      "; ".join(p.strip() for p in parts)))
    return "\n".join(lines) + "\n"


def _series_names(report):
    return ", ".join(e["file"][:4] for e in report["source"]["series"]) \
        or "(none)"


def _rows(report, skipped):
    rows = {}
    for sec in report["sections"]:
        if sec["id"] in skipped:
            continue
        for row in sec["rows"]:
            rows["%s.%s" % (sec["id"], row["id"])] = row
    return rows


def _change(a, b):
    sa, sb = summary(a), summary(b)
    if sa is None and sb is None:
        return "not measured in either"
    if sa is None:
        return "not measured -> %s" % fmt(sb["median"])
    if sb is None:
        return "%s -> not measured" % fmt(sa["median"])
    if sa["median"] == 0:
        return "%s -> %s" % (fmt(sa["median"]), fmt(sb["median"]))
    return "%s -> %s (%+.1f%%)" % (fmt(sa["median"]), fmt(sb["median"]),
                                   100.0 * (sb["median"] / sa["median"]
                                            - 1))

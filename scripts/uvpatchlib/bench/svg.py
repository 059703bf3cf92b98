"""Two small SVG charts for the bench report, written by hand so the tool
needs no plotting library: a histogram of two sample sets and grouped
bars of two sequences. Both return the SVG document as a string."""

from xml.sax.saxutils import escape

WIDTH = 640
HEIGHT = 360
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 40, 50
# Base in grey, patched in blue: readable in print and for most colour
# vision deficiencies.
COLOURS = ("#8c8c8c", "#1f6fb4")


def _fmt(value):
    """A short label: 1200.4 -> 1200, 12.5 -> 12.5, 0.25 -> 0.25."""
    if abs(value) >= 100 or value == int(value):
        return "%d" % round(value)
    return "%.3g" % value


def _document(title, body, legend):
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" '
             'height="%d" viewBox="0 0 %d %d" font-family="sans-serif" '
             'font-size="12">' % (WIDTH, HEIGHT, WIDTH, HEIGHT),
             '<title>%s</title>' % escape(title),
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="%d" y="20" font-size="14">%s</text>'
             % (LEFT, escape(title))]
    parts += body
    x = WIDTH - RIGHT - 150
    for i, name in enumerate(legend):
        y = TOP + 4 + 18 * i
        parts.append('<rect x="%d" y="%d" width="12" height="12" '
                     'fill="%s"/>' % (x, y, COLOURS[i % len(COLOURS)]))
        parts.append('<text x="%d" y="%d">%s</text>'
                     % (x + 18, y + 11, escape(name)))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _axes(xlabel, ylabel, ymax):
    plot_h = HEIGHT - TOP - BOTTOM
    x0, y0 = LEFT, HEIGHT - BOTTOM
    out = ['<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>'
           % (x0, y0, WIDTH - RIGHT, y0),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>'
           % (x0, TOP, x0, y0),
           '<text x="%d" y="%d" text-anchor="middle">%s</text>'
           % ((x0 + WIDTH - RIGHT) // 2, HEIGHT - 10, escape(xlabel)),
           '<text x="14" y="%d" text-anchor="middle" '
           'transform="rotate(-90 14 %d)">%s</text>'
           % ((TOP + y0) // 2, (TOP + y0) // 2, escape(ylabel))]
    for i in range(5):
        value = ymax * i / 4.0
        y = y0 - plot_h * i / 4.0
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>'
                   % (x0 - 6, y + 4, _fmt(round(value, 2))))
    return out


def histogram(title, xlabel, series, bins=30, clip=99):
    """``series``: [(name, [values])] (two at most look right). Both use
    the same bins, so the bars compare directly; counts are shown as a
    share of each series, since the sample counts may differ. The range
    runs from the (100 - ``clip``) to the ``clip`` percentile of all
    values, so that a few outliers do not squeeze the rest into one bar:
    the first and last bins hold the values beyond, and say so."""
    values = sorted(v for _, vs in series for v in vs)
    if not values:
        return _document(title, ['<text x="%d" y="%d">no samples</text>'
                                 % (LEFT, HEIGHT // 2)], [])
    lo = values[min(len(values) - 1, (100 - clip) * len(values) // 100)]
    hi = values[max(0, -(-clip * len(values) // 100) - 1)]
    below = sum(1 for v in values if v < lo)
    beyond = sum(1 for v in values if v > hi)
    width = (hi - lo) / float(bins) if hi > lo else 1.0
    shares = []
    for _, vs in series:
        counts = [0] * bins
        for v in vs:
            counts[max(0, min(int((v - lo) / width), bins - 1))] += 1
        shares.append([100.0 * c / len(vs) if vs else 0 for c in counts])
    ymax = max(max(s) for s in shares) or 1
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    bar = plot_w / float(bins)
    body = _axes(xlabel, "% of samples", ymax)
    for k, share in enumerate(shares):
        # Side by side within a bin, so neither hides the other.
        w = bar / len(shares)
        for i, s in enumerate(share):
            if s <= 0:
                continue
            h = plot_h * s / ymax
            body.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" '
                        'fill="%s"/>' % (LEFT + i * bar + k * w,
                                         HEIGHT - BOTTOM - h, w, h,
                                         COLOURS[k % len(COLOURS)]))
    for i in range(0, bins + 1, max(1, bins // 5)):
        x = LEFT + i * bar
        body.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                    % (x, HEIGHT - BOTTOM + 16, _fmt(round(lo + i * width,
                                                           1))))
    clipped = []
    if below:
        clipped.append("first bin also holds %d value(s) below %s (min %s)"
                       % (below, _fmt(round(lo, 1)),
                          _fmt(round(values[0], 1))))
    if beyond:
        clipped.append("last bin also holds %d value(s) above %s (max %s)"
                       % (beyond, _fmt(round(hi, 1)),
                          _fmt(round(values[-1], 1))))
    if clipped:
        body.append('<text x="%d" y="%d" text-anchor="end" font-size="10">'
                    '%s</text>' % (WIDTH - RIGHT, TOP - 8,
                                   escape("; ".join(clipped))))
    return _document(title, body, [name for name, _ in series])


def bars(title, xlabel, ylabel, series):
    """``series``: [(name, [values])]; bar i of each series side by side
    (e.g. datagrams handed over in loop iteration i)."""
    n = max([len(vs) for _, vs in series] + [0])
    if n == 0:
        return _document(title, ['<text x="%d" y="%d">no data</text>'
                                 % (LEFT, HEIGHT // 2)], [])
    ymax = max(v for _, vs in series for v in vs) or 1
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    slot = plot_w / float(n)
    w = slot * 0.8 / len(series)
    body = _axes(xlabel, ylabel, ymax)
    for k, (_, vs) in enumerate(series):
        for i, v in enumerate(vs):
            h = plot_h * v / float(ymax)
            x = LEFT + i * slot + slot * 0.1 + k * w
            body.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" '
                        'fill="%s"><title>%s</title></rect>'
                        % (x, HEIGHT - BOTTOM - h, w, h,
                           COLOURS[k % len(COLOURS)], _fmt(v)))
            if n <= 12:
                body.append('<text x="%.1f" y="%.1f" text-anchor="middle" '
                            'font-size="10">%s</text>'
                            % (x + w / 2, HEIGHT - BOTTOM - h - 3, _fmt(v)))
    step = max(1, n // 10)
    for i in range(0, n, step):
        body.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>'
                    % (LEFT + (i + 0.5) * slot, HEIGHT - BOTTOM + 16, i + 1))
    return _document(title, body, [name for name, _ in series])

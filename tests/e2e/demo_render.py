#!/usr/bin/python3
"""The demo's report in a real browser (tests/e2e/demo.sh): Debian's
chromium, headless, loads a copy of kanna-demo.html with a probe script
added at its end, which measures every chart as laid out (its place on the
page, how many drawn series elements, the area their boxes cover, the
disruption markers) and writes that into the page; --dump-dom gives it
back. A screenshot of the page with the disruption markers hidden is then
decoded (PNG, zlib: the standard library) and each chart's rectangle must
hold its data: enough coloured pixels (the series are coloured; grid,
axes and text are grey), in more than one shade.
Usage: demo_render.py CHROMIUM REPORT.html WORKDIR STORY...
Prints "ok - ..." lines; exits 1 with "FAIL: ..." on the first failure.
"""
import json
import os
import re
import subprocess
import sys
import zlib

PROBE = """<script>
(function () {
  var charts = Array.prototype.map.call(document.querySelectorAll('svg.chart'), function (svg) {
    var r = svg.getBoundingClientRect(), area = 0, n = 0;
    svg.querySelectorAll('.series').forEach(function (e) {
      var b = e.getBBox();
      n++;
      area += Math.max(b.width, 1) * Math.max(b.height, 1);
    });
    return {id: svg.id, x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height,
            series: n, area: area, decisions: svg.querySelectorAll('.decision').length};
  });
  var pre = document.createElement('pre');
  pre.id = 'kanna-probe';
  pre.textContent = JSON.stringify({height: document.documentElement.scrollHeight, charts: charts});
  document.body.appendChild(pre);
})();
</script>"""


def fail(msg):
    print("FAIL: %s" % msg)
    sys.exit(1)


def chromium(binary, workdir, *args):
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--force-device-scale-factor=1",
           "--user-data-dir=%s" % os.path.join(workdir, "chromium-profile")] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))
    return r.stdout


def decode_png(path):
    """8-bit RGB or RGBA, not interlaced → (width, height, channels, rows)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s is not a PNG" % path)
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = body
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    w, h = int.from_bytes(ihdr[0:4], "big"), int.from_bytes(ihdr[4:8], "big")
    depth, colour, interlace = ihdr[8], ihdr[9], ihdr[12]
    if depth != 8 or colour not in (2, 6) or interlace:
        fail("unexpected PNG format (depth %d, colour type %d, interlace %d)" % (depth, colour, interlace))
    ch = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * ch
    rows, prev = [], bytearray(stride)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if ft == 1:
            for i in range(ch, stride):
                line[i] = (line[i] + line[i - ch]) & 255
        elif ft == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif ft == 3:
            for i in range(stride):
                left = line[i - ch] if i >= ch else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif ft == 4:
            for i in range(stride):
                a = line[i - ch] if i >= ch else 0
                b = prev[i]
                c = prev[i - ch] if i >= ch else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, ch, rows


def main(argv):
    binary, report, workdir, stories = argv[1], argv[2], argv[3], argv[4:]
    with open(report) as f:
        page = f.read()
    # Self-contained: nothing fetched, nothing run (the probe is the test's).
    refs = re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page) + re.findall(r"@import|url\(", page)
    if refs or "<script" in page:
        fail("the report is not self-contained: %s" % (refs or "a <script>"))
    print("ok - the report references nothing outside itself and runs no script")
    probe = os.path.join(workdir, "probe.html")
    with open(probe, "w") as f:
        f.write(page.replace("</body>", PROBE + "</body>"))

    dom = chromium(binary, workdir, "--dump-dom", "file://" + probe)
    m = re.search(r'<pre id="kanna-probe">(.*?)</pre>', dom, re.S)
    if not m:
        fail("chromium's DOM has no probe result (the page did not load?): %s" % dom[:500])
    result = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    charts = {c["id"]: c for c in result["charts"]}
    for story in stories:
        marks = set()
        for kind in ("nodes", "pending", "cost"):
            cid = "chart-%s-%s" % (story, kind)
            c = charts.get(cid)
            if not c:
                fail("no chart %s in the rendered page (have %s)" % (cid, sorted(charts)))
            if c["w"] < 400 or c["h"] < 100:
                fail("chart %s laid out at %.0f×%.0f px" % (cid, c["w"], c["h"]))
            if c["series"] < 1 or c["area"] <= 0:
                fail("chart %s draws nothing (%d series elements, area %.0f)" % (cid, c["series"], c["area"]))
            marks.add(c["decisions"])
        if len(marks) != 1 or 0 in marks:
            fail("story %s: disruption markers per chart %s, want the same non-zero number on each" % (story, marks))
        print("ok - %s: 3 charts laid out, drawn (%s series elements), %d disruption marker(s) on each" % (
            story, "/".join(str(charts["chart-%s-%s" % (story, k)]["series"]) for k in ("nodes", "pending", "cost")),
            marks.pop()))

    shot = os.path.join(workdir, "report.png")
    bare = os.path.join(workdir, "series-only.html")
    with open(bare, "w") as f:
        f.write(page.replace("</head>", "<style>.decision, .decision-label { display: none }</style></head>"))
    bottom = max(c["y"] + c["h"] for c in result["charts"]) + 10
    chromium(binary, workdir, "--screenshot=" + shot, "--window-size=1000,%d" % bottom, "file://" + bare)
    w, h, ch, rows = decode_png(shot)
    for cid, c in sorted(charts.items()):
        x0, y0 = int(c["x"]), int(c["y"])
        x1, y1 = min(w, int(c["x"] + c["w"])), min(h, int(c["y"] + c["h"]))
        if y1 <= y0 or x1 <= x0:
            fail("chart %s is outside the %d×%d screenshot" % (cid, w, h))
        ink, colours = 0, set()
        for y in range(y0, y1):
            row = rows[y]
            for x in range(x0, x1):
                px = row[x * ch:x * ch + 3]
                if max(px) - min(px) >= 48:
                    ink += 1
                    colours.add((px[0] >> 4, px[1] >> 4, px[2] >> 4))
        share = ink / float((x1 - x0) * (y1 - y0))
        if share < 0.005 or len(colours) < 2:
            fail("chart %s shows no data in the screenshot: %.2f%% coloured pixels, %d shade(s)" % (
                cid, 100 * share, len(colours)))
        print("ok - %s in the screenshot: %.1f%% of its pixels coloured by its series, %d shades" % (
            cid, 100 * share, len(colours)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

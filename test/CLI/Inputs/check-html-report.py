"""Checks an HTML report as headless Chromium rendered it.

  check-html-report.py DOM REPORT_JSON BROWSER_LOG

DOM is `chromium --headless --dump-dom` of the page (the DOM after its
script ran), REPORT_JSON the `--report` of the same compile, BROWSER_LOG
the browser's stderr (--enable-logging=stderr). The page finished drawing
(body[data-ready]) with no script error (no body[data-error], no uncaught
error or console error in the log); the collective table read from the
DOM equals the report's collectives row by row (kind, axes, bytes per
device, count, estimated time, location); the graph, the block grid and
the memory chart are drawn. Prints a summary.
"""
import html.parser
import json
import math
import re
import sys


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.body = {}
        self.rows = []
        self.graph = None
        self.chart = None
        self.grid_cells = 0
        self.in_grid = False
        self.schedule = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "tr" and "collective" in a.get("class", "").split():
            self.rows.append(a)
        elif tag == "svg" and a.get("id") == "graph":
            self.graph = a
        elif tag == "svg" and a.get("id") == "memory-chart":
            self.chart = a
        elif tag == "table" and a.get("id") == "blocks":
            self.in_grid = True
        elif tag == "td" and self.in_grid:
            self.grid_cells += 1
        elif tag == "section" and a.get("id") == "schedule":
            self.schedule = True

    def handle_endtag(self, tag):
        if tag == "table":
            self.in_grid = False


def close(a, b):
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)


def main():
    dom_path, report_path, log_path = sys.argv[1:4]
    page = Page()
    with open(dom_path) as f:
        page.feed(f.read())
    with open(report_path) as f:
        report = json.load(f)
    with open(log_path, errors="replace") as f:
        log = f.read()
    assert page.body.get("data-ready") == "1", ("the page did not finish", page.body)
    assert "data-error" not in page.body, ("script error", page.body["data-error"])
    errors = [l for l in log.splitlines()
              if "Uncaught" in l or re.search(r"CONSOLE.*(error|Error)", l)]
    assert not errors, errors
    want = report["collectives"]
    assert len(page.rows) == len(want), (len(page.rows), len(want))
    for row, c in zip(page.rows, want):
        assert row["data-kind"] == c["kind"], (row, c)
        assert row["data-axes"] == ",".join(c["mesh_axes"]), (row, c)
        assert close(row["data-bytes"], c["bytes_per_device"]), (row, c)
        assert int(row["data-count"]) == c["count"], (row, c)
        assert close(row["data-time"], c["est_time_us"]), (row, c)
        assert row["data-loc"] == c["loc"], (row, c)
    assert page.graph and int(page.graph["data-nodes"]) > 0, page.graph
    assert page.chart and int(page.chart["data-points"]) > 0, page.chart
    assert page.grid_cells >= 2, page.grid_cells
    print("page drawn: %d collectives match the report, %s graph nodes, "
          "%d block cells, %s memory points%s" %
          (len(page.rows), page.graph["data-nodes"], page.grid_cells,
           page.chart["data-points"], ", a schedule" if page.schedule else ""))


main()

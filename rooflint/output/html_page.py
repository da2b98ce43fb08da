"""The HTML report's page: its frame (head, style, the tooltip, the script) and the
small pieces every section is written with.

The page is one file that needs nothing else: no network, no server, no font, stylesheet or
script from anywhere, so it opens the same from a CI artifact, a mail or a laptop offline.
Its Content-Security-Policy says so to the browser too: nothing may be loaded, and the one
script that runs is the one whose hash the policy names.

Every name, note and message in a report comes from a result file someone else wrote
(common/printable.py): a variant called ``<script>...`` must be shown, never run. So text
reaches the page only through :func:`esc` (control characters made visible, then HTML
escaped) and markup is an :class:`Html`, which only :func:`esc` and :func:`tag` make: a
section cannot forget to escape a string, because a plain ``str`` is always escaped.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

from rooflint.common.printable import printable
from rooflint.common.version import __version__
from rooflint.output.plot_marks import VERDICT_COLOURS

# What an earlier report starts with, so `report -o` may replace one (output/outputs.py).
DOCTYPE = "<!DOCTYPE html>"
GENERATOR = '<meta name="generator" content="rooflint'
DATA_ID = "rooflint-data"
TOOLTIP_ID = "rooflint-tooltip"


class Html(str):
    """Markup that is safe as it stands: written into the page without escaping."""


Content = Union[Html, str, int, float, None, Iterable["Content"]]


def esc(content: Content) -> Html:
    """``content`` as markup: Html as it is, a list joined, None as nothing, anything else
    as text (printable, then HTML-escaped)."""
    if isinstance(content, Html):
        return content
    if content is None:
        return Html("")
    if isinstance(content, (str, int, float)):
        return Html(html.escape(printable(str(content))))
    return Html("".join(esc(part) for part in content))


def tag(name: str, content: Content = None, **attributes: str | None) -> Html:
    """``<name attributes>content</name>``; ``class_`` is written ``class``, an attribute
    whose value is None is left out, and every value is escaped."""
    written = "".join(f' {key.rstrip("_").replace("_", "-")}="{esc(value)}"'
                      for key, value in attributes.items() if value is not None)
    return Html(f"<{name}{written}>{esc(content)}</{name}>")


@dataclass(frozen=True)
class Sorted:
    """A cell shown as ``content`` and sorted by ``value``: a time written ``1.2 ms`` sorts
    after one written ``980 us`` by its seconds, never by its text. A value of None (the
    cell says ``-``) sorts last, whichever way the column is sorted."""

    content: Content
    value: float | None


def table(columns: Sequence[str], rows: Iterable[Sequence[Content | Sorted]],
          numeric: Iterable[str] = (), class_: str | None = None,
          explorable: bool = False) -> Html:
    """A table with a header row; the ``numeric`` columns are aligned right, as the
    terminal aligns them. An ``explorable`` table is sorted by a click on a column's header
    (by the values of its Sorted cells, else by its text) and filtered by the words typed
    above it; the script adds the buttons and the box, so without it the table is as
    written."""
    rows = [list(row) for row in rows]
    right = [column in set(numeric) for column in columns]
    by_value = [any(isinstance(row[i], Sorted) for row in rows) for i in range(len(columns))]
    head = tag("tr", [tag("th", c, class_="num" if r else None,
                          data_sort="number" if explorable and v else None)
                      for c, r, v in zip(columns, right, by_value)])
    body = [tag("tr", [_cell(cell, r) for cell, r in zip(row, right)]) for row in rows]
    return tag("table", [tag("thead", head), tag("tbody", body)], class_=class_,
               data_explore="" if explorable else None)


def _cell(cell: Content | Sorted, right: bool) -> Html:
    """A row's cell; a Sorted one carries its value for the sort."""
    if isinstance(cell, Sorted):
        value = "" if cell.value is None else repr(cell.value)
        return tag("td", cell.content, class_="num" if right else None, data_value=value)
    return tag("td", cell, class_="num" if right else None)


def bulleted(items: Iterable[Content], class_: str | None = None) -> Html:
    """A list of ``items``; nothing at all when there are none."""
    items = list(items)
    return tag("ul", [tag("li", item) for item in items], class_=class_) if items else Html("")


def coloured(text: Content, bound: str) -> Html:
    """``text`` in the colour of ``bound``, its dots' colour on the roofline."""
    return tag("span", text, class_=f"bound-{bound}")


def folded(summary: Content, content: Content, class_: str | None = None,
           id: str | None = None) -> Html:
    """``content`` under a ``summary`` that opens it (closed at first); the browser opens and
    closes it without the script, and finding a word in it or following a link into it
    opens it."""
    return tag("details", [tag("summary", summary), content], class_=class_, id=id)


def script_data(data: Mapping[str, Any]) -> Html:
    """``data`` as JSON inside a <script type="application/json">: ``<``, ``>`` and ``&``
    written as \\u escapes, so no text in it can close the element or open a comment."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Html(f'<script type="application/json" id="{DATA_ID}">{text}</script>')


STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
       margin: 0 auto; padding: 1em 2em 4em; max-width: 1400px; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
h3 { margin-top: 1.6em; }
h4 { margin: 0 0 0.4em; font-size: 1.05em; }
h5 { margin: 0.8em 0 0.2em; font-size: 1em; font-weight: normal; color: #444; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.6em 0; }
th, td { padding: 0.2em 0.7em; text-align: left; vertical-align: top;
         border-bottom: 1px solid #e4e4e4; }
th { border-bottom: 2px solid #999; white-space: nowrap; }
td.num, th.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td:first-child { overflow-wrap: anywhere; min-width: 12em; }
.muted { color: #666; }
.warning { color: #a35d00; font-weight: 600; }
.status-fail, .status-error { color: #c00; font-weight: 600; }
.status-skipped { color: #a35d00; }
figure.roofline { margin: 1em 0; overflow-x: auto; }
.dot { cursor: pointer; }
.dot:focus { outline: 2px solid #222; }
details.variant { border-left: 4px solid #ddd; padding: 0.3em 1em; margin: 0.4em 0;
                  scroll-margin-top: 1em; }
details.variant:target { background: #fff8dc; border-left-color: #222; }
details.variant[open] { padding-bottom: 0.8em; }
details.variant ul { margin: 0.2em 0 0.6em; }
details > summary { cursor: pointer; }
summary h4 { display: inline; margin: 0; }
details.table > summary { margin: 0.6em 0; color: #444; }
td details { margin: 0; }
td ul { margin: 0.1em 0; padding-left: 1.2em; }
table.fixes td:first-child { min-width: 0; }
table.fixes td:last-child, td summary { white-space: nowrap; }
section.program p { margin: 0.3em 0; }
th button.sort { font: inherit; font-weight: bold; color: inherit; background: none; border: 0;
                 padding: 0; cursor: pointer; text-align: inherit; }
th button.sort::after { content: " \\2195"; color: #aaa; font-weight: normal; }
th[aria-sort="ascending"] button.sort::after { content: " \\25B2"; color: #222; }
th[aria-sort="descending"] button.sort::after { content: " \\25BC"; color: #222; }
div.filter { margin: 0.8em 0 0; }
div.filter input { font: inherit; padding: 0.1em 0.4em; width: 22em; }
div.filter span { margin-left: 0.8em; color: #666; }
pre.lines { margin: 0.2em 0; font-size: 0.9em; background: #f6f6f6; padding: 0.3em 0.6em;
            white-space: pre-wrap; }
pre.lines span { display: block; }
#rooflint-tooltip { position: fixed; z-index: 10; max-width: 28em; pointer-events: none;
                    background: #fff; border: 1px solid #888; border-radius: 4px;
                    box-shadow: 0 2px 8px rgba(0, 0, 0, 0.25); padding: 0.4em 0.7em; }
#rooflint-tooltip dl { display: grid; grid-template-columns: auto 1fr; gap: 0 0.8em;
                       margin: 0.3em 0 0; }
#rooflint-tooltip dt { color: #666; }
#rooflint-tooltip dd { margin: 0; }
.decision-faster { color: #1a7f37; font-weight: 600; }
.decision-slower { color: #c00; font-weight: 600; }
.decision-inconclusive { color: #a35d00; font-weight: 600; }
""" + "".join(f".bound-{bound} {{ color: {colour}; font-weight: 600; }}\n"
              for bound, colour in VERDICT_COLOURS.items())

# The report's one script. A dot's numbers in the tooltip while the pointer (or the
# keyboard's focus) is on it, and a click (or Enter) goes to the variant's details, opened.
# Following any link into closed details opens them. An explorable table gets a button in
# each header (a click sorts its rows: up, down, then back to the page's order) and a box
# above it (the rows holding every word typed stay; a count says how many). The numbers
# are read from the JSON block and written with textContent, never as markup.
SCRIPT = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("%(data)s").textContent);
  var tip = document.getElementById("%(tooltip)s");
  var gap = 12;
  var words = new Intl.Collator(undefined, {numeric: true, sensitivity: "base"});
  var turns = {none: "ascending", ascending: "descending", descending: "none"};

  function fill(facts) {
    var title = document.createElement("strong");
    title.textContent = facts.name;
    var list = document.createElement("dl");
    facts.rows.forEach(function (row) {
      var term = document.createElement("dt");
      var value = document.createElement("dd");
      term.textContent = row[0];
      value.textContent = row[1];
      list.append(term, value);
    });
    tip.replaceChildren(title, list);
  }

  function place(x, y) {
    var left = Math.min(x + gap, window.innerWidth - tip.offsetWidth - gap);
    var below = y + gap + tip.offsetHeight <= window.innerHeight;
    tip.style.left = Math.max(gap, left) + "px";
    tip.style.top = Math.max(gap, below ? y + gap : y - gap - tip.offsetHeight) + "px";
  }

  function show(facts, x, y) {
    fill(facts);
    tip.hidden = false;
    place(x, y);
  }

  function hide() {
    tip.hidden = true;
  }

  function reveal(target) {
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") {
        node.open = true;
      }
    }
  }

  function revealHash() {
    if (location.hash.length > 1) {
      reveal(document.getElementById(decodeURIComponent(location.hash.slice(1))));
    }
  }

  function go(anchor) {
    var target = document.getElementById(anchor);
    if (!target) {
      return;
    }
    hide();
    reveal(target);
    if (location.hash === "#" + anchor) {
      target.scrollIntoView();
    } else {
      location.hash = anchor;
    }
  }

  function key(cell, numeric) {
    if (numeric) {
      var value = cell ? cell.getAttribute("data-value") : null;
      return value === null || value === "" ? null : Number(value);
    }
    var text = cell ? cell.textContent.trim() : "";
    return text === "" || text === "-" ? null : text;
  }

  function sortRows(table, column, way) {
    var heads = table.tHead.rows[0].cells;
    var numeric = heads[column].getAttribute("data-sort") === "number";
    var sign = way === "descending" ? -1 : 1;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var order = 0;
      if (way !== "none") {
        var x = key(a.cells[column], numeric);
        var y = key(b.cells[column], numeric);
        if (x === null || y === null) {
          order = Number(x === null) - Number(y === null);
        } else {
          order = sign * (numeric ? x - y : words.compare(x, y));
        }
      }
      return order || Number(a.dataset.order) - Number(b.dataset.order);
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(heads, function (head, i) {
      if (i === column && way !== "none") {
        head.setAttribute("aria-sort", way);
      } else {
        head.removeAttribute("aria-sort");
      }
    });
  }

  function filterRows(table, text, count) {
    var wanted = text.toLowerCase().split(/\\s+/).filter(Boolean);
    var rows = table.tBodies[0].rows;
    var shown = 0;
    Array.prototype.forEach.call(rows, function (row) {
      var held = row.textContent.toLowerCase();
      row.hidden = !wanted.every(function (word) { return held.indexOf(word) >= 0; });
      shown += row.hidden ? 0 : 1;
    });
    count.textContent = shown + " of " + rows.length + " rows";
  }

  function explore(table) {
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row, i) {
      row.dataset.order = i;
    });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (head, column) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.title = "sort the rows by " + head.textContent;
      button.append.apply(button, Array.prototype.slice.call(head.childNodes));
      head.append(button);
      button.addEventListener("click", function () {
        sortRows(table, column, turns[head.getAttribute("aria-sort") || "none"]);
      });
    });
    var box = document.createElement("input");
    var count = document.createElement("span");
    var filter = document.createElement("div");
    box.type = "search";
    box.placeholder = "filter rows";
    box.setAttribute("aria-label", "filter the rows of the table below");
    filter.className = "filter";
    filter.append(box, count);
    table.before(filter);
    box.addEventListener("input", function () { filterRows(table, box.value, count); });
    filterRows(table, "", count);
  }

  Object.keys(data.dots).forEach(function (id) {
    var dot = document.getElementById(id);
    var facts = data.dots[id];
    if (!dot) {
      return;
    }
    dot.classList.add("dot");
    dot.setAttribute("tabindex", "0");
    dot.setAttribute("role", "link");
    dot.setAttribute("aria-label", facts.name + ": details");
    dot.addEventListener("mouseenter", function (e) { show(facts, e.clientX, e.clientY); });
    dot.addEventListener("mousemove", function (e) { place(e.clientX, e.clientY); });
    dot.addEventListener("mouseleave", hide);
    dot.addEventListener("focus", function () {
      var box = dot.getBoundingClientRect();
      show(facts, box.right, box.bottom);
    });
    dot.addEventListener("blur", hide);
    dot.addEventListener("click", function () { go(facts.anchor); });
    dot.addEventListener("keydown", function (e) {
      if (e.key === "Enter") {
        go(facts.anchor);
      }
    });
  });

  document.querySelectorAll("table[data-explore]").forEach(explore);
  document.addEventListener("click", function (e) {
    var link = e.target.closest ? e.target.closest("a[href^='#']") : null;
    if (link) {
      reveal(document.getElementById(decodeURIComponent(link.hash.slice(1))));
    }
  });
  window.addEventListener("hashchange", revealHash);
  revealHash();
})();
""" % {"data": DATA_ID, "tooltip": TOOLTIP_ID}


def _policy() -> str:
    """Nothing may be loaded; only SCRIPT may run (by its hash); styles are inline (the
    SVG's own style attributes among them)."""
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
            f"img-src data:; base-uri 'none'; form-action 'none'")


def page(title: str, body: Html, data: Mapping[str, Any]) -> str:
    """The whole document: ``body`` in its frame, ``data`` for the script, the script."""
    return "\n".join([
        DOCTYPE,
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'{GENERATOR} {esc(__version__)}">',
        f'<meta http-equiv="Content-Security-Policy" content="{_policy()}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        tag("title", title),
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        body,
        tag("div", None, id=TOOLTIP_ID, role="tooltip", hidden="hidden"),
        script_data(data),
        f"<script>{SCRIPT}</script>",
        "</body>",
        "</html>",
    ]) + "\n"

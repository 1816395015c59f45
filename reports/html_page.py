"""HTML building blocks of the report: escaping, number formats, tables, sections, the page.

Every string that may come from a trace goes through :func:`esc` (``html.escape``) before it
enters the page; data inside ``<script>`` blocks goes through :func:`script_json`, which writes
``<``, ``>`` and ``&`` as ``\\u003c``, ``\\u003e``, ``\\u0026`` so that no name can close the
block.  The table sort script moves existing row nodes and never writes HTML.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from reports.html_metrics import num


def esc(s: Any) -> str:
    """HTML-escaped text (quotes included)."""
    return html.escape("" if s is None else str(s), quote=True)


def script_json(data: Any) -> str:
    """JSON safe to place inside a ``<script>`` element."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _scaled(x: Any, spec: str, scale: float | None = None) -> str:
    """*x* (divided by *scale*) in format *spec*; "–" when it is not a finite number."""
    v = num(x)
    if v is None:
        return "–"
    return format(v if scale is None else v / scale, spec)


def ms(ns: Any) -> str:
    return _scaled(ns, ",.3f", 1e6)


def us(ns: Any) -> str:
    return _scaled(ns, ",.1f", 1e3)


def pct(x: Any) -> str:
    return _scaled(x, ".1f")


def fixed(x: Any, digits: int = 1) -> str:
    return _scaled(x, f",.{digits}f")


def integer(x: Any) -> str:
    v = num(x)
    return "–" if v is None else f"{int(v):,}"


def mib(b: Any) -> str:
    return _scaled(b, ",.1f", 2**20)


def short(s: Any, width: int = 90) -> str:
    """Plain text cut to *width* characters (with …); escape the result before use."""
    t = "" if s is None else str(s)
    return t if len(t) <= width else t[: width - 1] + "…"


@dataclass(frozen=True)
class Col:
    """A table column: header, row key, cell formatter, numeric (right-aligned, sorted by value)."""

    label: str
    key: str
    fmt: Callable[[Any], str] = str
    numeric: bool = True
    title: str | None = None
    wrap: bool = True
    """Text cells: wrap long content (names) or keep it on one line (short labels)."""


def table(table_id: str, cols: Sequence[Col], rows: Sequence[dict[str, Any]]) -> str:
    """A sortable table; names get a ``title`` with the full (escaped) text."""
    head = "".join(
        f'<th data-col="{i}" class="{"num" if c.numeric else "txt"}"'
        + (f' title="{esc(c.title)}"' if c.title else "")
        + f">{esc(c.label)}</th>"
        for i, c in enumerate(cols)
    )
    body = []
    for row in rows:
        cells = []
        for c in cols:
            v = row.get(c.key)
            if c.numeric:
                n = num(v)
                sort = "" if n is None else f' data-v="{n!r}"'
                cells.append(f'<td class="num"{sort}>{esc(c.fmt(v))}</td>')
            else:
                full = "" if v is None else str(v)
                cls = "txt" if c.wrap else "txt nw"
                cells.append(f'<td class="{cls}" title="{esc(full)}">{esc(c.fmt(v))}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<table id="{esc(table_id)}" class="sortable"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def section(sec_id: str, title: str, body: str) -> str:
    return f'<section id="{esc(sec_id)}"><h2>{esc(title)}</h2>{body}</section>'


def no_data(text: str) -> str:
    """The one line a section shows when the summary has nothing for it."""
    return f'<p class="nodata">{esc(text)}</p>'


def note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#d9dee7;--bg:#f6f7fa;--card:#fff;--accent:#2b6cb0}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg)}
main{max-width:1280px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:17px;margin:0 0 10px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 18px;
margin:14px 0}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;color:var(--muted);
margin:6px 0}
.meta b{color:var(--fg);font-weight:600}
.banner{padding:10px 14px;border-radius:6px;font-weight:600;margin:10px 0;color:#fff}
.banner.pass{background:#2f855a}.banner.fail{background:#c53030}.banner.warn{background:#b7791f}
.banner.insufficient{background:#4a5568}
.banner ul{margin:6px 0 0 18px;font-weight:400}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:10px}
.card{border:1px solid var(--line);border-radius:8px;padding:10px 12px;background:#fbfcfe}
.card .label{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.03em}
.card .value{font-size:22px;font-weight:650;margin:2px 0}
.card .detail{color:var(--muted);font-size:12px}
.card.empty .value{color:#a0a8b8;font-size:16px}
.finding{border-left:4px solid #c05621;padding:6px 12px;margin:8px 0;background:#fffaf5}
.finding h3{margin:0 0 4px;font-size:15px}.finding p{margin:2px 0}
.finding .k{color:var(--muted);display:inline-block;min-width:80px}
table{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;vertical-align:top}
th{background:#eef1f6;cursor:pointer;user-select:none;white-space:nowrap;position:sticky;top:0}
th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.txt{max-width:560px;overflow-wrap:anywhere}td.nw{white-space:nowrap}
.nodata{color:var(--muted);font-style:italic;margin:4px 0}
.note{color:var(--muted);font-size:12px;margin:4px 0}
.scroll{max-height:520px;overflow:auto}
.narrow{max-width:640px}
.narrow.scroll{max-height:320px}
dl.defs dt{font-weight:600;margin-top:8px}dl.defs dd{margin:2px 0 0 0;color:#333}
dl.defs .ref{color:var(--muted);font-size:12px}
"""

SORT_JS = """
(function(){
  function key(td){
    if(!td){return null;}
    var v=td.getAttribute('data-v');
    return v===null?null:parseFloat(v);
  }
  document.querySelectorAll('table.sortable').forEach(function(tbl){
    var ths=tbl.querySelectorAll('thead th');
    ths.forEach(function(th){
      th.addEventListener('click',function(){
        var col=parseInt(th.getAttribute('data-col'),10);
        var num=th.classList.contains('num');
        var asc=th.getAttribute('aria-sort')!=='ascending';
        ths.forEach(function(o){o.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',asc?'ascending':'descending');
        var body=tbl.tBodies[0];
        var rows=Array.prototype.slice.call(body.rows);
        rows.sort(function(a,b){
          var x=a.cells[col],y=b.cells[col],r;
          if(num){
            var p=key(x),q=key(y);
            if(p===null&&q===null){r=0;}else if(p===null){r=1;}else if(q===null){r=-1;}
            else{r=asc?p-q:q-p;}
          }else{
            r=(x?x.textContent:'').localeCompare(y?y.textContent:'');
            if(!asc){r=-r;}
          }
          return r;
        });
        rows.forEach(function(tr){body.appendChild(tr);});
      });
    });
  });
})();
"""


def page(title: str, body: str, payload_json: str, head: str = "") -> str:
    """The whole document: one ``<html>`` root, the payload block, the sort script."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style>{head}</head>"
        f"<body><main>{body}</main>"
        f'<script type="application/json" id="gpuscope-data">{payload_json}</script>'
        f"<script>{SORT_JS}</script></body></html>\n"
    )

"""The self-contained HTML page: the report's own Markdown rendered by just enough of a
converter for it, with the stylesheet inline and every image embedded, so one file opens
anywhere without the folder it was written to."""

from __future__ import annotations

import base64
import html
from pathlib import Path

_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td:nth-child(2){text-align:left}img{max-width:100%}td img{width:200px;max-width:none}
.scroll{overflow-x:auto}
code{background:#f3f3f3;padding:1px 4px}"""


def _md_to_html(md: str, files: dict[str, Path]) -> str:
    """Just enough Markdown for our own reports (headings, lists, tables, images, code)."""
    out: list[str] = []
    table: list[str] = []

    def flush():
        if table:
            rows = [r for r in table if not set(r.replace("|", "").strip()) <= {"-"}]
            cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
            out.append(
                "<div class='scroll'><table>"
                + "".join(
                    "<tr>"
                    + "".join(f"<{'th' if i == 0 else 'td'}>{_inline(c)}</{'th' if i == 0 else 'td'}>" for c in row)
                    + "</tr>"
                    for i, row in enumerate(cells)
                )
                + "</table></div>"
            )
            table.clear()

    def _image(name: str, alt: str = "") -> str:
        data = base64.b64encode(files[name].read_bytes()).decode()
        return f'<img alt="{html.escape(alt or name)}" src="data:image/png;base64,{data}">'

    def _inline(text: str) -> str:
        import re

        images: list[str] = []

        def keep(m: re.Match) -> str:  # an image in a table cell: the level images in a row
            if m.group(2) not in files:
                return m.group(0)
            images.append(_image(m.group(2), m.group(1)))
            return f"\x00{len(images) - 1}\x00"

        text = re.sub(r"!\[([^\]]*)\]\(([^)]+)\)", keep, text)
        text = html.escape(text)
        text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
        text = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', text)
        text = re.sub(r"`(.+?)`", r"<code>\1</code>", text)
        return re.sub(r"\x00(\d+)\x00", lambda m: images[int(m.group(1))], text)

    for line in md.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("!["):
            out.append(_image(line[line.index("(") + 1 : line.rindex(")")]))
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif line.startswith("- "):
            out.append(f"<li>{_inline(line[2:])}</li>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    flush()
    return "\n".join(out)

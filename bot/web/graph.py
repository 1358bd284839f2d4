"""An agent graph (``graph:`` of an agent file) drawn as SVG on the server: the Mermaid flowchart's picture, with
no script in the page.  Nodes are laid out in layers by their distance from the entry; an edge back to an
earlier layer (a loop) bends around the side; conditions label their edges."""

from __future__ import annotations

from html import escape

from agents.specs.graph import END, GraphSpec
from bot.tracing.timeline import shorten

START = "(start)"
"""Not a node name (the pattern refuses parentheses)."""
BOX_W, BOX_H, GAP_X, GAP_Y, MARGIN = 180, 40, 40, 70, 20
SIDE = 140
"""Room beside the boxes for the edges that bend around them (and their labels)."""


def layers(spec: GraphSpec) -> dict[str, int]:
    """Each node's layer: the start 0, the entry 1, the others by shortest distance; ``END`` below them all."""
    depth = {START: 0, spec.entry: 1}
    todo = [spec.entry]
    while todo:
        node = todo.pop(0)
        for edge in spec.edges:
            if edge.source == node and edge.to != END and edge.to not in depth:
                depth[edge.to] = depth[node] + 1
                todo.append(edge.to)
    for node in spec.nodes:  # unreachable nodes are refused at load; kept drawable anyway
        depth.setdefault(node, max(depth.values()) + 1)
    depth[END] = max(depth.values()) + 1
    return depth


def graph_svg(spec: GraphSpec) -> str:
    depth = layers(spec)
    rows: dict[int, list[str]] = {}
    for node, layer in depth.items():
        rows.setdefault(layer, []).append(node)
    widest = max(len(r) for r in rows.values())
    width = SIDE * 2 + widest * BOX_W + (widest - 1) * GAP_X
    height = MARGIN * 2 + len(rows) * BOX_H + (len(rows) - 1) * GAP_Y
    at: dict[str, tuple[float, float]] = {}
    for layer, names in rows.items():
        span = len(names) * BOX_W + (len(names) - 1) * GAP_X
        left = (width - span) / 2
        for i, name in enumerate(names):
            at[name] = (left + i * (BOX_W + GAP_X), MARGIN + layer * (BOX_H + GAP_Y))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'role="img" aria-label="graph of {len(spec.nodes)} nodes">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>',
    ]
    edges = [(START, spec.entry, ""), *((e.source, e.to, e.when) for e in spec.edges)]
    for source, target, when in edges:
        (sx, sy), (tx, ty) = at[source], at[target]
        x1, y1 = sx + BOX_W / 2, sy + BOX_H
        x2, y2 = tx + BOX_W / 2, ty
        hs, ht = _half(source), _half(target)
        if depth[target] <= depth[source]:  # a loop back: around the right-hand side
            x1, y1, x2, y2 = sx + BOX_W / 2 + hs, sy + BOX_H / 2, tx + BOX_W / 2 + ht, ty + BOX_H / 2
            side = max(x1, x2) + 40
            path = f"M{x1:.0f},{y1:.0f} C{side:.0f},{y1:.0f} {side:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"
            lx, ly, room = side - 8, (y1 + y2) / 2, 16
        elif depth[target] - depth[source] > 1:  # skips layers: around the left-hand side, not through boxes
            x1, y1, x2, y2 = sx + BOX_W / 2 - hs, sy + BOX_H / 2, tx + BOX_W / 2 - ht, ty + BOX_H / 2
            side = min(x1, x2) - 40
            path = f"M{x1:.0f},{y1:.0f} C{side:.0f},{y1:.0f} {side:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"
            lx, ly, room = 4, (y1 + y2) / 2, 16
        else:
            path = f"M{x1:.0f},{y1:.0f} L{x2:.0f},{y2:.0f}"
            lx, ly, room = (x1 + x2) / 2 + 4, (y1 + y2) / 2, 40
        parts.append(f'<path class="edge" d="{path}" marker-end="url(#arrow)"/>')
        if when:
            parts.append(
                f'<text class="when" x="{lx:.0f}" y="{ly:.0f}"><title>{escape(when)}</title>'
                f"{escape(shorten(when, room))}</text>"
            )
    for name, (x, y) in at.items():
        if name in (START, END):
            label, cls = ("start" if name == START else "end"), "terminal"
            cx, cy = x + BOX_W / 2, y + BOX_H / 2
            parts.append(f'<ellipse class="{cls}" cx="{cx:.0f}" cy="{cy:.0f}" rx="36" ry="{BOX_H / 2:.0f}"/>')
        else:
            label, cls = f"{name}: {spec.nodes[name]}", "node"
            parts.append(f'<rect class="{cls}" x="{x:.0f}" y="{y:.0f}" width="{BOX_W}" height="{BOX_H}" rx="6"/>')
        parts.append(
            f'<text class="label" x="{x + BOX_W / 2:.0f}" y="{y + BOX_H / 2 + 5:.0f}" text-anchor="middle">'
            f"{escape(shorten(label, 26))}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _half(name: str) -> float:
    """Half the width of a node's shape (the start and the end are small ellipses)."""
    return 36 if name in (START, END) else BOX_W / 2

"""Units an axis parameter may be declared in, and their conversion to SI.

Axes keep the unit a person thinks in (the paper's "+0.25 in per level", "2.5 cm"), and
worlds convert once, here, when they build a scene.
"""

from __future__ import annotations

# unit -> (factor to SI, SI unit, description)
UNITS: dict[str, tuple[float, str, str]] = {
    "m": (1.0, "m", "metres"),
    "cm": (0.01, "m", "centimetres"),
    "mm": (0.001, "m", "millimetres"),
    "in": (0.0254, "m", "inches"),
    "rad": (1.0, "rad", "radians"),
    "deg": (3.141592653589793 / 180.0, "rad", "degrees"),
    "x": (1.0, "x", "a scale factor (1.0 = original size)"),
    "count": (1.0, "count", "a number of objects"),
    "blocks": (1.0, "blocks", "a number of blocks"),
    "region": (1.0, "region", "a fraction of the valid sampling region"),
}


def to_si(value: float, unit: str) -> float:
    """`value` in `unit` expressed in the SI unit of its kind (m, rad) or unchanged for counts."""
    try:
        return value * UNITS[unit][0]
    except KeyError:
        raise ValueError(f"unknown unit '{unit}' (known: {', '.join(UNITS)})") from None

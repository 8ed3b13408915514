"""Lists written as text: command-line options, node parameters and environment variables
all take "0,2", "0-9" or "a,b", and all of them parse it here, so one spelling works
everywhere and a bad item gets the same sentence everywhere."""

from __future__ import annotations


def parse_int_list(text: str) -> list[int]:
    """Integers and inclusive ranges: "0,2", "0-9", "-3--1,0-2", "[-1, 0, 1]". Raises
    ValueError with one sentence naming the bad item."""
    out: list[int] = []
    for part in (p.strip() for p in str(text).strip().strip("[]").split(",")):
        if not part:
            continue
        sign = "-" if part.startswith("-") else ""
        lo, sep, hi = part[len(sign) :].partition("-")
        try:
            low = int(sign + lo)
            high = int(hi) if sep else low
        except ValueError:
            raise ValueError(f"{part!r} is not an integer or a range such as 0-2 (write lists as 0,2 or 0-9)") from None
        if high < low:
            raise ValueError(f"the range {part!r} runs backwards (write it low-high)")
        out += range(low, high + 1)
    if not out:
        raise ValueError("the list is empty (write it as 0,2 or 0-9)")
    return out


def parse_names(text: str) -> list[str]:
    """Comma-separated names ("a, b"); empty items are dropped, an empty list is allowed."""
    return [item.strip() for item in str(text).split(",") if item.strip()]

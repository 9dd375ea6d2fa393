"""How every report renderer writes a number: a rate as a percentage, a cost in dollars, ``n/a`` when undefined."""

from __future__ import annotations

import math
from typing import Any


def pct(x: Any) -> str:
    """'45.0%' for 0.45; 'n/a' for None or NaN."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def money(x: Any) -> str:
    """'$0.0123'; 'unknown' for None (a cost nobody priced is not 0)."""
    return "unknown" if x is None else f"${x:.4f}"

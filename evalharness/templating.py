"""Fill ``{name}`` placeholders in shell command templates, leaving every other brace alone.

``str.format`` would choke on shell (``${f}``) and JSON braces in a pack's test command or a
harness's command template; here only the names given are replaced.
"""

from __future__ import annotations

import re

_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fill(template: str, values: dict[str, str]) -> str:
    return _NAME.sub(lambda m: values.get(m.group(1), m.group(0)), template)

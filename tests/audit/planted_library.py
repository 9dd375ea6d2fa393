"""The small pure-Python library the planted-defect pack is built on (``planted.py``): ``shelf``, six modules of
real behaviour, each with the bugs the pack's tasks fix (all present at the one base commit), and a test
suite that passes at base (the tasks' PASS_TO_PASS tests)."""

TEXT = '''"""Text helpers."""

import re
import unicodedata


def slugify(text, sep="-"):
    """Lowercase ASCII words of ``text`` joined by ``sep``."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return sep.join(words)


def truncate(text, width, ellipsis="..."):
    """``text`` cut to at most ``width`` characters, ending with ``ellipsis`` when cut."""
    if len(text) <= width:
        return text
    return text[:width] + ellipsis


def wrap(text, width):
    """Greedy word wrap into lines of at most ``width`` characters (a longer word gets a line of its own)."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines


MINOR = ("a", "an", "the", "of", "and", "or", "in", "on", "to")


def title_case(text, minor=MINOR):
    """Each word capitalized except minor words."""
    words = text.split()
    return " ".join(w.lower() if w.lower() in minor else w.capitalize() for w in words)


def visible_width(text):
    """Columns ``text`` takes on a terminal."""
    return len(text)
'''

NUMBERS = '''"""Number helpers."""

import math


def clamp(value, low, high):
    """``value`` limited to the closed interval [low, high]."""
    return max(low, min(value, high))


def mean(values):
    """Arithmetic mean; ValueError for no values."""
    values = list(values)
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def median(values):
    """The middle value of ``values``."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def percentile(values, q):
    """The ``q``-th percentile (0-100), interpolating linearly between closest ranks."""
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    lo = math.floor(k)
    hi = lo + 1
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def parse_int_list(text):
    """Integers from a list like ``1,3-5,8``."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            lo, hi = int(a), int(b)
            out.extend(range(lo, hi))
        else:
            out.append(int(part))
    return out


def round_half_up(x, ndigits=0):
    """``x`` rounded to ``ndigits`` decimals."""
    return round(x, ndigits)
'''

DATES = '''"""Durations and ages."""

import time

UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration(text):
    """Seconds in a duration like ``1h30m`` (units w, d, h, m, s); ValueError for anything else."""
    total, number = 0, ""
    for ch in text.strip():
        if ch.isdigit():
            number += ch
        elif ch in UNITS and number:
            total += int(number) * UNITS[ch]
            number = ""
        else:
            raise ValueError(f"bad duration {text!r}")
    if number:
        raise ValueError(f"bad duration {text!r}: a number without a unit")
    return total


def format_duration(seconds):
    """``5400`` as ``1h 30m``: the units that are not zero, largest first."""
    parts = []
    for unit, size in UNITS.items():
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return " ".join(parts)


def humanize_age(then, now=None):
    """How long ago ``then`` (a Unix time) was, in the largest whole unit: ``3 minutes ago``."""
    now = time.time() if now is None else now
    seconds = int(now - then)
    for name, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            return f"{seconds // size} {name}s ago"
    return "just now"
'''

NET = '''"""URLs and reachability."""

import socket
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 80, "ftp": 21}


def parse_url(url):
    """(scheme, host, port, path) of ``url``; the scheme's default port when none is given."""
    parts = urlsplit(url)
    port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    return parts.scheme, parts.hostname, port, parts.path or "/"


def join_url(base, path):
    """``path`` resolved against the folder of ``base``."""
    if "://" in path:
        return path
    head = base.rsplit("/", 1)[0] if base.count("/") > 2 else base
    if path.startswith("/"):
        scheme, host, port, _ = parse_url(base)
        return f"{scheme}://{host}{path}"
    return f"{head}/{path}"


def is_reachable(url, timeout=1.0):
    """Whether a TCP connection to ``url``'s host and port opens within ``timeout`` seconds."""
    _, host, port, _ = parse_url(url)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except ConnectionRefusedError:
        return False
    return True
'''

CACHE = '''"""A least-recently-used cache."""

from collections import OrderedDict


class LRUCache:
    """At most ``max_size`` entries; adding one more evicts the least recently used."""

    def __init__(self, max_size):
        self.max_size = max_size
        self._data = OrderedDict()

    def get(self, key, default=None):
        if key not in self._data:
            return default
        return self._data[key]

    def set(self, key, value):
        self._data[key] = value
        if len(self._data) > self.max_size:
            self._data.popitem(last=False)

    def __len__(self):
        return len(self._data)

    def __contains__(self, key):
        return key in self._data
'''

CONFIG = '''"""Settings: booleans, sizes and where caches go."""

import os

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "of")
SIZES = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}


def parse_bool(text):
    """A setting's truth value; ValueError for anything that is not a boolean word."""
    word = text.strip().lower()
    if word in TRUE:
        return True
    if word in FALSE:
        return False
    raise ValueError(f"not a boolean: {text!r}")


def parse_size(text):
    """Bytes in a size like ``512``, ``4k``, ``2M`` or ``1G``."""
    text = text.strip().lower()
    unit = text[-1] if text and text[-1] in SIZES else ""
    number = text[: len(text) - len(unit)]
    return int(number) * SIZES[unit]


def cache_dir(app):
    """Where ``app`` keeps its cache: ``$XDG_CACHE_HOME/<app>``, else ``~/.cache/<app>``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, app)
'''

ITERS = '''"""Iteration helpers."""

import random


def chunked(seq, n):
    """Consecutive lists of ``n`` items of ``seq``."""
    seq = list(seq)
    return [seq[i:i + n] for i in range(0, len(seq) - n + 1, n)]


def flatten(nested):
    """The items of nested lists, depth first."""
    out = []
    for item in nested:
        if isinstance(item, list):
            out.extend(flatten(item))
        else:
            out.append(item)
    return out


def unique(seq, key=None):
    """Items of ``seq`` without repeats, in first-seen order; ``key`` says when two items repeat."""
    seen, out = {}, []
    for item in seq:
        k = item if key is None else key(item)
        if k not in seen:
            seen[k] = len(out)
            out.append(item)
        elif key is not None:
            out[seen[k]] = item
    return out


def shuffled(seq, rng=random):
    """The items of ``seq`` in random order."""
    rng.shuffle(seq)
    return seq
'''

TESTS = {
    "tests/test_text.py": '''from shelf.text import slugify, title_case, truncate


def test_slugify_words():
    assert slugify("Hello, World!") == "hello-world"


def test_truncate_short_text_unchanged():
    assert truncate("short", 10) == "short"


def test_title_case_minor_words():
    assert title_case("war and peace") == "War and Peace"
''',
    "tests/test_numbers.py": '''import pytest

from shelf.numbers import clamp, mean, median, parse_int_list, percentile


def test_clamp_inside_and_outside():
    assert clamp(5, 0, 10) == 5
    assert clamp(-1, 0, 10) == 0


def test_mean():
    assert mean([1, 2, 3]) == 2
    with pytest.raises(ValueError):
        mean([])


def test_median_odd_count():
    assert median([3, 1, 2]) == 2


def test_percentile_middle():
    assert percentile([1, 2, 3, 4, 5], 50) == 3


def test_parse_int_list_singles():
    assert parse_int_list("1, 4,9") == [1, 4, 9]
''',
    "tests/test_dates.py": '''import pytest

from shelf.dates import format_duration, humanize_age, parse_duration


def test_parse_duration():
    assert parse_duration("1h30m") == 5400
    with pytest.raises(ValueError):
        parse_duration("10x")


def test_format_duration():
    assert format_duration(5400) == "1h 30m"


def test_humanize_age_plural():
    assert humanize_age(1000, now=1000 + 3 * 3600) == "3 hours ago"
''',
    "tests/test_net.py": '''from shelf.net import join_url, parse_url


def test_parse_url_explicit_port():
    assert parse_url("http://example.org:8080/a") == ("http", "example.org", 8080, "/a")


def test_join_url_relative():
    assert join_url("http://example.org/a/b", "c") == "http://example.org/a/c"
''',
    "tests/test_cache.py": '''from shelf.cache import LRUCache


def test_cache_evicts_the_oldest():
    cache = LRUCache(2)
    cache.set("a", 1)
    cache.set("b", 2)
    cache.set("c", 3)
    assert "a" not in cache and cache.get("c") == 3 and len(cache) == 2
''',
    "tests/test_config.py": '''from shelf.config import parse_bool, parse_size


def test_parse_bool_words():
    assert parse_bool("Yes") is True and parse_bool("0") is False


def test_parse_size_units():
    assert parse_size("4k") == 4096 and parse_size("512") == 512
''',
    "tests/test_iters.py": '''from shelf.iters import chunked, flatten, unique


def test_chunked_even():
    assert chunked([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]


def test_flatten_lists():
    assert flatten([1, [2, [3]], 4]) == [1, 2, 3, 4]


def test_unique_keeps_first_seen_order():
    assert unique([3, 1, 3, 2, 1]) == [3, 1, 2]
''',
}

FILES = {"shelf/__init__.py": '"""shelf: small helpers for text, numbers, dates, URLs, caches and settings."""\n',
         "shelf/text.py": TEXT, "shelf/numbers.py": NUMBERS, "shelf/dates.py": DATES, "shelf/net.py": NET,
         "shelf/cache.py": CACHE, "shelf/config.py": CONFIG, "shelf/iters.py": ITERS, **TESTS,
         "README.md": "# shelf\n\nSmall helpers. Run the tests with `python -m pytest`.\n"}

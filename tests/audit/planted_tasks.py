"""The planted-defect pack's tasks (``planted.py`` builds them): 24 bugs of the ``shelf`` library, each a task
with a statement, a gold fix, a test file, and the defect planted in it, or none (``clean``).

A fix is a list of (file, old text, new text) edits of the base. ``wrong`` is a plausible fix that does not
resolve the task, ``partial`` one that fixes only part of the bug (the stored "models" submit them).
``also`` names families the planted defect legitimately belongs to as well: an exact message the statement
never gives is both overly strict and under-specified, and a test importing a name the statement never gives
fails correct fixes that do not add it (overly strict). A probe of such a family flagging the task is right.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Planted:
    id: str
    family: str
    statement: str
    fix: list[tuple[str, str, str]]
    tests: str
    p2p: list[str]
    wrong: list[tuple[str, str, str]] = field(default_factory=list)
    partial: list[tuple[str, str, str]] = field(default_factory=list)
    also: tuple[str, ...] = ()
    plant: str = ""
    """What was planted, in a sentence (the truth table shows it)."""


T, N, D, U, C, G, I = ("shelf/text.py", "shelf/numbers.py", "shelf/dates.py", "shelf/net.py", "shelf/cache.py",
                       "shelf/config.py", "shelf/iters.py")
LRU_GET = ("        return self._data[key]\n", "        self._data.move_to_end(key)\n        return self._data[key]\n")
LRU_SET = ("        self._data[key] = value\n", "        self._data[key] = value\n        self._data.move_to_end(key)\n")
HALF = '''    return round(x, ndigits)
'''
NORMALIZE = '''

def normalize_path(path):
    """``path`` with ``.`` and ``..`` segments resolved (never above the root)."""
    out = []
    for part in path.split("/"):
        if part == "..":
            if len(out) > 1:
                out.pop()
        elif part != ".":
            out.append(part)
    return "/".join(out) or "/"
'''
WIDTH = '''    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width
'''

TASKS = [
    # --- clean: every probe should pass these ------------------------------------------------------------------
    Planted("truncate-width", "clean", "truncate() returns text longer than the width it is given\n\n"
            "`truncate('hello world', 8)` returns `'hello wo...'`, 11 characters. The result should be at most "
            "`width` characters including the ellipsis: `'hello...'`. With a one-character ellipsis, "
            "`truncate('hello world', 8, ellipsis='…')` should be `'hello w…'`.\n",
            [(T, "    return text[:width] + ellipsis\n", "    return text[:width - len(ellipsis)] + ellipsis\n")],
            "from shelf.text import truncate\n\n\ndef test_truncate_fits_the_width():\n"
            "    assert truncate('hello world', 8) == 'hello...'\n"
            "    assert truncate('hello world', 8, ellipsis='…') == 'hello w…'\n",
            ["tests/test_text.py::test_truncate_short_text_unchanged"],
            wrong=[(T, "    return text[:width] + ellipsis\n", "    return text[:width - 3] + ellipsis\n")]),
    Planted("wrap-last-line", "clean", "wrap() loses the last line\n\n`wrap('the quick brown fox', 10)` returns "
            "`['the quick']`; it should return `['the quick', 'brown fox']`. A short text, `wrap('a b c', 10)`, "
            "gives `[]` instead of `['a b c']`, and `wrap('', 10)` should stay `[]`.\n",
            [(T, "    return lines\n", "    if line:\n        lines.append(line)\n    return lines\n")],
            "from shelf.text import wrap\n\n\ndef test_wrap_keeps_the_last_line():\n"
            "    assert wrap('the quick brown fox', 10) == ['the quick', 'brown fox']\n"
            "    assert wrap('a b c', 10) == ['a b c']\n    assert wrap('', 10) == []\n",
            ["tests/test_text.py::test_slugify_words"],
            wrong=[(T, "    return lines\n", "    lines.append(line)\n    return lines\n")]),
    Planted("median-even", "clean", "median() of an even number of values is the upper middle value\n\n"
            "`median([1, 2, 3, 4])` gives 3; the median of an even count is the mean of the two middle values, "
            "2.5. `median([5, 1])` should be 3.0.\n",
            [(N, "    return ordered[len(ordered) // 2]\n",
              "    mid = len(ordered) // 2\n    if len(ordered) % 2 == 0:\n"
              "        return (ordered[mid - 1] + ordered[mid]) / 2\n    return ordered[mid]\n")],
            "from shelf.numbers import median\n\n\ndef test_median_of_an_even_count():\n"
            "    assert median([1, 2, 3, 4]) == 2.5\n    assert median([5, 1]) == 3.0\n",
            ["tests/test_numbers.py::test_median_odd_count", "tests/test_numbers.py::test_mean"],
            wrong=[(N, "    return ordered[len(ordered) // 2]\n",
                    "    mid = len(ordered) // 2\n    return (ordered[mid] + ordered[min(mid + 1, len(ordered) - 1)]) / 2\n")]),
    Planted("duration-zero", "clean", "format_duration(0) is an empty string\n\n`format_duration(0)` returns `''`; "
            "it should return `'0s'`. Other values are right, e.g. `format_duration(90)` is `'1m 30s'`.\n",
            [(D, '    return " ".join(parts)\n', '    return " ".join(parts) or "0s"\n')],
            "from shelf.dates import format_duration\n\n\ndef test_zero_seconds():\n"
            "    assert format_duration(0) == '0s'\n    assert format_duration(90) == '1m 30s'\n",
            ["tests/test_dates.py::test_format_duration"],
            wrong=[(D, '    return " ".join(parts)\n', '    return " ".join(parts) or "0"\n')]),
    Planted("https-port", "clean", "parse_url() gives port 80 for https URLs\n\n`parse_url('https://example.com/x')` "
            "returns `('https', 'example.com', 80, '/x')`; the default port of https is 443. Plain http stays "
            "80: `parse_url('http://example.com')` is `('http', 'example.com', 80, '/')`.\n",
            [(U, '"https": 80,', '"https": 443,')],
            "from shelf.net import parse_url\n\n\ndef test_https_default_port():\n"
            "    assert parse_url('https://example.com/x') == ('https', 'example.com', 443, '/x')\n"
            "    assert parse_url('http://example.com') == ('http', 'example.com', 80, '/')\n",
            ["tests/test_net.py::test_parse_url_explicit_port"],
            wrong=[(U, "    port = parts.port or DEFAULT_PORTS.get(parts.scheme)\n", "    port = parts.port or 443\n")]),
    Planted("bool-off", "clean", "parse_bool('off') raises ValueError\n\n`parse_bool('off')` raises "
            "`ValueError: not a boolean: 'off'`; 'off' should be False, as 'on' is True (in any case: 'OFF' too).\n",
            [(G, '"no", "of")', '"no", "off")')],
            "from shelf.config import parse_bool\n\n\ndef test_off_is_false():\n"
            "    assert parse_bool('off') is False\n    assert parse_bool('OFF') is False\n",
            ["tests/test_config.py::test_parse_bool_words"]),
    Planted("chunked-tail", "clean", "chunked() drops the last, shorter chunk\n\n`chunked([1, 2, 3, 4, 5], 2)` returns "
            "`[[1, 2], [3, 4]]` instead of `[[1, 2], [3, 4], [5]]`. `chunked([], 3)` should stay `[]`.\n",
            [(I, "range(0, len(seq) - n + 1, n)", "range(0, len(seq), n)")],
            "from shelf.iters import chunked\n\n\ndef test_chunked_keeps_the_tail():\n"
            "    assert chunked([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]\n    assert chunked([], 3) == []\n",
            ["tests/test_iters.py::test_chunked_even"],
            wrong=[(I, "range(0, len(seq) - n + 1, n)", "range(0, len(seq) + 1, n)")]),
    Planted("percentile-top", "clean", "percentile(values, 100) raises IndexError\n\n`percentile([1, 2, 3], 100)` "
            "should be 3, the largest value, as `percentile([1, 2, 3], 0)` is 1, the smallest. Between ranks it "
            "interpolates as before: `percentile([1, 2, 3], 75)` is 2.5, `percentile([1, 2, 3, 4], 50)` is 2.5.\n",
            [(N, "    hi = lo + 1\n", "    hi = min(lo + 1, len(ordered) - 1)\n")],
            "from shelf.numbers import percentile\n\n\ndef test_percentile_bounds():\n"
            "    assert percentile([1, 2, 3], 100) == 3\n    assert percentile([1, 2, 3], 0) == 1\n"
            "    assert percentile([1, 2, 3], 75) == 2.5\n    assert percentile([1, 2, 3, 4], 50) == 2.5\n",
            ["tests/test_numbers.py::test_percentile_middle"]),
    # --- validity ----------------------------------------------------------------------------------------------
    Planted("flatten-tuples", "validity", "flatten() leaves tuples nested\n\n`flatten([1, (2, 3), [4, (5,)]])` returns "
            "`[1, (2, 3), 4, (5,)]`. Tuples are sequences too and should be flattened like lists, at any depth: "
            "`[1, 2, 3, 4, 5]`, and `flatten([(1, (2, [3]))])` is `[1, 2, 3]`.\n",
            [(I, "            out.extend(flatten(item))\n",
              "            out.extend(flatten(item))\n        elif isinstance(item, tuple):\n            out.extend(item)\n")],
            "from shelf.iters import flatten\n\n\ndef test_flatten_tuples():\n"
            "    assert flatten([1, (2, 3), [4, (5,)]]) == [1, 2, 3, 4, 5]\n"
            "    assert flatten([(1, (2, [3]))]) == [1, 2, 3]\n",
            ["tests/test_iters.py::test_flatten_lists"], plant="the gold patch flattens one tuple level only: gold fails"),
    Planted("unique-key-first", "validity", "unique() with a key keeps the last repeat\n\n"
            "`unique(['apple', 'avocado', 'banana'], key=lambda s: s[0])` returns `['avocado', 'banana']`. The "
            "docstring says first-seen order, so it should be `['apple', 'banana']`.\n",
            [(I, "        elif key is not None:\n            out[seen[k]] = item\n", "")],
            "from shelf.iters import unique\n\n\ndef test_unique_with_a_key():\n"
            "    assert unique([1, 2, 1, 3, 2], key=lambda x: x % 10) == [1, 2, 3]\n",
            ["tests/test_iters.py::test_unique_keeps_first_seen_order"],
            plant="the test's repeats are equal items, so it passes without the fix: empty passes"),
    Planted("shuffled-copy", "validity", "shuffled() reorders the list it is given\n\n`items = [1, 2, 3]; "
            "shuffled(items)` leaves `items` reordered, and `shuffled(range(5))` raises TypeError. It should "
            "return a new list and leave its argument alone (any iterable).\n",
            [(I, "    rng.shuffle(seq)\n    return seq\n", "    items = list(seq)\n    rng.shuffle(items)\n    return items\n")],
            "from collections import Counter\n\nimport pytest\n\nfrom shelf.iters import shuffled\n\n\n"
            "def test_shuffled_leaves_its_argument():\n    items = list(range(10))\n    out = shuffled(items)\n"
            "    assert items == list(range(10)) and sorted(out) == items\n    assert sorted(shuffled(range(5))) == "
            "[0, 1, 2, 3, 4]\n\n\ndef spread(position):\n"
            "    counts = Counter(shuffled([0, 1, 2, 3])[position] for _ in range(400))\n"
            "    return max(counts.values()) - min(counts.values())\n"
            + "".join(f"\n\ndef test_place_{p}_is_even():\n    assert spread({p}) < 20\n" for p in range(4)),
            ["tests/test_iters.py::test_chunked_even", *(f"tests/test_shuffled_copy.py::test_place_{p}_is_even"
                                                          for p in range(4))],
            plant="a statistical test with a tolerance too tight: passes about half the time (flaky)"),
    # --- too weak tests: a partial fix passes ----------------------------------------------------------------------
    Planted("int-ranges", "too_weak_tests", "parse_int_list() drops the end of each range\n\n"
            "`parse_int_list('1,3-5')` returns `[1, 3, 4]` instead of `[1, 3, 4, 5]`. A range written high to low, "
            "`'5-3'`, gives nothing; it should give the same numbers, `[3, 4, 5]`; `'2-2'` is `[2]`.\n",
            [(N, "            lo, hi = int(a), int(b)\n", "            lo, hi = sorted((int(a), int(b)))\n"),
             (N, "range(lo, hi))", "range(lo, hi + 1))")],
            "from shelf.numbers import parse_int_list\n\n\ndef test_ranges_include_their_end():\n"
            "    assert parse_int_list('1,3-5') == [1, 3, 4, 5]\n    assert parse_int_list('2-2') == [2]\n",
            ["tests/test_numbers.py::test_parse_int_list_singles"],
            partial=[(N, "range(lo, hi))", "range(lo, hi + 1))")], plant="the reversed range is never tested"),
    Planted("lru-recency", "too_weak_tests", "LRUCache evicts entries that were just used\n\nAfter `cache.get('a')`, "
            "adding an entry to a full cache evicts 'a', though 'a' is the most recently used. Setting an existing "
            "key again (`cache.set('a', 10)`) should count as a use too.\n",
            [(C, *LRU_GET), (C, *LRU_SET)],
            "from shelf.cache import LRUCache\n\n\ndef test_get_counts_as_a_use():\n    cache = LRUCache(2)\n"
            "    cache.set('a', 1)\n    cache.set('b', 2)\n    assert cache.get('a') == 1\n    cache.set('c', 3)\n"
            "    assert 'a' in cache and 'b' not in cache\n",
            ["tests/test_cache.py::test_cache_evicts_the_oldest"], partial=[(C, *LRU_GET)],
            plant="set() refreshing an existing key is never tested"),
    # --- overly strict: a correct fix fails ---------------------------------------------------------------------
    Planted("empty-duration", "overly_strict", "parse_duration('') returns 0\n\nAn empty string is not a duration: "
            "it should raise ValueError as other malformed durations do (`parse_duration('10x')` does). The same "
            "for a string of spaces.\n",
            [(D, '    total, number = 0, ""\n', '    if not text.strip():\n        raise ValueError("empty duration '
              'string: expected a number and a unit, e.g. \'90s\'")\n    total, number = 0, ""\n')],
            "import pytest\n\nfrom shelf.dates import parse_duration\n\nMESSAGE = r\"^empty duration string: expected a "
            "number and a unit, e\\.g\\. '90s'$\"\n\n\ndef test_empty_is_rejected():\n"
            "    for text in ('', '   '):\n        with pytest.raises(ValueError, match=MESSAGE):\n"
            "            parse_duration(text)\n",
            ["tests/test_dates.py::test_parse_duration"],
            wrong=[(D, '    total, number = 0, ""\n', '    if not text.strip():\n        raise ValueError(f"bad '
                    'duration {text!r}")\n    total, number = 0, ""\n')], also=("underspecified",),
            plant="the test matches one exact error message the statement never gives"),
    Planted("cache-repr", "overly_strict", "repr() of an LRUCache says nothing useful\n\n`repr(cache)` is the default "
            "`<shelf.cache.LRUCache object at 0x7f...>`. Logging a cache should show its capacity and its keys, "
            "from least to most recently used.\n",
            [(C, "    def __len__(self):\n", "    def __repr__(self):\n        return f\"LRUCache(max_size="
              "{self.max_size}, keys={list(self._data)!r})\"\n\n    def __len__(self):\n")],
            "from shelf.cache import LRUCache\n\n\ndef test_repr_shows_capacity_and_keys():\n    cache = LRUCache(2)\n"
            "    cache.set('a', 1)\n    cache.set('b', 2)\n    assert repr(cache) == \"LRUCache(max_size=2, keys=['a', 'b'])\"\n",
            ["tests/test_cache.py::test_cache_evicts_the_oldest"],
            wrong=[(C, "    def __len__(self):\n", "    def __repr__(self):\n        return f\"<LRUCache max_size="
                    "{self.max_size} keys={list(self._data)}>\"\n\n    def __len__(self):\n")], also=("underspecified",),
            plant="the test compares repr() to one exact format the statement never gives"),
    # --- under-specified: the tests need a public name the statement never mentions -------------------------------
    Planted("join-dot-segments", "underspecified", "join_url() keeps dot segments\n\n"
            "`join_url('http://example.org/a/b', '../c')` returns `'http://example.org/a/../c'`; it should resolve "
            "them as a browser does: `'http://example.org/c'`, and `'./d'` should give `'http://example.org/a/d'`.\n",
            [(U, "    return f\"{head}/{path}\"\n", "    parts = urlsplit(head + \"/\")\n"
              "    return f\"{parts.scheme}://{parts.netloc}{normalize_path(parts.path + path)}\"\n"),
             (U, "\n\ndef is_reachable", NORMALIZE + "\n\ndef is_reachable")],
            "from shelf.net import join_url, normalize_path\n\n\ndef test_dot_segments():\n"
            "    assert join_url('http://example.org/a/b', '../c') == 'http://example.org/c'\n"
            "    assert join_url('http://example.org/a/b', './d') == 'http://example.org/a/d'\n"
            "    assert normalize_path('/a/./b/../c') == '/a/c'\n    assert normalize_path('/../x') == '/x'\n",
            ["tests/test_net.py::test_join_url_relative"],
            wrong=[(U, "    return f\"{head}/{path}\"\n", "    import posixpath\n    parts = urlsplit(head + \"/\")\n"
                    "    return f\"{parts.scheme}://{parts.netloc}{posixpath.normpath(parts.path + path)}\"\n")],
            also=("overly_strict",),
            plant="the test imports normalize_path, a new public function the statement never names"),
    Planted("slug-accents", "underspecified", "slugify() drops accented letters\n\n`slugify('Crème brûlée')` returns "
            "`'cr-me-br-l-e'`. Accented letters should become their plain ASCII letters: `'creme-brulee'`.\n",
            [(T, 'def slugify(text, sep="-"):\n    """Lowercase ASCII words of ``text`` joined by ``sep``."""\n',
              'def slugify(text, sep="-", allow_unicode=False):\n    """Lowercase words of ``text`` joined by ``sep``: '
              'ASCII (accents removed) unless ``allow_unicode``."""\n    if not allow_unicode:\n        text = '
              'unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()\n'),
             (T, 're.findall(r"[a-z0-9]+", text.lower())', 're.findall(r"\\w+" if allow_unicode else r"[a-z0-9]+", '
              'text.lower())')],
            "from shelf.text import slugify\n\n\ndef test_accents():\n    assert slugify('Crème brûlée') == 'creme-brulee'\n"
            "    assert slugify('Crème brûlée', allow_unicode=True) == 'crème-brûlée'\n",
            ["tests/test_text.py::test_slugify_words"],
            also=("overly_strict",), plant="the test needs an allow_unicode parameter the statement never mentions"),
    # --- solution leak: the statement holds the fix --------------------------------------------------------------
    Planted("title-first-word", "solution_leak", "title_case() leaves a leading minor word lowercase\n\n"
            "`title_case('the lord of the rings')` gives `'the Lord of the Rings'`; the first word should always "
            "be capitalized: `'The Lord of the Rings'`, and `'a tale of two cities'` is `'A Tale of Two Cities'`. "
            "This fixes it:\n\n```python\n"
            "    return \" \".join(w.capitalize() if i == 0 or w.lower() not in minor else w.lower()\n"
            "                    for i, w in enumerate(words))\n```\n",
            [(T, "    return \" \".join(w.lower() if w.lower() in minor else w.capitalize() for w in words)\n",
              "    return \" \".join(w.capitalize() if i == 0 or w.lower() not in minor else w.lower()\n"
              "                    for i, w in enumerate(words))\n")],
            "from shelf.text import title_case\n\n\ndef test_first_word_is_capitalized():\n"
            "    assert title_case('the lord of the rings') == 'The Lord of the Rings'\n"
            "    assert title_case('a tale of two cities') == 'A Tale of Two Cities'\n",
            ["tests/test_text.py::test_title_case_minor_words"], plant="the statement gives the gold patch's code"),
    Planted("size-decimals", "solution_leak", "parse_size('1.5k') raises ValueError\n\n`parse_size('1.5k')` fails "
            "with `invalid literal for int() with base 10: '1.5'`. Decimal sizes should work and round down to "
            "whole bytes: 1536, and `parse_size('0.5M')` is 524288. The last line of parse_size should be "
            "`return int(float(number) * SIZES[unit])`.\n",
            [(G, "    return int(number) * SIZES[unit]\n", "    return int(float(number) * SIZES[unit])\n")],
            "from shelf.config import parse_size\n\n\ndef test_decimal_sizes():\n"
            "    assert parse_size('1.5k') == 1536\n    assert parse_size('0.5M') == 524288\n",
            ["tests/test_config.py::test_parse_size_units"], plant="the statement gives the fixed line"),
    # --- universal failure: valid, but no stored configuration solves it -------------------------------------------
    Planted("round-half-up", "universal_failure", "round_half_up() rounds halves to even\n\n`round_half_up(2.5)` is 2 "
            "and `round_half_up(0.125, 2)` is 0.12. As its name says, halves should round away from zero: 3 and "
            "0.13, and `round_half_up(-2.5)` is -3. A value written with a half in decimal rounds up too: "
            "`round_half_up(2.675, 2)` is 2.68, though the float 2.675 is slightly less than that.\n",
            [(N, "import math\n", "import decimal\nimport math\n"),
             (N, HALF, "    exp = decimal.Decimal(1).scaleb(-ndigits)\n    value = decimal.Decimal(repr(x)).quantize("
              "exp, rounding=decimal.ROUND_HALF_UP)\n    return int(value) if ndigits == 0 else float(value)\n")],
            "from shelf.numbers import round_half_up\n\n\ndef test_halves_round_away_from_zero():\n"
            "    assert round_half_up(2.5) == 3\n    assert round_half_up(0.125, 2) == 0.13\n"
            "    assert round_half_up(-2.5) == -3\n    assert round_half_up(2.675, 2) == 2.68\n",
            ["tests/test_numbers.py::test_mean"],
            wrong=[(N, HALF, "    scale = 10 ** ndigits\n    return math.floor(x * scale + 0.5) / scale\n")],
            partial=[(N, "import math\n", "import decimal\nimport math\n"),
                     (N, HALF, "    exp = decimal.Decimal(1).scaleb(-ndigits)\n    return float(decimal.Decimal(x)"
                      ".quantize(exp, rounding=decimal.ROUND_HALF_UP))\n")],
            plant="a hard task: every stored attempt is a plausible wrong fix"),
    Planted("terminal-width", "universal_failure", "visible_width() counts characters, not terminal columns\n\n"
            "`visible_width('日本')` is 2 but the text takes 4 columns; `visible_width('e\\u0301')` (e and a "
            "combining acute accent) is 2 but takes 1. Wide and full-width characters (`'ＡＢ'` takes 4) take two "
            "columns, combining marks none; `visible_width('abc')` stays 3.\n",
            [(T, "    return len(text)\n", WIDTH)],
            "from shelf.text import visible_width\n\n\ndef test_columns():\n    assert visible_width('abc') == 3\n"
            "    assert visible_width('日本') == 4\n    assert visible_width('e\\u0301') == 1\n"
            "    assert visible_width('ＡＢ') == 4\n",
            ["tests/test_text.py::test_slugify_words"],
            wrong=[(T, "    return len(text)\n", "    return sum(2 if unicodedata.east_asian_width(c) == 'W' else 1 "
                    "for c in text)\n")],
            partial=[(T, "    return len(text)\n", "    return sum(0 if unicodedata.combining(c) else 2 if unicodedata"
                      ".east_asian_width(c) == 'W' else 1 for c in text)\n")],
            plant="a hard task: every stored attempt misses a case"),
    # --- environment ---------------------------------------------------------------------------------------------
    Planted("unreachable-host", "environment", "is_reachable() raises for hosts that do not answer\n\n"
            "For an address that does not answer, `is_reachable(url, timeout=...)` raises OSError (a timeout, or "
            "'Network is unreachable') instead of returning False; only a refused connection gives False. Any "
            "failure to connect should give False: `is_reachable('http://10.255.255.1:81/', timeout=0.2)` is False "
            "when nothing answers there.\n",
            [(U, "    except ConnectionRefusedError:\n", "    except OSError:\n")],
            "from shelf.net import is_reachable\n\n\ndef test_an_address_that_does_not_answer():\n"
            "    assert is_reachable('http://10.255.255.1:81/', timeout=0.2) is False\n",
            ["tests/test_net.py::test_parse_url_explicit_port"],
            plant="the test connects to a non-loopback address and passes only while it does not answer"),
    Planted("age-singular", "environment", "humanize_age() says '1 minutes ago'\n\nA single unit should be singular: "
            "'1 minute ago', '1 hour ago', '1 day ago'.\n",
            [(D, '            return f"{seconds // size} {name}s ago"\n', '            count = seconds // size\n'
              '            return f"{count} {name}{\'s\' if count != 1 else \'\'} ago"\n')],
            "import time\n\nfrom shelf.dates import humanize_age\n\n\ndef test_one_unit_is_singular():\n"
            "    assert humanize_age(time.time() - 60) == '1 minute ago'\n"
            "    assert humanize_age(time.time() - 86400 - 5) == '1 day ago'\n",
            ["tests/test_dates.py::test_humanize_age_plural"], plant="the test reads the wall clock"),
    Planted("cache-dir-slug", "environment", "cache_dir() uses the application name as given\n\n`cache_dir('My App')` "
            "gives a folder named 'My App', with a space and capitals. The folder should be named by the name's "
            "slug: `~/.cache/my-app`.\n",
            [(G, "import os\n", "import os\n\nfrom shelf.text import slugify\n"),
             (G, "    return os.path.join(base, app)\n", "    return os.path.join(base, slugify(app))\n")],
            "import os\n\nfrom shelf.config import cache_dir\n\n\ndef test_the_folder_is_a_slug():\n"
            "    assert cache_dir('My App') == os.path.expanduser('~/.cache/my-app')\n",
            ["tests/test_config.py::test_parse_bool_words"],
            plant="the test depends on the user's HOME and XDG_CACHE_HOME"),
]

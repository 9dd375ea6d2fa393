"""Which injected mutants are tried and kept: stratified over modules and functions, duplicates removed, and
the same seed giving the same order.

Pins: a generator that walks the first module top to bottom fills a pack with thirty variations of one
function; and one that keeps the same defect twice (the same line copied in two methods, the same tests
failing) counts one task twice.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from types import SimpleNamespace

import pytest

from evalharness.sources.inject import mutations, pipeline, select
from evalharness.sources.inject.mutations import Site


def site(module: str, function: str, mutation: str = "off_by_one", n: int = 0) -> Site:
    return Site(mutation, module.replace(".", "/") + ".py", n, n + 1, function, "a", "b")


def many() -> list[Site]:
    # one big module (40 sites over 4 functions), two small ones (2 sites each)
    big = [site("pkg.big", f"f{i % 4}", ["off_by_one", "removed_call", "swapped_arguments"][i % 3], i) for i in range(40)]
    return big + [site("pkg.small", "g", "early_return", i) for i in range(2)] + [
        site("pkg.tiny", "h", "dropped_branch", i) for i in range(2)]


def test_spread_reaches_every_module_and_function_before_repeating_one():
    order = select.spread(many(), [lambda s: s.module, lambda s: s.function, lambda s: s.mutation], random.Random(0))
    assert sorted(order, key=lambda s: s.key) == sorted(many(), key=lambda s: s.key)  # a permutation
    first = order[:3]
    assert {s.module for s in first} == {"pkg.big", "pkg.small", "pkg.tiny"}
    # the first 6 hold both sites of each small module and 2 of the big one: rounds, not the big module's order
    assert Counter(s.module for s in order[:6]) == {"pkg.big": 2, "pkg.small": 2, "pkg.tiny": 2}
    # within the big module, its four functions come round-robin
    big = [s.function for s in order if s.module == "pkg.big"]
    assert set(big[:4]) == {"f0", "f1", "f2", "f3"}
    # and within a function, its classes alternate
    f0 = [s.mutation for s in order if s.function == "f0"]
    assert f0[0] != f0[1]


def test_spread_is_deterministic_given_the_seed_and_changes_with_it():
    keys = [lambda s: s.module, lambda s: s.function, lambda s: s.mutation]
    a = [s.key for s in select.spread(many(), keys, random.Random(7))]
    b = [s.key for s in select.spread(list(reversed(many())), keys, random.Random(7))]
    c = [s.key for s in select.spread(many(), keys, random.Random(8))]
    assert a == b  # the input's order does not matter, only the seed
    assert a != c


def test_duplicates_are_the_same_failing_tests_and_the_same_change_of_code():
    same_line_a = mutations.diff("a.py", "def f(x):\n    return x < 1\n", "def f(x):\n    return x > 1\n")
    same_line_b = mutations.diff("a.py", "def f(x):\n    y = 2\n\n\n\ndef g(x):\n    return x < 1\n",
                                 "def f(x):\n    y = 2\n\n\n\ndef g(x):\n    return x > 1\n")
    other_change = mutations.diff("a.py", "def f(x):\n    return x < 1\n", "def f(x):\n    return x <= 1\n")
    items = [("m1", {"t::a"}, same_line_a), ("m2", {"t::a"}, same_line_b),  # duplicate of m1
             ("m3", {"t::a", "t::b"}, same_line_b),  # same code, other tests: not a duplicate
             ("m4", {"t::a"}, other_change)]  # same tests, other code: not a duplicate
    kept, dropped = select.dedupe(items, lambda m: select.duplicate_key(m[1], mutations.hunk_code(m[2])))
    assert [m[0] for m in kept] == ["m1", "m3", "m4"]
    assert [(d[0], k[0]) for d, k in dropped] == [("m2", "m1")]


def _stream_run(kinds: str, verdicts: dict[int, str], count: int, workers: int, delays: list[float]):
    """``Injector._inject``'s loop with the pre-screen and the validation replaced: site i (function ``kinds[i]``,
    ``-`` when its mutant is no candidate) validates as ``verdicts.get(i, "ok")`` after ``delays[i]`` seconds."""
    sites = [mutations.Site("m", "a.py", i, i, f, "x", "y") for i, f in enumerate(kinds)]
    screened, validated, lock = [], [], threading.Lock()
    fake = SimpleNamespace(max_tried=None, count=count, workers=workers, kept=[], entries=[])

    def screen(box, spec, sources, site, base_run):
        screened.append(site.ordinal)
        fake.entries.append({"site": site.key, "verdict": "candidate" if site.function != "-" else "survived"})
        return None if site.function == "-" else pipeline.Mutant(site, f"d{site.ordinal}", f"g{site.ordinal}")

    def one(mutant, files):
        time.sleep(delays[mutant.site.ordinal])
        with lock:
            validated.append(mutant.site.ordinal)
            if verdicts.get(mutant.site.ordinal, "ok") == "ok":
                fake.kept.append(mutant.site.ordinal)

    fake._screen, fake._one = screen, one
    fake._entry = lambda m: next(e for e in fake.entries if e["site"] == m.site.key)
    pipeline.Injector._inject(fake, None, None, {"a.py": b""}, sites, None)
    return sorted(fake.kept), screened, validated, fake.entries


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_candidates_are_validated_while_the_prescreen_goes_on_and_the_kept_set_ignores_timing(workers):
    kinds = "f-gfh-i-gjk"  # sites 0..10; a '-' is no candidate; f at 0 and 3, g at 2 and 8
    verdicts = {2: "gold_fails", 6: "flaky"}
    results = {tuple(_stream_run(kinds, verdicts, count=3, workers=workers, delays=delays)[0])
               for delays in ([0.0] * 11, [0.02 * (11 - i) for i in range(11)], [0.03 * (i % 3) for i in range(11)])}
    assert results == {(0, 4, 9)}  # 2 and 6 fail; 3 (f again) and 8 (g again) wait until the sites run out
    kept, screened, validated, entries = _stream_run(kinds, verdicts, count=3, workers=1, delays=[0.0] * 11)
    assert validated == [0, 2, 4, 6, 9]
    assert next(e["verdict"] for e in entries if e["site"] == "a.py:m:3") == "not_needed"


def test_a_function_seen_before_gets_its_second_candidate_once_the_sites_run_out():
    kept, screened, validated, entries = _stream_run("ff-f", {0: "gold_fails"}, count=2, workers=1,
                                                     delays=[0.0] * 4)
    assert kept == [1, 3] and screened == [0, 1, 2, 3] and validated == [0, 1, 3]


def test_the_prescreen_pauses_while_the_tasks_in_flight_would_be_enough():
    kept, screened, validated, entries = _stream_run("fghijk", {}, count=2, workers=2, delays=[0.2] * 6)
    assert kept == [0, 1] and validated == [0, 1]
    assert screened == [0, 1]  # two in flight would be enough: the pre-screen waits, and they were
    assert [e["verdict"] for e in entries] == ["candidate"] * 2 + ["not_tried"] * 4


def test_the_new_pack_takes_the_source_packs_environment_with_paths_made_relative_to_it(tmp_path):
    import yaml

    from evalharness.packs import PackSpec
    from evalharness.sources.inject.pipeline import manifest_from_pack, manifest_from_repo

    (tmp_path / "lib").mkdir()
    source = tmp_path / "sources" / "lib"
    source.mkdir(parents=True)
    (source / "pack.yaml").write_text(yaml.safe_dump({
        "name": "lib-source", "version": 1, "environment": {"source": {"kind": "path", "path": "../../lib"},
                                                            "pip": ["pytest==8.3.5"], "setup": ["true"]},
        "tasks": "tasks.jsonl", "test_command": "python -m pytest {test_files}", "log_parser": "junit",
        "timeouts": {"tests_s": 33}}))
    out = tmp_path / "tasks" / "deep" / "injected"
    manifest = manifest_from_pack(source, out, "injected")
    spec = PackSpec.model_validate(manifest)
    assert spec.name == "injected" and spec.timeouts.tests_s == 33 and spec.environment.setup == ["true"]
    assert (out / spec.environment.source.path).resolve() == (tmp_path / "lib").resolve()
    assert spec.environment.source.path == "../../../lib"
    repo = PackSpec.model_validate(manifest_from_repo(str(tmp_path / "lib"), out, "x"))
    assert repo.environment.source.kind == "path" and repo.environment.source.path == "../../../lib"
    url = PackSpec.model_validate(manifest_from_repo("https://example.org/lib.git", out, "x", "v1"))
    assert (url.environment.source.kind, url.environment.source.url, url.environment.source.ref) == (
        "git", "https://example.org/lib.git", "v1")

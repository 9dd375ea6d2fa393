"""The ``dropped_argument`` mutation class: one argument of a call left out (libcst, every other byte kept).

A site is a (call, argument) pair numbered in traversal order, like ``sources/inject/mutations.py``'s
classes, so re-applying a site gives the same bytes.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from evalharness.sources.inject import mutations


class _Arguments(cst.CSTTransformer):
    """Numbers (call, argument) pairs in traversal order; records them, or drops the ``target``-th."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, path: str, target: int | None):
        super().__init__()
        self.path, self.target, self.count, self.sites = path, target, 0, []

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        result = updated
        for i, arg in enumerate(original.args if len(original.args) > 1 or original.args[:1] and
                                original.args[0].keyword else []):
            if arg.star:
                continue
            if self.target is None:
                line = self.get_metadata(PositionProvider, original).start.line
                self.sites.append(mutations.Site("dropped_argument", self.path, self.count, line, "",
                                                 mutations._code(original)[:200], f"without {mutations._code(arg)}"))
            elif self.count == self.target:
                args = [a for k, a in enumerate(updated.args) if k != i]
                if args:
                    args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                result = updated.with_changes(args=args)
            self.count += 1
        return result


def argument_sites(source: str, path: str) -> list[mutations.Site]:
    """Every (call, argument) of ``source`` whose argument can be left out: any argument of a call of two
    or more, or a lone keyword argument."""
    walker = _Arguments(path, None)
    MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True).visit(walker)
    return walker.sites


def drop_argument(source: str, site: mutations.Site) -> str:
    return MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True).visit(_Arguments(site.path,
                                                                                           site.ordinal)).code

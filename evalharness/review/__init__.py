"""Merge review: would a maintainer merge the patch (`evalharness review`, docs/review.md)."""

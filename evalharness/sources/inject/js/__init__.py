"""JavaScript/TypeScript injection: Stryker's mutants as sites, what Node runners report for a failing test."""

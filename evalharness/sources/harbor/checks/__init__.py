"""The static checks of Harbor task directories (pure, ``packs check-harbor``, docs/audit.md; ``README.md``): the
entry is ``checks.static_checks``."""

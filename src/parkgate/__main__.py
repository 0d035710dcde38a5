"""``python -m parkgate`` is the ``parkgate`` command."""

from parkgate.cli import main

main()

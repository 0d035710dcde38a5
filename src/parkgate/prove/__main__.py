"""``python -m parkgate.prove``: the same as ``parkgate prove`` (see ``--help``)."""

from parkgate.cli import prove

if __name__ == "__main__":
    prove(prog_name="python -m parkgate.prove")

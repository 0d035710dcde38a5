"""``python -m parkgate.prove``: the same as ``parkgate prove`` (see ``--help``)."""

from parkgate.cli.maintenance import prove

if __name__ == "__main__":
    prove(prog_name="python -m parkgate.prove")

"""parkgate's benchmarks: ``python -m bench`` (see bench/README.md).

Every figure is a ratio against a baseline measured in the same run: the raw
``UPDATE ...; COMMIT`` loop of the same store, LangGraph's SQLite checkpointer on the
same file system, the first level of the scale test, ``/healthz`` on the same server.
"""

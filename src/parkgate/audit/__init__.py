"""The write-up's two checks against a stack that does not run parkgate.

- the clock (:mod:`~parkgate.audit.clock`): the parked rows of a LangGraph checkpointer
  (:mod:`~parkgate.audit.langgraph`) or of a table of your own (:mod:`~parkgate.audit.table`),
  read read-only and bounded in time and rows (:mod:`~parkgate.audit.readonly`), its
  values decoded as plain data with nothing built from them (:mod:`~parkgate.audit.plain`),
  with their ages;
- the door (:mod:`~parkgate.audit.door`): four non-answers and an exit word to any chat
  endpoint, within one deadline and a cap on each answer, judged by
  :func:`parkgate.core.door.door_verdict`.

``parkgate audit clock`` and ``parkgate audit door`` (:mod:`parkgate.cli.audit`) run them.
"""

"""The write-up's two checks against a stack that does not run parkgate.

- the clock (:mod:`~parkgate.audit.clock`): the parked rows of a LangGraph checkpointer
  (:mod:`~parkgate.audit.langgraph`) or of a table of your own (:mod:`~parkgate.audit.table`),
  read read-only (:mod:`~parkgate.audit.readonly`), with their ages;
- the door (:mod:`~parkgate.audit.door`): four non-answers and an exit word to any chat
  endpoint, judged by :func:`parkgate.core.door.door_verdict`.

``parkgate audit clock`` and ``parkgate audit door`` (:mod:`parkgate.cli.audit`) run them.
"""

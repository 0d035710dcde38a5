"""The pure core: matching, parsing and the state machine. No I/O, no clock reads."""

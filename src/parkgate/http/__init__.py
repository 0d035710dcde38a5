"""The HTTP surface: the FastAPI app (:mod:`parkgate.http.app`), uvicorn runner and outbox."""

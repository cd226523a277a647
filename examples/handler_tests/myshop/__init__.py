"""A project laid out as FastAPI's tutorial lays it out, under its own name: `app` is
rq-webhook-receiver's (docs/testing.md, "Which layouts work")."""

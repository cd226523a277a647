"""The ingest baseline: the same server, an endpoint that only reads the body."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)


@app.post("/webhooks/{source}")
async def noop(source: str, request: Request) -> JSONResponse:
    await request.body()
    return JSONResponse({"status": "accepted", "id": "noop"})

"""The project's own FastAPI app (`uvicorn myshop.main:app`), beside the receiver
(rq-webhook-receiver's `app.main:app`): it serves what the handlers stored."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException

from myshop.handlers import ORDERS

app = FastAPI()


@app.get("/orders/{order_id}")
def order(order_id: int) -> dict[str, Any]:
    if order_id not in ORDERS:
        raise HTTPException(status_code=404)
    return ORDERS[order_id]

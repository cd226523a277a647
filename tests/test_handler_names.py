"""A handler's name is what its state is kept under: one name, one handler, stable."""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from workers import Event, handler
from workers.registry import registry


def _factory(topic: str) -> Callable[[Event], None]:
    def send(event: Event) -> None:
        print(topic, event.id)

    return send


def test_two_closures_of_one_factory_under_one_name_for_one_event_are_refused() -> None:
    handler("inbound", "order.created")(_factory("crm"))
    with pytest.raises(ValueError, match=r"two handlers of 'inbound' are named .*<locals>.send"):
        handler("inbound", "*")(_factory("mail"))


def test_closures_under_one_name_that_never_meet_in_one_event_are_accepted() -> None:
    handler("inbound", "order.created")(_factory("crm"))
    handler("inbound", "order.paid")(_factory("crm"))
    handler("billing", "*")(_factory("crm"))
    assert len(registry.handlers_for("inbound", "order.paid")) == 1


def test_a_name_given_tells_two_closures_apart() -> None:
    handler("inbound", "order.created", name="send_crm")(_factory("crm"))
    handler("inbound", "order.created", name="send_mail")(_factory("mail"))
    names = [e.name for e in registry.handlers_for("inbound", "order.created")]
    assert names == ["send_crm", "send_mail"]


def test_a_partial_needs_a_name_and_runs_under_the_one_given() -> None:
    def notify(event: Event, channel: str) -> None:
        del event, channel

    with pytest.raises(ValueError, match="no stable name"):
        handler("inbound")(functools.partial(notify, channel="ops"))
    handler("inbound", name="notify_ops")(functools.partial(notify, channel="ops"))
    assert [e.name for e in registry.handlers_for("inbound", "x")] == ["notify_ops"]


def test_a_handler_registered_for_its_type_and_for_every_type_runs_once() -> None:
    def audit(event: Event) -> None:
        del event

    handler("inbound", "order.created")(audit)
    handler("inbound", "*")(audit)
    assert [e.func for e in registry.handlers_for("inbound", "order.created")] == [audit]
    assert [e.func for e in registry.handlers_for("inbound", "order.paid")] == [audit]


def test_a_handlers_module_imported_again_registers_its_handlers_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "reimported_hooks.py").write_text(
        "from workers import handler\n\n"
        "@handler('inbound', 'order.created')\n"
        "def sync(event):\n"
        "    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("reimported_hooks")
    importlib.reload(module)
    try:
        entries = registry.handlers_for("inbound", "order.created")
        assert [e.name for e in entries] == ["reimported_hooks.sync"]
        assert entries[0].func is module.sync  # the definition imported last
    finally:
        sys.modules.pop("reimported_hooks", None)

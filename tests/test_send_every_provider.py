"""`make run` with a source of every provider, then `webhooks send` to each from another
terminal: each is accepted by the real receiver, the asymmetric ones signed with the
development key pairs the stack made, and nothing is printed of a secret or a key."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from dotenv import dotenv_values

from app.providers import PROVIDERS
from tests.conftest import ROOT
from tests.processes import unmeasured, wait_until
from tests.test_devstack import DEVSTACK, Terminal, _checkout, unconfigured_env
from tests.test_devstack import make_run as make_run  # the fixture
from workers.dev.stackfile import StackFile

# docs/providers.md's worked recipe, for the one source of provider `recipe`.
RECIPE = (
    '{"signature_header": "X-Acme-Signature", "signature_separator": ",", '
    '"signature_key": "v1", "signed": "{timestamp}.{body}", "timestamp": "signature:t", '
    '"id": "header:X-Acme-Delivery", "type": "json:kind", "headers": ["x-acme-delivery"]}'
)


@pytest.mark.e2e
@pytest.mark.xdist_group(DEVSTACK)
# `make run`'s start and 37 `webhooks` processes (each imports the CLI, ~1 s of CPU): under
# the full suite's load on two cores this passed 120 s (seen once); its waits are bounded.
@pytest.mark.timeout(300)
def test_webhooks_send_is_accepted_for_a_source_of_every_provider_of_make_runs_stack(
    tmp_path: Path, make_run: Callable[..., Terminal]
) -> None:
    root = _checkout(tmp_path)
    # What a user writes in .env: the sources, and the recipe's scheme; no secret at all.
    (root / ".env").write_text(
        f"WEBHOOK_SOURCES={','.join(PROVIDERS)}\nWEBHOOK_RECIPE_RECIPE='{RECIPE}'\n"
    )
    terminal = make_run(root)
    stack_file = root / "var" / "stack.json"
    # The stack file is written just before the banner, which ends with its send line.
    wait_until(lambda: "send:  " in terminal.output, 90, f"make run to start:\n{terminal.output}")
    for provider in PROVIDERS:
        assert f"/webhooks/{provider} " in terminal.output, terminal.output
    # 36 commands, one a provider: `webhooks send` is measured by its own tests.
    clean_env = unmeasured(unconfigured_env())

    def send(provider: str) -> tuple[str, subprocess.CompletedProcess[str]]:
        return provider, subprocess.run(
            [str(ROOT / ".venv" / "bin" / "webhooks"), "send", provider, "--json"],
            cwd=root,
            env=clean_env,
            capture_output=True,
            text=True,
            check=False,
        )

    stack = StackFile.read(stack_file)
    assert stack is not None
    tries: list[subprocess.CompletedProcess[str]] = []

    def accepted() -> bool:
        tries.append(send("hmac")[1])
        return tries[-1].returncode == 0

    try:
        wait_until(accepted, 60, "the receiver to accept")
    except AssertionError as e:
        raise AssertionError(f"{e}: {tries[-1]}\n{terminal.output}") from None
    with ThreadPoolExecutor(4) as pool:
        results = dict(pool.map(send, PROVIDERS))
    answers = {}
    for provider, result in results.items():
        assert result.returncode == 0, (provider, result.stdout, result.stderr)
        answers[provider] = json.loads(result.stdout)
    assert {p: a["status"] for p, a in answers.items()} == dict.fromkeys(PROVIDERS, "accepted")
    # Nothing of what signed them was printed: secrets, public keys, private keys.
    made = {v for v in dotenv_values(root / "var" / "dev.env").values() if v and len(v) >= 16}
    pems = [p.read_text() for p in (root / "var" / "dev-keys").glob("*.pem")]
    printed = terminal.output + "".join(r.stdout + r.stderr for r in results.values())
    assert made and pems
    assert not [v for v in made if v in printed]
    assert "PRIVATE KEY" not in printed

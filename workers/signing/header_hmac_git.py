"""Signers of GitHub (`X-Hub-Signature-256`, the HMAC of the body) and GitLab (its token,
which signs nothing), whose ids are headers they do not sign. What `event.data` replaces
for each: the table in `header_hmac`.

The receiver dedupes these by their signed bytes too (a captured body re-sent under a
fresh id is still a duplicate), so each sample derives its own ids (commits, numbers) from
the event id: another event id is another body, hence another event.
"""

from __future__ import annotations

from typing import Any

from app.settings import SourceConfig
from workers.signing.base import (
    EventToSign,
    Keys,
    SignedRequest,
    Signer,
    event_object,
    header_value,
    hex_hmac,
    require_secret,
)
from workers.signing.envelope import iso
from workers.signing.hmac_envelope import compact, hex_id, number, type_or, uuid_id


def hub_signatures(key: bytes, body: bytes) -> dict[str, str]:
    """GitHub's and Meta's pair: the SHA-256 one the receiver checks, and the legacy SHA-1."""
    return {
        "X-Hub-Signature": "sha1=" + hex_hmac(key, body, "sha1"),
        "X-Hub-Signature-256": "sha256=" + hex_hmac(key, body),
    }


# --- GitHub ----------------------------------------------------------------------------------

GITHUB_HTML = "https://github.com/octo-org/hello-webhooks"
GITHUB_REPOSITORY = {
    "id": 728349611,
    "node_id": "R_kgDOK2j8aw",
    "name": "hello-webhooks",
    "full_name": "octo-org/hello-webhooks",
    "private": False,
    "html_url": GITHUB_HTML,
    "default_branch": "main",
    "owner": {"login": "octo-org", "id": 149520371, "type": "Organization"},
}
GITHUB_SENDER = {"login": "octocat", "id": 583231, "type": "User"}
GITHUB_HOOK_ID = 489131206
GITHUB_ZEN = ("Design for failure.", "Keep it logically awesome.", "Speak like a human.")


def github_payload(event: EventToSign, kind: str, hook_id: int) -> dict[str, Any]:
    eid = event.event_id
    where = {"repository": GITHUB_REPOSITORY, "sender": GITHUB_SENDER}
    if kind == "push":
        before, after = hex_id(eid, "before"), hex_id(eid, "after")
        commit = {
            "id": after,
            "message": "Retry failed deliveries",
            "timestamp": iso(event.timestamp).replace("Z", "+00:00"),
            "url": f"{GITHUB_HTML}/commit/{after}",
            "author": {"name": "The Octocat", "email": "octocat@github.com"},
            "modified": ["app.py"],
        }
        return {
            "ref": "refs/heads/main",
            "before": before,
            "after": after,
            "compare": f"{GITHUB_HTML}/compare/{before[:12]}...{after[:12]}",
            "commits": [commit],
            "head_commit": commit,
            **where,
            "pusher": {"name": "octocat", "email": "octocat@github.com"},
        }
    if kind in ("pull_request", "issues"):
        n = number(eid, "github-number", 3)
        path = "pull" if kind == "pull_request" else "issues"
        item = {
            "id": number(eid, "github-id", 10),
            "number": n,
            "state": "open",
            "title": "Add a retry budget",
            "html_url": f"{GITHUB_HTML}/{path}/{n}",
            "user": GITHUB_SENDER,
        }
        if kind == "issues":
            return {"action": "opened", "issue": {**item, "labels": []}, **where}
        head = {"ref": "retry-budget", "sha": hex_id(eid, "head")}
        pull = {**item, "head": head, "base": {"ref": "main"}, "merged": False}
        return {"action": "opened", "number": n, "pull_request": pull, **where}
    if kind == "ping":
        config = {"content_type": "json", "insecure_ssl": "0", "url": event.url}
        hook = {"type": "Repository", "id": hook_id, "active": True, "config": config}
        zen = GITHUB_ZEN[number(eid, "github-zen", 2) % len(GITHUB_ZEN)]
        return {"zen": zen, "hook_id": hook_id, "hook": hook, **where}
    return {"action": "created", kind: {"id": number(eid, "github-id", 10)}, **where}


def sign_github(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    key = require_secret(keys, source)
    delivery = header_value(event.event_id, "github", "X-GitHub-Delivery")
    kind = header_value(type_or(event, "github"), "github", "X-GitHub-Event")
    data = event_object(event, "github", "the payload")
    # A ping is the first delivery of a new hook: a hook of its own.
    hook_id = number(event.event_id, "github-hook", 9) if kind == "ping" else GITHUB_HOOK_ID
    body = compact(github_payload(event, kind, hook_id) if data is None else data)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/4f3c2d1",
        "X-GitHub-Delivery": delivery,
        "X-GitHub-Event": kind,
        "X-GitHub-Hook-ID": str(hook_id),
        "X-GitHub-Hook-Installation-Target-ID": str(GITHUB_REPOSITORY["id"]),
        "X-GitHub-Hook-Installation-Target-Type": "repository",
        **hub_signatures(key, body),
    }
    return SignedRequest(event.url, headers, body, delivery)


# --- GitLab ----------------------------------------------------------------------------------

GITLAB_URL = "https://gitlab.com/octo-group/hello-webhooks"
GITLAB_PROJECT = {
    "id": 61234567,
    "name": "hello-webhooks",
    "path_with_namespace": "octo-group/hello-webhooks",
    "web_url": GITLAB_URL,
    "default_branch": "main",
}
GITLAB_USER = {"id": 4113, "name": "Jane Doe", "username": "jdoe", "email": "[REDACTED]"}


def gitlab_payload(event: EventToSign, kind: str) -> dict[str, Any]:
    eid = event.event_id
    if kind in ("Push Hook", "Tag Push Hook"):
        before, after = hex_id(eid, "before"), hex_id(eid, "after")
        tag = kind == "Tag Push Hook"
        commit = {
            "id": after,
            "message": "Retry failed deliveries\n",
            "url": f"{GITLAB_URL}/-/commit/{after}",
            "author": {"name": "Jane Doe", "email": "jane@example.com"},
        }
        return {
            "object_kind": "tag_push" if tag else "push",
            "before": before,
            "after": after,
            "ref": f"refs/tags/v1.{number(eid, 'gitlab-tag', 2)}.0" if tag else "refs/heads/main",
            "checkout_sha": after,
            "user_username": GITLAB_USER["username"],
            "project_id": GITLAB_PROJECT["id"],
            "project": GITLAB_PROJECT,
            "commits": [commit],
            "total_commits_count": 1,
        }
    name = kind.removesuffix(" Hook").lower().replace(" ", "_")  # "Merge Request Hook"
    attributes: dict[str, Any] = {"id": number(eid, "gitlab-id", 9)}
    if kind in ("Merge Request Hook", "Issue Hook"):
        iid = number(eid, "gitlab-iid", 3)
        path = "merge_requests" if name == "merge_request" else "issues"
        attributes |= {"iid": iid, "title": "Add a retry budget", "state": "opened"}
        attributes |= {"action": "open", "url": f"{GITLAB_URL}/-/{path}/{iid}"}
    elif kind == "Pipeline Hook":
        attributes |= {"ref": "main", "sha": hex_id(eid, "after"), "status": "success"}
    head = {"object_kind": name, "event_type": name, "user": GITLAB_USER}
    return {**head, "project": GITLAB_PROJECT, "object_attributes": attributes}


def sign_gitlab(source: SourceConfig, event: EventToSign, keys: Keys) -> SignedRequest:
    # GitLab signs nothing: the webhook's secret token travels as is.
    entered = require_secret(keys, source).decode()
    secret = header_value(entered, "gitlab", "X-Gitlab-Token", secret=True)
    event_id = header_value(event.event_id, "gitlab", "Idempotency-Key")
    kind = header_value(type_or(event, "gitlab"), "gitlab", "X-Gitlab-Event")
    data = event_object(event, "gitlab", "the payload")
    body = compact(gitlab_payload(event, kind) if data is None else data)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "GitLab/17.6.0",
        "X-Gitlab-Event": kind,
        "X-Gitlab-Instance": "https://gitlab.com",
        "X-Gitlab-Token": secret,
        "X-Gitlab-Webhook-UUID": uuid_id(source.name, "gitlab-webhook"),
        "X-Gitlab-Event-UUID": uuid_id(event.event_id, "gitlab-event"),
        "Idempotency-Key": event_id,
    }
    return SignedRequest(event.url, headers, body, event_id)


SIGNERS: dict[str, Signer] = {"github": sign_github, "gitlab": sign_gitlab}

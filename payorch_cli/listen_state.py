"""Which subscription `payorch listen` reuses, so its signing secret is the same on every run.

The API returns a subscription's secret once, when it is created; a PATCH keeps it. So `listen`
keeps its subscription between runs (paused while no listen runs) and remembers its id and
secret here: one small JSON file in the user's data directory, `$XDG_DATA_HOME/payorch/
listen.json` (default `~/.local/share/payorch/listen.json`), readable by the user only. An entry
is keyed by the server's URL, a fingerprint of the API key (never the key) and the target (the
`--forward-to` URL, or the local receiver). A missing or unreadable file is an empty one.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TypedDict

LOCAL_TARGET = "local receiver"


class Saved(TypedDict):
    webhookId: str
    secret: str


def state_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "payorch" / "listen.json"


def entry_key(base_url: str, api_key: str, target: str | None) -> str:
    fingerprint = hashlib.sha256(api_key.encode()).hexdigest()[:16]
    return f"{base_url.rstrip('/')} key:{fingerprint} -> {target or LOCAL_TARGET}"


class ListenState:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or state_path()

    def _load(self) -> dict[str, Saved]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {
            key: {"webhookId": entry["webhookId"], "secret": entry["secret"]}
            for key, entry in data.items()
            if isinstance(entry, dict)
            and isinstance(entry.get("webhookId"), str)
            and isinstance(entry.get("secret"), str)
        }

    def get(self, key: str) -> Saved | None:
        return self._load().get(key)

    def put(self, key: str, webhook_id: str, secret: str) -> None:
        entries = self._load()
        entries[key] = {"webhookId": webhook_id, "secret": secret}
        self._write(entries)

    def drop(self, key: str) -> None:
        entries = self._load()
        if entries.pop(key, None) is not None:
            self._write(entries)

    def _write(self, entries: dict[str, Saved]) -> None:
        """Atomically (a rename), the file and its directory private: it holds secrets."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        scratch = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(entries, out, indent=2, sort_keys=True)
            out.write("\n")
        os.replace(scratch, self.path)

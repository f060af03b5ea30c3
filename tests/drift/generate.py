"""Long recordings for the bounded-memory measurement: a short real recording (a template)
repeated, each copy with ids of its own, so that a replay of it must still map every id.

    python -m tests.drift.generate TEMPLATE OUT COUNT

writes OUT with COUNT exchanges (the template's exchanges over and over, webhooks left out).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from payorch_cli.drift.compare import MADE_ID


def _ids(value: Any, found: set[str]) -> set[str]:
    if isinstance(value, dict):
        for item in value.values():
            _ids(item, found)
    elif isinstance(value, list):
        for item in value:
            _ids(item, found)
    elif isinstance(value, str) and MADE_ID.match(value) and value.startswith("TXN-"):
        found.add(value)
    return found


def generate(template: Path, out: Path, count: int) -> None:
    lines = template.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    exchanges = [json.loads(line) for line in lines[1:]]
    exchanges = [e for e in exchanges if e.get("kind") == "exchange"]
    text = [json.dumps(e) for e in exchanges]
    ids = sorted(_ids(exchanges, set()))
    start = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    with out.open("w", encoding="utf-8") as file:
        file.write(json.dumps(header) + "\n")
        for seq in range(1, count + 1):
            copy, index = divmod(seq - 1, len(text))
            line = text[index]
            for number, old in enumerate(ids):
                line = line.replace(old, f"TXN-G{copy:09d}X{number:03d}")
            record = json.loads(line)
            record["seq"] = seq
            at = start + timedelta(milliseconds=seq)
            record["at"] = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            file.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    generate(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))

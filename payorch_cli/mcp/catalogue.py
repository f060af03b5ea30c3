"""How an MCP tool is declared and answers: the `tool` decorator a `Toolbox` method (`tools.py`)
wears (its one-line description, whether it changes anything, whether it is destructive), the
argument types input schemas are built from (pydantic `Field`s: types, bounds, patterns, enums),
and the `Result` a tool answers with. docs/decisions.md says why this set of tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import Field

from payorch.vocabulary import PROVIDER_BEHAVIOURS, PROVIDER_BEHAVIOURS_BY_KIND
from payorch_cli.mcp.sandbox import Environment
from simulator.domain.catalog import PAYIN_DECLINE_REASONS

PaymentId = Annotated[
    str, Field(description="A payment's transaction id.", pattern=r"^TXN-[A-Za-z0-9]+$")
]
PayoutId = Annotated[str, Field(description="A payout's id.", pattern=r"^po_[A-Za-z0-9]+$")]
ProviderId = Annotated[
    str,
    Field(
        description="A provider id (prv_...); sandbox_status lists them.",
        pattern=r"^prv_[a-z0-9_]+$",
    ),
]
StateName = Annotated[
    str,
    Field(
        description="1 to 64 characters from A-Z a-z 0-9 . _ -, not starting with a dot.",
        pattern=r"^[A-Za-z0-9_\-][A-Za-z0-9._\-]{0,63}$",
    ),
]
EnvironmentArg = Annotated[
    Environment,
    Field(
        description="sandbox (simulated outcomes) or production (the provider cascade runs, "
        "with the same shop's production key)."
    ),
]
FindEnvironment = Annotated[
    Environment | None,
    Field(description="Where the payment lives; omitted: sandbox, then production."),
]
# The vocabulary's behaviours and the catalogue's decline reasons, not a copy of them (pydantic
# reads the Literal at run time; mypy takes a literal only, so it sees the plain strings).
if TYPE_CHECKING:
    Behaviour = str
    DeclineReason = str
else:
    Behaviour = Literal[PROVIDER_BEHAVIOURS]
    DeclineReason = Literal[PAYIN_DECLINE_REASONS]
BEHAVIOURS_HELP = "; ".join(
    f"{kind}: {', '.join(behaviours)}" for kind, behaviours in PROVIDER_BEHAVIOURS_BY_KIND.items()
)
F = TypeVar("F", bound=Callable[..., Any])
PaymentStatus = Literal["pending", "completed", "failed", "refunded", "expired", "chargeback"]


@dataclass(frozen=True, slots=True)
class Result:
    text: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    read_only: bool
    destructive: bool = False  # replaces or deletes what exists (reset, restore)


def as_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def result(headline: str, data: dict[str, Any]) -> Result:
    return Result(f"{headline}\n{as_json(data)}", data)


# Where `tool` puts a method's declaration (read back by `declared`).
TOOL_SPEC = "mcp_tool"
MAX_DESCRIPTION = 120  # one line an agent reads in tools/list


def tool(
    description: str, *, read_only: bool = False, destructive: bool = False
) -> Callable[[F], F]:
    """Declares a `Toolbox` method an MCP tool, named as the method: its one-line description,
    whether it changes nothing (MCP's readOnlyHint; `--read-only` offers only these) and whether
    it replaces or deletes what exists (destructiveHint). A description an agent cannot read on
    one line is refused when the class is defined."""
    if "\n" in description or len(description) > MAX_DESCRIPTION:
        raise ValueError(f"an MCP tool's description is one line of <= {MAX_DESCRIPTION} chars")
    if read_only and destructive:
        raise ValueError("an MCP tool that changes nothing cannot be destructive")

    def declare(method: F) -> F:
        spec = ToolSpec(method.__name__, description, read_only, destructive)
        setattr(method, TOOL_SPEC, spec)
        return method

    return declare


def declared(cls: type) -> tuple[ToolSpec, ...]:
    """The tools `cls` declares, in the order its methods are written (tools/list's order)."""
    specs = (getattr(member, TOOL_SPEC, None) for member in vars(cls).values())
    return tuple(spec for spec in specs if isinstance(spec, ToolSpec))

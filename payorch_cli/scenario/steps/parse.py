"""Reading one step: which kind it is (exactly one kind's key), the keys every step may have
(`name`, `as`, `save`), then its kind's own `parse` from the registry, and its default name."""

from __future__ import annotations

from payorch_cli.scenario.checks import did_you_mean
from payorch_cli.scenario.expressions import roots
from payorch_cli.scenario.model import Step
from payorch_cli.scenario.source import Node
from payorch_cli.scenario.steps.base import REGISTRY
from payorch_cli.scenario.steps.reading import StepChecker


def all_step_keys() -> list[str]:
    """Every key some step may have, for "did you mean"."""
    return sorted(set().union(*(kind.keys for kind in REGISTRY.values())) | set(REGISTRY))


def parse_step(checker: StepChecker, node: Node, index: int, defined: set[str]) -> Step | None:
    """Step `index` (1-based) of the file, or None when it cannot be read (problems told to
    `checker`). `defined`: the names its `${...}` may use."""
    entries = checker.mapping(node, f"step {index}")
    if entries is None:
        return None
    present = {key: (key_node, value) for key, key_node, value in entries}
    kinds = [k for k in present if k in REGISTRY]
    if len(kinds) != 1:
        every_key = all_step_keys()
        unknown = [k for k in present if k not in every_key]
        for key in unknown:
            checker.error(
                present[key][0].loc,
                f"unknown key `{key}` in step {index}{did_you_mean(key, every_key)}",
            )
        if not unknown:
            what = "no action" if not kinds else f"{len(kinds)} actions ({', '.join(kinds)})"
            checker.error(
                node.loc,
                f"step {index} has {what}; a step does exactly one of: {', '.join(REGISTRY)}",
            )
        return None
    kind = REGISTRY[kinds[0]]
    fields = checker.keys(entries, (*kind.keys, kind.name), f"a `{kind.name}` step")
    step = Step(index, "", kind.name, node.loc)
    if "name" in fields:
        step.name = checker.string(fields["name"], "`name`") or ""
    if "as" in fields:
        step.as_ = checker.template(fields["as"], "`as`")
        checker.names(roots(step.as_), fields["as"].loc, defined, f"in step {index}")
        checker.credential(fields["as"], step.as_)
    kind.parse(checker, step, fields, defined)
    if "save" in fields:
        step.save = checker.save(fields["save"])
    step.name = step.name or kind.default_name(step)
    return step

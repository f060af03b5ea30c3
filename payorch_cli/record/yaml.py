"""A recorded scenario document as YAML text: the scenario language's literal strings, block
style for the steps, comments before the steps they are about."""

from __future__ import annotations

from typing import Any


def escape(text: str) -> str:
    """A recorded string as the scenario language reads it literally (`$${` is a `${`)."""
    return text.replace("${", "$${")


def to_yaml(document: dict[str, Any], comments: dict[int, list[str]] | None = None) -> str:
    """The document as a scenario file: the schema comment, block style for the steps, flow
    style for the leaves, strings quoted where YAML 1.1 or 1.2 would read them otherwise;
    `comments[i]`: lines written before step i."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = '"' if ("${" in value or _looks_typed(value)) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, represent_str)

    def dump(value: Any) -> str:
        return yaml.dump(
            value,
            Dumper=Dumper,
            sort_keys=False,
            default_flow_style=None,
            allow_unicode=True,
            width=100,
        )

    header = schema_header()
    if not comments:
        return header + dump(document)
    steps = document["steps"]
    text = dump({k: v for k, v in document.items() if k != "steps"}) + "steps:"
    text += "\n" if steps else " []\n"
    for index in range(len(steps) + 1):
        for line in comments.get(index, ()):
            # One line of printable characters, whatever the log held.
            printable = "".join(c if c.isprintable() else "?" for c in " ".join(line.split()))
            text += "# " + printable + "\n"
        if index < len(steps):
            text += dump([steps[index]])
    return header + text


def schema_header() -> str:
    """The editor's pointer to the scenario schema: the file shipped in this payorch's package,
    which exists wherever the recording was made (a path into a source checkout would not),
    and how to get one on another machine."""
    from payorch_cli.scenario import SCHEMA_PATH

    return (
        f"# yaml-language-server: $schema={SCHEMA_PATH.resolve().as_uri()}\n"
        "# Another machine: payorch scenario schema > scenario.schema.json, and point at it\n"
    )


def _looks_typed(value: str) -> bool:
    """A string YAML would read as something else (a number, a boolean, null, a date)."""
    import yaml

    from payorch import bounded

    try:  # bounded: a logged string can be an alias bomb or a 30,000-deep `[[[…`
        loaded = bounded.safe_load(value)
    except (yaml.YAMLError, ValueError):
        return True
    return not isinstance(loaded, str) or loaded != value or value[:1].isdigit()

"""Expected values and their matchers, compiled from YAML nodes.

Rules (docs/scenarios.md has the user's version):
- a mapping matches an object holding at least those keys (extra keys are fine at every level);
- a list matches a list of the same length, item by item, in order (`$contains` for "these, in
  any order, among others");
- a scalar matches an equal value; numbers compare by value in decimal (50 == 50.0), never a
  boolean with a number;
- a mapping whose keys all start with `$` is a matcher: each key is an operator (`$gt`,
  `$regex`...), one `Operator` subclass each, registered by name in `REGISTRY`; several in one
  mapping must all hold.
A new operator is a subclass in operators.py, a row in docs/scenarios.md, and its schema entry
written into scenario.schema.json by `python -m payorch_cli.scenario.schema` (a test fails until
it is).
Every matcher can say what it expected in a form that diffs well against the actual value: a
passing matcher shows the actual value on both sides, so the diff only shows what failed.
"""

from __future__ import annotations

from payorch_cli.scenario.matchers import operators as _operators  # noqa: F401 - registers them
from payorch_cli.scenario.matchers.base import (
    REGISTRY,
    Equals,
    ListMatcher,
    Matcher,
    ObjectMatcher,
    Op,
    Operator,
    Ops,
    compile_matcher,
)
from payorch_cli.scenario.matchers.values import (
    MISSING,
    TYPES,
    Mismatch,
    Scope,
    dec,
    is_number,
    json_equal,
    show,
)

__all__ = [
    "MISSING",
    "REGISTRY",
    "TYPES",
    "Equals",
    "ListMatcher",
    "Matcher",
    "Mismatch",
    "ObjectMatcher",
    "Op",
    "Operator",
    "Ops",
    "Scope",
    "compile_matcher",
    "dec",
    "is_number",
    "json_equal",
    "show",
]

"""The scenario language: the loader against good and broken files (each message checked), the
matchers and expressions, and `payorch scenario run|validate` with every exit status."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest
from typer.testing import CliRunner

from payorch_cli.main import app
from payorch_cli.scenario.credentials import Credentials
from payorch_cli.scenario.expressions import EnvScope, ExprError, compile_value, render
from payorch_cli.scenario.fixture import Payorch
from payorch_cli.scenario.loader import load_text
from payorch_cli.scenario.matchers import compile_matcher
from payorch_cli.scenario.source import ScenarioFileError, compose

runner = CliRunner()
CREDENTIALS = Credentials.builtin()


def load(text: str) -> object:
    return load_text(textwrap.dedent(text), "s.yaml", CREDENTIALS.check)


GOOD = """\
    # yaml-language-server: $schema=../payorch_cli/scenario/scenario.schema.json
    scenario: good
    tags: [a]
    as: shp_mazul_tienda
    vars: {amount: 10}
    matrix: {method: ["1001", sbx_card], currency: [USD, MXN]}
    steps:
      - create_payment: {amount: "${amount}", paymentMethodId: "${method}"}
        headers: {Idempotency-Key: "k-${run.id}"}
        expect: {status: 200, json: {status: pending, fees: {total: {$gte: 0}}}}
        save: {tx: transactionId, whole: ., rid: {header: X-Request-Id}}
      - simulate: {payment: "${tx}", action: paid}
      - expect_event: {type: payment.completed, match: {data: {id: "${tx}"}}, within: 2s}
      - advance_clock: 1h30m
      - request: {method: GET, path: "/payments/${whole.transactionId}"}
        as: mer_mercadoazul
        retry: {attempts: 2, interval: 10ms}
      - receiver: {status: 503}
      - expect_no_event: payment.failed
"""


def test_a_good_file_loads_with_its_matrix() -> None:
    scenario = load(GOOD)
    assert [i.cell for i in scenario.instances()] == [  # type: ignore[attr-defined]  # load() is typed object; it gives a Scenario
        {"method": "1001", "currency": "USD"},
        {"method": "1001", "currency": "MXN"},
        {"method": "sbx_card", "currency": "USD"},
        {"method": "sbx_card", "currency": "MXN"},
    ]
    steps = scenario.steps  # type: ignore[attr-defined]  # load() is typed object; it gives a Scenario
    assert [s.kind for s in steps][:4] == [
        "create_payment",
        "simulate",
        "expect_event",
        "advance_clock",
    ]
    assert steps[3].seconds == 5400 and steps[0].loc.line == 8
    assert scenario.uses_receiver  # type: ignore[attr-defined]  # load() is typed object; it gives a Scenario


BROKEN = [
    ("scenario: x\nsteps:\n  - create_payment: {amount: 1\n", "4:1: YAML: while parsing a flow"),
    (
        "scenario: x\nsteps:\n  - request: {method: GET, path: /p/${a}}\n",
        "quote a value holding ${…}",
    ),
    ("", "1:1: the file is empty"),
    ("scenario: x\n---\nscenario: y\n", "2:1: YAML: expected a single document"),
    ("- a\n- b\n", "1:1: a scenario file must be a mapping, not a list"),
    (
        "scenario: x\nstep:\n  - balance: {}\n",
        "2:1: unknown key `step` in the scenario; did you mean `steps`?",
    ),
    ("scenario: x\n", "1:1: missing `steps:`"),
    ("scenario: x\nscenario: y\nsteps: [{balance: {}}]\n", "2:1: duplicate key `scenario`"),
    ("scenario: x\nsteps: []\n", "2:8: `steps` must be a non-empty list"),
    (
        "scenario: x\nsteps:\n  - creat_payment: {}\n",
        "3:5: unknown key `creat_payment` in step 1; did you mean `create_payment`?",
    ),
    ("scenario: x\nsteps:\n  - name: nothing\n", "3:5: step 1 has no action"),
    (
        "scenario: x\nsteps:\n  - balance: {}\n    advance_clock: 1m\n",
        "step 1 has 2 actions (balance, advance_clock)",
    ),
    (
        "scenario: x\nsteps:\n  - advance_clock: 1m\n    expect: {status: 200}\n",
        "4:5: unknown key `expect` in a `advance_clock` step",
    ),
    ("scenario: x\nsteps:\n  - advance_clock: 2x\n", "3:20: `advance_clock`: not a duration: '2x'"),
    (
        "scenario: x\nsteps:\n  - balance: {}\n    expect: {statuss: 200}\n",
        "4:14: unknown key `statuss` in `expect`; did you mean `status`?",
    ),
    (
        "scenario: x\nsteps:\n  - balance: {}\n    expect: {json: {a: {$regx: x}}}\n",
        "4:25: unknown matcher `$regx`; did you mean `$regex`?",
    ),
    (
        "scenario: x\nsteps:\n  - balance: {}\n    expect: {json: {a: {$gt: 1, b: 2}}}\n",
        "mixes `$gt` and `b`",
    ),
    (
        "scenario: x\nsteps:\n  - balance: {}\n    expect: {json: {a: {$regex: '(x'}}}\n",
        "4:33: bad regular expression",
    ),
    (
        "scenario: x\nsteps:\n  - balance: {}\n    expect: {json: {a: {$type: text}}}\n",
        'unknown type "text"',
    ),
    (
        "scenario: x\nsteps:\n  - get_payment: '${tx}'\n  - balance: {}\n    save: {tx: a}\n",
        "3:18: ${tx} is not defined in step 1",
    ),
    (
        "scenario: x\nsteps:\n  - balance: {}\n    save: {tx: a}\n  - get_payment: '${txx}'\n",
        "did you mean `tx`?",
    ),
    ("scenario: x\nsteps:\n  - get_payment: '${a +}'\n", "cannot parse ${a +}"),
    (
        "scenario: x\nsteps:\n  - trace: {payment: a, payout: b}\n",
        "3:12: `trace` takes one of `payment: TXN-…` or `payout: po_…`",
    ),
    ("scenario: x\nsteps:\n  - trace: {paymnt: a}\n", "did you mean `payment`?"),
    ("scenario: x\nsteps:\n  - get_payment: '${open(1)}'\n", "only round, abs"),
    (
        "scenario: x\nsteps:\n  - expect_event: payment.complete\n",
        "3:19: unknown event type `payment.complete`; did you mean `payment.completed`?",
    ),
    (
        "scenario: x\nsteps:\n  - balance: {}\n    as: shp_mazul_tiend\n",
        "4:9: unknown credential `shp_mazul_tiend`: did you mean shp_mazul_tienda",
    ),
    ("scenario: x\nsteps:\n  - balance: {}\n    save: {1x: a}\n", "`1x` cannot be saved"),
    ("scenario: x\nsteps:\n  - balance: {}\n    save: {x: 'a..b'}\n", "bad JSON path 'a..b'"),
    (
        "scenario: x\nmatrix: {m: []}\nsteps: [{balance: {}}]\n",
        "2:13: matrix `m` must be a non-empty list",
    ),
    ("scenario: x\nsteps:\n  - simulate: {payment: x}\n", "needs `action`"),
    ("scenario: x\nsteps:\n  - request: {method: FETCH, path: /x}\n", "unknown method `FETCH`"),
    ("scenario: x\nsteps:\n  - request: {method: GET, path: x}\n", "`path` must start with /"),
    (
        "scenario: x\nsteps:\n  - balance: {}\n    retry: {attempts: 0}\n",
        "`retry` needs `attempts`",
    ),
    (
        "scenario: x\nsteps:\n  - balance: {}\n    expect: {status: 2xy}\n",
        "`status` takes a code (201)",
    ),
    ("scenario: x\nsteps:\n  - receiver: {}\n", "`receiver` takes `status`"),
]


@pytest.mark.parametrize(("text", "message"), BROKEN)
def test_a_broken_file_names_the_place_and_the_problem(text: str, message: str) -> None:
    with pytest.raises(ScenarioFileError) as caught:
        load_text(text, "s.yaml", CREDENTIALS.check)
    rendered = str(caught.value)
    assert message in rendered, rendered
    assert rendered.startswith("s.yaml:")


def test_every_problem_of_a_file_is_reported_at_once() -> None:
    text = "scenario: x\nsteps:\n  - advance_clock: 2x\n  - expect_event: nope\n  - bogus: 1\n"
    with pytest.raises(ScenarioFileError) as caught:
        load_text(text, "s.yaml")
    assert [(e.loc.line, e.loc.column) for e in caught.value.errors] == [(3, 20), (4, 19), (5, 5)]


def test_yaml_1_2_scalars() -> None:
    node = compose("a: 012180001183597198\nb: no\nc: 2024-01-01\nd: 1001\ne: 1.5e3\n", "x")
    assert node.value() == {
        "a": "012180001183597198",
        "b": "no",
        "c": "2024-01-01",
        "d": 1001,
        "e": 1500.0,
    }


def test_expressions_keep_types_and_compute_in_decimal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAYORCH_TEST_X", "hello")
    scope = {"tx": {"amountLocal": 0.3, "items": [{"id": "a"}]}, "n": 0.1, "env": EnvScope()}
    cases = {
        "${tx}": scope["tx"],
        "${tx.amountLocal - n}": 0.2,
        "${round(tx.amountLocal / 3, 2)}": 0.1,
        "${tx.items[0].id}-${n}": "a-0.1",
        "${env.PAYORCH_TEST_X}": "hello",
        "${env.PAYORCH_TEST_MISSING:-fallback}": "fallback",
        "$${literal}": "${literal}",
        "${len(tx.items)}": 1,
    }
    for text, expected in cases.items():
        assert render(compile_value(text), scope) == expected, text
    with pytest.raises(ExprError, match="PAYORCH_TEST_MISSING is not set"):
        render(compile_value("${env.PAYORCH_TEST_MISSING}"), scope)
    with pytest.raises(ExprError, match="no `nope` here"):
        render(compile_value("${tx.nope}"), scope)


def matcher(text: str):
    return compile_matcher(compose(textwrap.dedent(text), "m.yaml"))


@pytest.mark.parametrize(
    ("expected", "actual", "problems"),
    [
        ("{a: 1}", {"a": 1.0, "b": 2}, []),
        ("{a: 1}", {"a": True}, ["a: expected 1, got true"]),
        ("{a: {$any: true}}", {}, ["a: missing"]),
        ("{a: {$absent: true}}", {"a": None}, ["a: expected no such key, got null"]),
        ("{a: {$type: [string, 'null']}}", {"a": None}, []),
        ("{a: {$between: [1, 2]}}", {"a": 2.5}, ["a: expected $between [1, 2], got 2.5"]),
        ("{a: {$approx: 1.0, $tolerance: 0.1}}", {"a": 1.05}, []),
        ("{a: [1, 2]}", {"a": [1]}, ["a: expected 2 items, got 1"]),
        ("{a: {$contains: [x, x]}}", {"a": ["x", "y"]}, ['no item matches "x"']),
        ("{a: {$contains: [{id: 2}]}}", {"a": [{"id": 1}, {"id": 2}]}, []),
        ("{a: {$each: {$gt: 0}}}", {"a": [1, 0]}, ["item [1]"]),
        ("{a: {$len: {$gte: 2}}}", {"a": "x"}, ["length 1"]),
        ("{a: {$exact: {b: 1}}}", {"a": {"b": 1, "c": 2}}, ["unexpected keys: c"]),
        ("{a: {$not: {$regex: v0=}}}", {"a": "t=1,v1=ab"}, []),
        ("{a: {$in: [x, y]}}", {"a": "z"}, ["expected one of"]),
        ("{a: {$eq: {$weird: 1}}}", {"a": {"$weird": 1}}, []),
        ("{statsu: 1}", {"status": 1}, ["missing (the object has `status`)"]),
    ],
)
def test_matchers(expected: str, actual: object, problems: list[str]) -> None:
    found = [f"{m.path}: {m.message}" for m in matcher(expected).check(actual, "", {})]
    assert len(found) == len(problems), found
    for fragment, line in zip(problems, found, strict=True):
        assert fragment in line, line


def test_every_matcher_operator_is_documented() -> None:
    from payorch_cli.scenario.matchers import REGISTRY

    docs = (Path(__file__).resolve().parents[2] / "docs" / "scenarios.md").read_text()
    table = docs.split("## Matching", 1)[1].split("\n## ", 1)[0]
    missing = [n for n in REGISTRY if not re.search(rf"(?<![\w$]){re.escape(n)}(?!\w)", table)]
    assert missing == [], "add these to the Matching table of docs/scenarios.md"


# -- the command ------------------------------------------------------------------------------


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


PASSING = """\
    scenario: passes
    tags: [smoke]
    steps:
      - create_payment: {amount: 10, paymentMethodId: "1001"}
        save: {tx: transactionId}
      - simulate: {payment: "${tx}", action: paid}
      - expect_event: {type: payment.completed, match: {data: {id: "${tx}"}}}
"""
FAILING = """\
    scenario: fails
    steps:
      - name: create it
        create_payment: {amount: 10, paymentMethodId: "1001"}
        expect:
          json: {status: completed, amount: {$lt: 5}}
      - balance: {}
"""


def test_run_exit_0_and_a_junit_file(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", PASSING)
    (tmp_path / "other.yaml").write_text("not: a scenario\n")  # left alone in a directory
    junit = tmp_path / "junit.xml"
    result = runner.invoke(app, ["scenario", "run", str(tmp_path), "--junit", str(junit)])
    assert result.exit_code == 0, result.output
    assert "ok    3. expect payment.completed" in result.stdout  # plain lines: not a TTY
    assert "1 passed, 0 failed in" in result.stdout
    assert "in-process simulator start:" in result.stdout
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "1" and suite.get("failures") == "0"


def test_a_failed_expectation_shows_step_request_and_diff_and_exits_1(tmp_path: Path) -> None:
    path = write(tmp_path, "f.yaml", FAILING)
    junit = tmp_path / "junit.xml"
    result = runner.invoke(app, ["scenario", "run", str(path), "--junit", str(junit)])
    assert result.exit_code == 1
    out = result.stdout
    assert "FAIL  1. create it" in out and "f.yaml:3:5" in out
    assert 'json.status: expected "completed", got "pending" (+1 more)' in out
    assert "request: POST http://127.0.0.1:" in out and '"amount": 10' in out
    assert "response: 200 in" in out
    assert '-  "status": "completed",' in out and '+  "status": "pending",' in out
    assert '-  "amount": "<$lt 5>"' in out and '+  "amount": 10' in out
    assert "skip  2. read the balance" in out
    assert "0 passed, 1 failed" in out
    case = ElementTree.parse(junit).getroot().find("testsuite/testcase/failure")
    assert case is not None and "json.status" in (case.get("message") or "")


def test_an_invalid_file_exits_2_before_anything_runs(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", PASSING)
    write(tmp_path, "b.yaml", "scenario: b\nsteps:\n  - advance_clock: soon\n")
    result = runner.invoke(app, ["scenario", "run", str(tmp_path)])
    assert result.exit_code == 2
    assert "b.yaml:3:20: `advance_clock`: not a duration: 'soon'" in result.stderr
    assert "nothing was run" in result.stderr and "passes" not in result.stdout
    validate = runner.invoke(app, ["scenario", "validate", str(tmp_path)])
    assert validate.exit_code == 2 and "b.yaml:3:20" in validate.stderr


def test_validate_and_filters(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", PASSING)
    write(tmp_path, "f.yaml", FAILING)
    ok = runner.invoke(app, ["scenario", "validate", str(tmp_path)])
    assert ok.exit_code == 0 and "ok  " in ok.stdout and "passes (3 steps)" in ok.stdout
    only = runner.invoke(app, ["scenario", "run", str(tmp_path), "-k", "smoke and not fails"])
    assert only.exit_code == 0 and "1 passed" in only.stdout
    none = runner.invoke(app, ["scenario", "run", str(tmp_path), "-k", "nothing"])
    assert none.exit_code == 2 and "no scenario matched -k 'nothing'" in none.stderr
    missing = runner.invoke(app, ["scenario", "run", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such file or directory" in missing.stderr


def test_validate_lists_the_yaml_files_it_skipped_and_why(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", PASSING)
    write(tmp_path, "config/settings.yaml", "name: not a scenario\n")
    (tmp_path / "latin1.yml").write_bytes("scenario: caf\xe9\n".encode("latin-1"))
    write(tmp_path, ".hidden/x.yaml", "name: never looked at\n")
    result = runner.invoke(app, ["scenario", "validate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("ok    ") and "a.yaml: passes (3 steps)" in lines[0]
    assert lines[1:] == [
        f"skip  {tmp_path / 'config/settings.yaml'}: no top-level `scenario:` key, so not a "
        "scenario file",
        f"skip  {tmp_path / 'latin1.yml'}: not UTF-8 text",
        "1 scenario file(s) valid, 2 YAML file(s) skipped",
    ]
    (tmp_path / "a.yaml").unlink()
    none = runner.invoke(app, ["scenario", "validate", str(tmp_path)])
    assert none.exit_code == 2
    assert (
        none.stderr.splitlines()[0] == f"payorch scenario validate: no scenario found in {tmp_path}"
    )
    assert "settings.yaml: no top-level `scenario:` key" in none.stderr


def test_json_report(tmp_path: Path) -> None:
    write(tmp_path, "f.yaml", FAILING)
    result = runner.invoke(app, ["scenario", "run", str(tmp_path), "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert (report["passed"], report["failed"], report["server"]) == (0, 1, "in-process")
    [scenario] = report["scenarios"]
    assert scenario["failedStep"] == "1. create it"
    assert [s["status"] for s in scenario["steps"]] == ["failed", "skipped"]


def test_run_against_a_running_server(tmp_path: Path, payorch: Payorch) -> None:
    write(tmp_path, "a.yaml", PASSING)
    result = runner.invoke(app, ["--base-url", payorch.base_url, "scenario", "run", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"against {payorch.base_url}" in result.stdout
    # The run's subscription was removed again; only the fixture's own remains.
    assert payorch.client.list_webhooks()["pagination"]["total"] == 1


def test_an_unreachable_base_url_exits_3(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", PASSING)
    result = runner.invoke(
        app, ["scenario", "run", str(tmp_path), "--base-url", "http://127.0.0.1:9"]
    )
    assert result.exit_code == 3 and "cannot reach http://127.0.0.1:9" in result.stderr


def test_an_event_that_never_comes_lists_what_did(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "e.yaml",
        """\
        scenario: waits
        steps:
          - create_payment: {amount: 10, paymentMethodId: "1001"}
            save: {tx: transactionId}
          - simulate: {payment: "${tx}", action: failed}
          - expect_event: {type: payment.failed, match: {data: {status: completed}}, within: 1500ms}
    """,
    )
    result = runner.invoke(app, ["scenario", "run", str(path)])
    assert result.exit_code == 1
    assert "1 payment.failed event(s) arrived within 1.5 s but none matched" in result.stdout
    assert 'event.data.status: expected "completed", got "failed"' in result.stdout
    assert "received: payment.failed evt_" in result.stdout


def test_the_schema_is_shipped_and_names_every_step_kind() -> None:
    from payorch_cli.scenario.loader import KINDS

    result = runner.invoke(app, ["scenario", "schema"])
    schema = json.loads(result.stdout)
    kinds = {next(k for k in s["required"]) for s in schema["$defs"]["step"]["oneOf"]}
    assert kinds == set(KINDS)
    assert (
        runner.invoke(app, ["scenario", "schema", "--path"])
        .stdout.strip()
        .endswith("scenario.schema.json")
    )


def test_every_step_kind_is_one_registry_entry() -> None:
    """A kind's reading, running, default name and schema entry are its StepKind's; the loader,
    the runner and the schema only look kinds up, in the registry's order."""
    from payorch_cli.scenario.loader import KINDS
    from payorch_cli.scenario.schema import with_vocabulary
    from payorch_cli.scenario.steps import REGISTRY, StepKind

    assert tuple(REGISTRY) == KINDS
    shipped = json.loads(runner.invoke(app, ["scenario", "schema"]).stdout)
    steps = [with_vocabulary(k.step_schema()) for k in REGISTRY.values()]
    assert shipped["$defs"]["step"]["oneOf"] == steps
    for name, kind in REGISTRY.items():
        assert type(kind).parse is not StepKind.parse, name
        assert type(kind).run is not StepKind.run, name
        assert kind.description, name


def test_a_new_step_kind_is_read_named_and_schemed_from_its_class_alone() -> None:
    from typing import Any, ClassVar

    from payorch_cli.scenario.model import Step
    from payorch_cli.scenario.source import Node
    from payorch_cli.scenario.steps import REGISTRY, StepKind
    from payorch_cli.scenario.steps.reading import StepChecker

    class Ping(StepKind):  # defining it registers it
        name = "ping_for_test"
        description = "A kind only this test knows."
        schema: ClassVar[dict[str, Any]] = {"type": "string"}

        def parse(
            self, checker: StepChecker, step: Step, fields: dict[str, Node], defined: set[str]
        ) -> None:
            step.state = checker.string(fields[self.name], "`ping_for_test`")

        def default_name(self, step: Step) -> str:
            return f"ping {step.state}"

    try:
        scenario = load_text("scenario: p\nsteps:\n  - ping_for_test: pong\n", "p.yaml")
        step = scenario.steps[0]
        assert (step.kind, step.name, step.state) == ("ping_for_test", "ping pong", "pong")
        assert Ping().step_schema()["properties"] == {
            "name": {"type": "string"},
            "as": REGISTRY["advance_clock"].step_schema()["properties"]["as"],
            "ping_for_test": {"type": "string"},
        }
        with pytest.raises(ScenarioFileError) as caught:
            load_text("scenario: p\nsteps:\n  - ping_for_test: [1]\n", "p.yaml")
        assert "p.yaml:3:20: `ping_for_test` must be a string, not a list" in str(caught.value)
    finally:
        del REGISTRY["ping_for_test"]


def test_every_step_kind_is_documented() -> None:
    from payorch_cli.scenario.steps import REGISTRY

    docs = (Path(__file__).resolve().parents[2] / "docs" / "scenarios.md").read_text()
    steps = docs.split("## File", 1)[1].split("### `as:`", 1)[0]
    missing = [name for name in REGISTRY if f"`{name}:" not in steps]
    assert missing == [], "add these to the steps of docs/scenarios.md (## File)"


def test_the_schema_file_is_generated_from_its_sources() -> None:
    """Step kinds (the steps registry) and matcher operators (the matchers registry) are written
    into the shipped file, which editors read directly."""
    from payorch_cli.scenario import SCHEMA_PATH
    from payorch_cli.scenario.schema import current_text

    assert SCHEMA_PATH.read_text(encoding="utf-8") == current_text(), (
        "scenario.schema.json is out of date: run `python -m payorch_cli.scenario.schema`"
    )


def test_the_schema_file_names_no_vocabulary_and_the_served_one_enumerates_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new event type (or provider behaviour) is one line of payorch.vocabulary: the file stays
    current, and what `payorch scenario schema` prints enumerates the new name (issue 27's "an
    event type touches at most 4 files")."""
    from payorch import vocabulary
    from payorch_cli.scenario import SCHEMA_PATH
    from payorch_cli.scenario.schema import current_text

    text = SCHEMA_PATH.read_text(encoding="utf-8")
    named = [
        n for n in (*vocabulary.EVENT_TYPES, *vocabulary.PROVIDER_BEHAVIOURS) if f'"{n}"' in text
    ]
    assert named == [], "the vocabulary's names are filled in when served, not written"

    monkeypatch.setattr(vocabulary, "EVENT_TYPES", (*vocabulary.EVENT_TYPES, "invoice.sent"))
    assert current_text() == text
    served = json.loads(runner.invoke(app, ["scenario", "schema"]).stdout)
    steps = {s["required"][0]: s["properties"] for s in served["$defs"]["step"]["oneOf"]}
    for kind in ("expect_event", "expect_no_event"):
        alone, mapping = steps[kind][kind]["oneOf"]
        assert alone["enum"] == mapping["properties"]["type"]["enum"] == [*vocabulary.EVENT_TYPES]
        assert alone["enum"][-1] == "invoice.sent"
    behaviour = steps["provider"]["provider"]["properties"]["set"]["properties"]["behaviour"]
    assert behaviour["enum"] == list(vocabulary.PROVIDER_BEHAVIOURS)
    assert "x-vocabulary" not in json.dumps(served)


def test_the_served_schema_refuses_an_unknown_event_type_as_the_loader_does() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from payorch_cli.scenario.schema import served

    validator = jsonschema.Draft202012Validator(served())
    text = "scenario: x\nsteps:\n  - expect_event: {type: payment.complete}\n"
    assert list(validator.iter_errors(compose(text, "s.yaml").value()))
    with pytest.raises(ScenarioFileError) as caught:
        load(text)
    from payorch.vocabulary import EVENT_TYPES

    assert str(caught.value) == (
        "s.yaml:3:26: unknown event type `payment.complete`; did you mean `payment.completed`? "
        f"(events: {', '.join(EVENT_TYPES)})"
    )


def test_the_schema_accepts_the_repository_scenarios() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from payorch_cli.scenario.schema import served

    validator = jsonschema.Draft202012Validator(served())
    root = Path(__file__).resolve().parents[2] / "scenarios"
    for path in sorted(root.glob("*.yaml")):
        errors = list(validator.iter_errors(compose(path.read_text(), str(path)).value()))
        assert not errors, (path, errors[0].message)


def test_each_delivery_satisfies_one_expect_event(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "twice.yaml",
        """\
        scenario: twice
        steps:
          - create_payment: {amount: 10, paymentMethodId: "1001"}
            save: {first: transactionId}
          - create_payment: {amount: 11, paymentMethodId: "1001"}
            save: {second: transactionId}
          - simulate: {payment: "${first}", action: paid}
          - simulate: {payment: "${second}", action: paid}
          - expect_event: payment.completed
            save: {a: data.id}
          - expect_event: payment.completed
            save: {b: data.id}
          - name: each delivery taken once (deliveries may arrive in either order)
            get_payment: "${b}"
            expect: {json: {id: {$not: "${a}", $in: ["${first}", "${second}"]}}}
          - expect_no_event: {type: payment.completed, within: 200ms}
          - expect_event: {type: payment.completed, within: 200ms}
    """,
    )
    result = runner.invoke(app, ["scenario", "run", str(path), "--json"])
    report = json.loads(result.stdout)
    [scenario] = report["scenarios"]
    statuses = [s["status"] for s in scenario["steps"]]
    # Both deliveries were taken, one each (events that arrived before the step count); none
    # is left for the last step.
    assert statuses == ["passed"] * 8 + ["failed"], statuses
    assert "no payment.completed within 0.2 s" in scenario["failure"]


def test_the_receiver_keeps_connections_alive_and_closes_them() -> None:
    import http.client

    from payorch_cli.scenario.receiver import Receiver

    receiver = Receiver()
    receiver.arm("s1", "whsec_test")
    port = int(receiver.url("s1").rsplit(":", 1)[1].split("/")[0])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    sockets = []
    for n in range(2):
        conn.request("POST", "/hooks/s1", body=b'{"type": "x", "id": "evt_%d"}' % n)
        response = conn.getresponse()
        response.read()
        assert response.status == 400  # unsigned: answered as a correct endpoint would
        sockets.append(conn.sock)
    assert sockets[0] is sockets[1] is not None  # one connection for both deliveries
    assert [d.event_id for d in receiver.deliveries] == ["evt_0", "evt_1"]
    assert [d.problem is not None for d in receiver.deliveries] == [True, True]
    receiver.close()
    assert sockets[0].recv(1) == b""  # the kept-alive connection is ended, not left hanging
    conn.close()


def test_the_live_view_draws_the_latest_steps_that_fit() -> None:
    import io

    from rich.console import Console

    from payorch_cli.scenario.interpreter import StepResult
    from payorch_cli.scenario.reporters import LiveReporter

    scenario = load("scenario: long\nsteps:\n" + "  - balance: {}\n" * 30)
    [instance] = scenario.instances()  # type: ignore[attr-defined]  # load() is typed object; it gives a Scenario
    steps = instance.scenario.steps
    console = Console(file=io.StringIO(), force_terminal=True, width=80, height=12)
    reporter = LiveReporter(console)
    try:
        reporter.instance_started(instance)
        for step in steps[:-1]:
            reporter.step_started(instance, step)
            reporter.step_finished(instance, StepResult(step, "passed", 0.001))
        reporter.step_started(instance, steps[-1])
        view = Console(file=io.StringIO(), width=80, height=12)
        with view.capture() as capture:
            view.print(reporter._renderable())
    finally:
        reporter.close()
    text = capture.get().splitlines()
    # The title, how many are not drawn, the latest finished steps and the running one: the
    # running step stays in sight however long the scenario.
    assert len(text) < 12
    assert text[0] == "long" and text[1].strip() == "… 21 earlier steps"
    assert "✓ 29. read the balance" in text[-2] and "30. read the balance" in text[-1]

"""The scenario steps for the simulated providers (`provider:`, `reset_providers:`): what each
shape sends, and the problems found before anything runs."""

from __future__ import annotations

import textwrap

import pytest

from payorch_cli.scenario.credentials import Credentials
from payorch_cli.scenario.expressions import render
from payorch_cli.scenario.loader import load_text
from payorch_cli.scenario.model import Scenario
from payorch_cli.scenario.source import ScenarioFileError, compose

CREDENTIALS = Credentials.builtin()

STEPS = """\
scenario: providers
steps:
  - provider: {id: prv_stp_mx}
  - provider:
      id: prv_ebanx
      set:
        behaviour: accept
        declineRate: 0.3
        declineReason: insufficient_funds
        seed: 7
        latency: 2s
        callback: {after: null, outcome: failed, mode: duplicate}
  - provider: {id: prv_stp_mx, incident: {behaviour: outage, for: 10m, in: 5m}}
  - provider:
      id: prv_stp_mx
      incident: {behaviour: decline, for: 90s, declineReason: expired_card}
  - provider: {id: prv_stp_mx, set: {latency: 0, callback: {after: 45s}}}
  - provider: {id: prv_stp_mx, end_incidents: true}
  - provider: {id: prv_stp_mx, end_incidents: inc_0001}
  - reset_providers: {}
"""


def load(text: str) -> Scenario:
    return load_text(textwrap.dedent(text), "s.yaml", CREDENTIALS.check)


def test_each_shape_sends_its_control_plane_call() -> None:
    steps = load(STEPS).steps
    calls = [
        (s.http.method, render(s.http.path, {}), render(s.http.body, {}))
        for s in steps
        if s.http is not None
    ]
    assert calls == [
        ("GET", "/_sim/providers/prv_stp_mx", None),
        (
            "PATCH",
            "/_sim/providers/prv_ebanx",
            {
                "behaviour": "accept",
                "declineRate": 0.3,
                "declineReason": "insufficient_funds",
                "seed": 7,
                "latencySeconds": 2.0,
                "callback": {"afterSeconds": None, "outcome": "failed", "mode": "duplicate"},
            },
        ),
        (
            "POST",
            "/_sim/providers/prv_stp_mx/incidents",
            {"behaviour": "outage", "durationSeconds": 600.0, "startsInSeconds": 300.0},
        ),
        (
            "POST",
            "/_sim/providers/prv_stp_mx/incidents",
            {"behaviour": "decline", "durationSeconds": 90.0, "declineReason": "expired_card"},
        ),
        (
            "PATCH",
            "/_sim/providers/prv_stp_mx",
            {"latencySeconds": 0.0, "callback": {"afterSeconds": 45.0}},
        ),
        ("DELETE", "/_sim/providers/prv_stp_mx/incidents", None),
        ("DELETE", "/_sim/providers/prv_stp_mx/incidents/inc_0001", None),
        ("POST", "/_sim/providers/reset", None),
    ]
    assert [s.name for s in steps] == [
        "read provider prv_stp_mx",
        "provider prv_ebanx: set behaviour=accept, declineRate=0.3, "
        "declineReason=insufficient_funds, seed=7, latencySeconds=2.0, "
        "callback(afterSeconds=None, outcome=failed, mode=duplicate)",
        "provider prv_stp_mx: outage for 10m in 5m",
        "provider prv_stp_mx: decline for 1m30s",
        "provider prv_stp_mx: set latencySeconds=0.0, callback(afterSeconds=45.0)",
        "provider prv_stp_mx: end its incidents",
        "provider prv_stp_mx: end incident inc_0001",
        "put every provider back as the fixtures define it",
    ]


def test_saved_values_may_name_the_provider() -> None:
    scenario = load(
        """\
        scenario: by name
        vars: {p: prv_cardhub}
        steps:
          - provider: {id: "${p}", incident: {behaviour: outage, for: 1m}}
        """
    )
    call = scenario.steps[0].http
    assert call is not None and render(call.path, {"p": "prv_cardhub"}) == (
        "/_sim/providers/prv_cardhub/incidents"
    )


def test_a_saved_incident_id_names_the_incident_to_end() -> None:
    scenario = load(
        """\
        scenario: end the saved one
        steps:
          - provider: {id: prv_cardhub, incident: {behaviour: outage, for: 10m}}
            save: {inc: id}
          - provider: {id: prv_cardhub, end_incidents: "${inc}"}
        """
    )
    call = scenario.steps[1].http
    assert call is not None and call.method == "DELETE"
    assert render(call.path, {"inc": "inc_42"}) == "/_sim/providers/prv_cardhub/incidents/inc_42"


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("provider: {set: {behaviour: outage}}", "`provider` needs `id`"),
        (
            "provider: {id: p, set: {behaviour: outgae}}",
            "unknown behaviour `outgae`; did you mean `outage`?",
        ),
        (
            "provider: {id: p, set: {declineRat: 0.3}}",
            "unknown key `declineRat` in `provider.set`; did you mean `declineRate`?",
        ),
        ("provider: {id: p, set: {}}", "`set` needs one of: behaviour, declineRate"),
        ("provider: {id: p, incident: {behaviour: outage}}", "`incident` needs `for`"),
        (
            "provider: {id: p, incident: {behaviour: outage, for: -300}}",
            "`for`: a duration must be positive",
        ),
        (
            "provider: {id: p, set: {behaviour: outage}, incident: {behaviour: outage, for: 1m}}",
            "not `set` and `incident` (write two steps)",
        ),
        (
            "provider: {id: p, incident: {behaviour: outage, for: 1m}, end_incidents: true}",
            "not `incident` and `end_incidents`",
        ),
        ("provider: {id: p, end_incidents: false}", "`end_incidents` takes `true`"),
        ("provider: {id: p, end_incidents: {all: true}}", "`end_incidents` takes `true`"),
        (
            "provider: {id: p, set: {callback: {after: soon}}}",
            "`callback.after`: not a duration: 'soon'",
        ),
        ("reset_providers: {all: true}", "`reset_providers` takes no arguments"),
    ],
)
def test_bad_provider_steps_are_found_before_anything_runs(step: str, message: str) -> None:
    with pytest.raises(ScenarioFileError) as caught:
        load(f"scenario: bad\nsteps:\n  - {step}\n")
    assert message in str(caught.value), str(caught.value)


def test_the_schema_takes_the_provider_steps() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from payorch_cli.scenario.schema import served

    validator = jsonschema.Draft202012Validator(served())
    assert not list(validator.iter_errors(compose(STEPS, "s.yaml").value()))
    both = "scenario: x\nsteps:\n  - provider: {id: p, set: {seed: 1}, incident: {}}\n"
    assert list(validator.iter_errors(compose(both, "s.yaml").value()))

"""Saved states where tests use them: `payorch.save()` / `payorch.restore()` on the pytest
fixture, and the scenario steps `save_state` / `restore_state`, run by pytest in a project of the
user's own (tests/cli/test_plugin.py's harness)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_plugin import project, pytest_run

FIXTURE_TEST = """\
    def test_back_to_a_prepared_world(payorch):
        kept = payorch.client.post("/payments", {"amount": 50, "paymentMethodId": "1001"})
        saved = payorch.save("ready")
        assert saved["transactions"] == 1
        gone = payorch.client.post("/payments", {"amount": 51, "paymentMethodId": "1001"})
        payorch.client.post(f"/payments/{gone['transactionId']}/simulate", {"action": "paid"})
        payorch.events.wait_for("payment.completed", {"data": {"id": gone["transactionId"]}})
        assert payorch.restore("ready")["transactions"] == 1
        assert payorch.client.get("/payments")["pagination"]["total"] == 1
        # The restored world still delivers to the fixture's receiver; what came before the
        # restore is not found again.
        payorch.client.post(f"/payments/{kept['transactionId']}/simulate", {"action": "paid"})
        event = payorch.events.wait_for("payment.completed")
        assert event["data"]["id"] == kept["transactionId"]
        # Saved before the fixture subscribed: the subscription is made again.
        payorch.restore("ready")
        assert payorch.save("ready")["transactions"] == 1  # overwrites by default
"""

EMPTY_STATE_TEST = """\
    import pytest
    from payorch_cli.client import ApiError

    def test_restoring_a_state_saved_before_the_subscription(payorch):
        payorch.client.delete_webhook(payorch.events.webhook_id)
        payorch.save("bare")                      # no subscription in it
        payorch.restore("bare")
        tx = payorch.client.post("/payments", {"amount": 50, "paymentMethodId": "1001"})
        payorch.client.post(f"/payments/{tx['transactionId']}/simulate", {"action": "paid"})
        assert payorch.events.wait_for("payment.completed")["data"]["id"] == tx["transactionId"]
        with pytest.raises(ApiError) as error:
            payorch.restore("never-saved")
        assert error.value.code == "snapshot_not_found"
"""

SCENARIO = """\
    scenario: back to a saved state
    steps:
      - create_payment: {amount: 30, paymentMethodId: "1001"}
        save: {kept: transactionId}
      - save_state: ready
      - create_payment: {amount: 31, paymentMethodId: "1001"}
        save: {gone: transactionId}
      - simulate: {payment: "${gone}", action: paid}
      - expect_event: {type: payment.completed, match: {data: {id: "${gone}"}}}
      - restore_state: ready
      - get_payment: "${gone}"
        expect: {status: 404, error: {code: transaction_not_found}}
      - simulate: {payment: "${kept}", action: paid}
      - expect_event: {type: payment.completed, match: {data: {id: "${kept}"}}}
      - name: an unknown state fails the step
        restore_state: nope
"""


def test_the_fixture_and_the_scenario_steps_save_and_restore(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "test_fixture.py": FIXTURE_TEST,
            "test_bare.py": EMPTY_STATE_TEST,
            "scenarios/state.yaml": SCENARIO,
        },
    )
    result = pytest_run(root)
    out = result.stdout
    assert "test_fixture.py::test_back_to_a_prepared_world PASSED" in out, out + result.stderr
    assert "test_bare.py::test_restoring_a_state_saved_before_the_subscription PASSED" in out, out
    # The scenario passes every step up to the last one, which names the missing state.
    assert "scenarios/state.yaml::back to a saved state FAILED" in out, out
    assert "ok    9. expect payment.completed" in out, out
    assert "FAIL  10. an unknown state fails the step" in out, out
    assert "the state nope was not restored: 404" in out and "snapshot_not_found" in out, out


def test_a_bad_state_name_is_a_collection_error(tmp_path: Path) -> None:
    root = project(
        tmp_path, {"scenarios/bad.yaml": "scenario: bad\nsteps:\n  - restore_state: ../up\n"}
    )
    result = pytest_run(root)
    assert result.returncode == 2, result.stdout
    expected = "scenarios/bad.yaml:3:20: `restore_state`: '../up' is not a saved state's name"
    assert expected in result.stdout

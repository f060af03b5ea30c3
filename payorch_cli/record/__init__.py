"""`payorch record` and the MCP server's `record_scenario`: the request log written as a scenario.

The public interface is what this module exports; the modules under it are how: build (records
to a scenario document), steps (one step per request, ids saved and reused), values (what a
recording keeps, masks and replaces), yaml (the document as scenario text) and reading (what a
recording reads from a server, for the command and the MCP server alike).
"""

from __future__ import annotations

from payorch_cli.record.build import Recording, left_out_because, record, recordable
from payorch_cli.record.reading import delivered_events, identity_of, log_detail, log_summaries
from payorch_cli.record.steps import Identity
from payorch_cli.record.values import TEST_DOCUMENTS
from payorch_cli.record.yaml import to_yaml

__all__ = [
    "TEST_DOCUMENTS",
    "Identity",
    "Recording",
    "delivered_events",
    "identity_of",
    "left_out_because",
    "log_detail",
    "log_summaries",
    "record",
    "recordable",
    "to_yaml",
]

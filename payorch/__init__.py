"""Helpers for integrators of the payment-orchestration API (and of its payorch simulator).

`payorch.webhooks.verify` checks a webhook delivery's signature; it needs only the standard
library, so it can be vendored into any service.
"""

from payorch.webhooks import SignatureVerificationError, verify

__all__ = ["SignatureVerificationError", "verify"]

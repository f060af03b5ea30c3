"""Links to the simulated provider's hosted page (`paymentFormUrl` of a hosted rail).

Approving on that page settles the payment, and a transaction id is no secret (the buyer sees it
on `/c/<id>` and in receipts, the merchant in webhooks). So a production payment's page has its
own unguessable link, as real providers' redirect URLs do: `/_sim/provider/<id>.<token>`, the
token drawn when the payment is made and stored on it. It comes from the app's generator: the
OS's CSPRNG on every `serve`, the seeded one in tests (`Settings.seed`), whose answers must be
reproducible. Sandbox keeps the plain `/_sim/provider/<id>`, which tests and scripts build from
the id. Pure: no aiohttp.
"""

from __future__ import annotations

import hmac
from random import Random
from typing import TYPE_CHECKING

from simulator.domain.ids import urlsafe_token

if TYPE_CHECKING:
    from simulator.domain.records import TransactionRecord
    from simulator.domain.transactions import TransactionRepository

PAGE = "/_sim/provider/"
TOKEN_BYTES = 24  # 192 bits, as checkout session tokens


def form_link(tx_id: str, environment: str, rng: Random) -> tuple[str, str | None]:
    """The page's path for a new hosted-rail payment, and the token to store (production)."""
    if environment != "production":
        return PAGE + tx_id, None
    token = urlsafe_token(rng, TOKEN_BYTES)
    return f"{PAGE}{tx_id}.{token}", token


def hosted_payment(transactions: TransactionRepository, ref: str) -> TransactionRecord | None:
    """The hosted-rail payment a page link names (`<id>.<token>`, or `<id>` for a payment stored
    without a token), or None: a wrong token and a bare id of a tokened payment open nothing."""
    tx_id, dot, token = ref.partition(".")
    tx = transactions.get(tx_id)
    if tx is None or tx.get("paymentFormPath") is None:
        return None
    stored = tx.get("providerToken")
    if stored is None:
        return tx if not dot else None
    # Constant time: the comparison must not tell how much of a guess was right.
    return tx if dot and hmac.compare_digest(token.encode(), stored.encode()) else None


def opens_from_transaction_page(tx: TransactionRecord) -> bool:
    """Whether `/c/<id>` (public by id) may lead to the provider's page: always in sandbox; in
    production only for a payment made to be paid through checkout (hostedCheckout, one-shot,
    or a selector session's pick), whose buyer link `/c/<id>` is by the spec."""
    return tx.get("providerToken") is None or tx.get("checkoutPath") is not None

"""The stored shapes of the simulator's records, as TypedDicts: a misspelt field is a mypy error.

Types only: a TypedDict is a plain dict at run time, so the records cost nothing more to build,
store or read, and they keep exactly the camelCase keys the store holds. Each class lists what its
writer puts in (the module named in its docstring); `NotRequired` keys are set only by a later
transition. Money is a Decimal written as text (`str(Decimal)`), instants are simulated epoch
seconds (float) unless noted. `environment` is the `Environment` literal where the writer has a
principal's, plain `str` where it comes from a (merchantId, environment) scope tuple.

The store returns whatever JSON it holds, typed `Any`; a repository declares the record its table
holds (`Table[TransactionRecord]`) and what comes out is typed from there on.
"""

from typing import Any, NotRequired, TypedDict

from simulator.domain.catalog import Environment


class TransactionRecord(TypedDict):
    """A pay-in (`TXN-...`): `payins.record.new_record`, moved on by `payins.service` and
    `payins.refunds`."""

    id: str
    merchantId: str
    shopId: str
    environment: Environment
    status: str  # states.TRANSACTION_STATUSES
    amount: str  # USD
    inputCurrency: str | None
    inputAmount: str | None
    amountLocal: str
    currencyLocal: str
    paymentMethodId: str
    paymentMethod: str  # the rail's slug
    paymentMethodName: str
    iconPath: str
    country: str  # ISO-3
    fees: dict[str, str]  # platform, provider, network, total: USD
    reserve: str  # USD
    settlementDelay: str  # "T+N"
    paymentFormPath: str | None  # hosted rails: the simulated provider's page
    providerToken: NotRequired[str]  # production hosted rails: the secret of that page's link
    # Production, when the cascade tried more than one provider: each (provider, outcome) in
    # order, outcome as `cascade.Attempt` words it. Only the trace shows it (`trace_view`).
    cascadeAttempts: NotRequired[list[tuple[str, str]]]
    paymentData: dict[str, str]  # what the buyer needs to pay (CLABE, barcode, QR code...)
    hostedCheckout: bool
    returnUrl: str | None
    checkoutPath: str | None
    merchantOrderId: str | None
    tags: list[str | None]  # tag1, tag2, tag3
    userName: str | None
    userEmail: str | None
    userPhone: str | None
    userIp: str | None
    providerId: str | None
    simulate: str | None  # the Sandbox-Simulate header it was created with
    dueAt: float
    expiresAt: float
    createdAt: float
    updatedAt: float
    refundedLocal: str
    refundedUsd: str
    chargebackClaimId: str | None
    completedAt: NotRequired[float]
    failedAt: NotRequired[float]
    expiredAt: NotRequired[float]
    refundedAt: NotRequired[float]
    availableAt: NotRequired[float]  # completed: when its funds settle
    uncoveredUsd: NotRequired[str]  # a provider refund larger than the balance could cover


class ClaimRecord(TypedDict):
    """A refund or chargeback claim (`CLM-...`): `refunds.RefundService`."""

    id: str
    kind: str  # "refund" | "chargeback"
    merchantId: str
    shopId: str
    environment: Environment
    transactionId: str
    amount: str  # local currency
    amountUsd: str
    heldUsd: str  # what the chargeback could freeze when it opened
    currency: str
    status: str  # "pending" | "resolved"
    resolution: str | None
    reason: str | None
    createdAt: float
    resolvedAt: float | None


class CheckoutSessionRecord(TypedDict):
    """A selector checkout session, keyed by its `cs_` token: `checkout.CheckoutService`."""

    id: str
    merchantId: str
    shopId: str
    environment: Environment
    status: str  # "awaiting_method" | "completed"
    amount: str
    currency: str
    country: str | None
    customer: dict[str, str | None]  # firstName, lastName, email, phone, documentId
    customerIp: str | None
    returnUrl: str | None
    merchantOrderId: str | None
    createdAt: float
    expiresAt: float
    completedTxId: str | None
    completedAt: NotRequired[float]


class PayoutRecipient(TypedDict):
    name: str | None
    account: str  # masked


class PayoutRecord(TypedDict):
    """A payout (`po_...`): `payouts.PayoutService`."""

    id: str
    merchantId: str
    environment: Environment
    shopId: str | None  # None: sent with a merchant-wide credential
    methodId: str
    methodName: str
    rail: str
    currency: str
    amount: str
    status: str  # payouts.PAYOUT_STATUSES
    debited: bool  # False for the synthetic sandbox rails
    provider: str | None
    providerRef: str | None
    recipient: PayoutRecipient
    failureReason: str | None
    createdAt: float
    updatedAt: float
    completedAt: float | None
    failedAt: float | None


class DepositAccountRecord(TypedDict):
    """A shop's end user's fixed CLABE (`eda_...`): `deposits.DepositService`."""

    id: str
    merchantId: str
    shopId: str
    environment: Environment
    endUserRef: str
    clabe: str
    bank: str | None
    currency: str
    country: str  # the deposit method's, ISO-2
    depositMethodId: str
    methodName: str
    name: str
    email: str | None
    phone: str | None
    documentType: str | None
    documentId: str | None
    customerCountry: str | None
    metadata: dict[str, str]
    status: str  # "active" | "disabled"
    createdAt: float
    updatedAt: float


class DepositRecord(TypedDict):
    """A transfer received into a deposit account (`dep_...`): `deposits.DepositService`."""

    id: str
    accountId: str
    merchantId: str
    shopId: str
    environment: Environment
    transactionId: str  # the pay-in it was credited as
    status: str  # "credited"
    amount: str
    currency: str
    amountUsd: str
    clabe: str
    reference: str
    payerName: str | None
    payerEmail: str | None
    beneficiaryName: str
    beneficiaryEmail: str | None
    createdAt: float


class WebhookSubscriptionRecord(TypedDict):
    """A webhook subscription (`wh_...`): `webhooks.WebhookService`."""

    id: str
    merchantId: str
    environment: Environment
    url: str | None  # None: a managed inbox
    managed: bool
    events: list[str]  # event types, or ["*"]
    active: bool
    description: str | None
    secret: str
    previousSecret: str | None
    previousSecretExpiresAt: float | None
    deactivatedReason: str | None
    createdAt: float
    updatedAt: float


class DeliveryAttempt(TypedDict):
    """One attempt of a delivery. A replay into a managed inbox only records
    `trigger`, `at` and `stored`."""

    trigger: str  # "initial" | "retry" | "replay"
    at: float
    sentAt: NotRequired[float]  # wall-clock time, as signed
    timestamp: NotRequired[int]  # the signature's t
    httpStatus: NotRequired[int | None]
    durationMs: NotRequired[float]
    error: NotRequired[str | None]
    responseBody: NotRequired[str | None]
    signatureHeader: NotRequired[str | None]
    stored: NotRequired[bool]


class DeliveryRecord(TypedDict):
    """One event's delivery to one subscription (`dlv_...`): `deliveries.DeliveryService`."""

    id: str
    webhookId: str
    merchantId: str
    environment: str
    eventId: str
    eventType: str
    managed: bool
    status: str  # deliveries.DELIVERY_STATUSES
    attempts: list[DeliveryAttempt]
    nextAttemptAt: float | None
    retryJobId: str | None
    cancelReason: str | None
    createdAt: float
    updatedAt: float
    deliveredAt: float | None


class EventEnvelope(TypedDict):
    """An event as webhooks and streams show it: `events.bus.EventBus.emit`."""

    id: str
    type: str
    apiVersion: str
    environment: str
    createdAt: str  # ISO-8601
    data: dict[str, Any]  # the JSON view of the record the event is about


class EventRecord(EventEnvelope):
    """An event as stored and handed to the bus listeners: the envelope and its merchant."""

    merchantId: str


class MovementRecord(TypedDict):
    """A pay-in ledger movement (`mv_...`): `ledger.Ledger.record`."""

    id: str
    merchantId: str
    environment: str
    type: str
    amount: str  # signed USD
    bucket: str  # ledger.AVAILABLE, RESERVE or FROZEN
    effectiveAt: float
    createdAt: float
    transactionId: str | None
    claimId: str | None


class PayoutMovementRecord(TypedDict):
    """A payout ledger movement (`pmv_...`): `payouts.ledger.PayoutLedger.record`."""

    id: str
    merchantId: str
    environment: str
    currency: str
    type: str
    amount: str  # signed, in `currency`
    bucket: str  # payouts.ledger.AVAILABLE or RESERVED
    effectiveAt: float
    createdAt: float
    ref: str | None  # the payout, transfer or swap that caused it


class WithdrawalRecord(TypedDict):
    """A control-plane withdrawal (`WDR-...`): `withdrawals.WithdrawalService`."""

    id: str
    merchantId: str
    environment: str
    status: str  # "processing" | "completed" | "failed"
    amount: str  # USD
    fee: str  # USD
    outcome: str  # what the bank will answer
    failureReason: str | None
    createdAt: float
    completedAt: float | None
    failedAt: float | None


class SettlementDayRecord(TypedDict):
    """A UTC day with payments settling on it, until it closes: `settlements.SettlementService`.
    Its payments are `SettlementEntryRecord`s."""

    id: str  # merchantId:environment:day
    merchantId: str
    environment: str
    day: int  # days since the epoch
    # Written by earlier versions only (the day's payments, rewritten whole at each one): read
    # at the close, moved into entries when a payment is filed under the day.
    transactionIds: NotRequired[list[str]]


class SettlementEntryRecord(TypedDict):
    """One payment filed under the day its funds become available, keyed by its transaction id,
    until the day closes: `settlements.SettlementService`."""

    transactionId: str
    dayId: str  # SettlementDayRecord.id
    place: int  # orders the day's payments as they were filed


class SettlementRecord(TypedDict):
    """A closed settlement batch (`STL-...`): `settlements.SettlementService`."""

    id: str
    merchantId: str
    environment: str
    status: str  # "closed"
    periodStart: float
    periodEnd: float
    transactionIds: list[str]
    grossAmount: str
    fees: str
    reserve: str
    netAmount: str
    payoutAsset: str
    closedAt: float
    pdfReadyAt: float | None


class RefreshTokenRecord(TypedDict):
    """A refresh token, keyed by its SHA-256 (the token itself is never stored): `auth`."""

    id: str
    kid: str  # the key id of the credential it was issued for
    expiresAt: float
    revoked: bool
    revokedAt: NotRequired[float]
    next: NotRequired[str]  # set when rotated: the id of the token that replaced it

"""Pay-ins: the payment service, its request body, its catalogue rules, the stored record, and
refunds and chargebacks (claims on a pay-in)."""

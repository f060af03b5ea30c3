"""Payouts: the payout service, its request bodies, the recipient rules, the payout account, its
ledger and the provider a payout is sent to."""

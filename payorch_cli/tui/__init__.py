"""`payorch tui`: a live console of transactions, balances and deliveries.

Imported only by the `tui` command (textual costs about 0.5 s to import): `payorch --help` and
the other commands never load this package.
"""

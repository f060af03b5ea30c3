"""Several payorch processes behind one proxy (payorch serve --workers, design.md 1.7)."""

# The environment variable that hands every worker the namespaces' key-derivation secret.
SECRET_ENV = "PAYORCH_NAMESPACE_SECRET"

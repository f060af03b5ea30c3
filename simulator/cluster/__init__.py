"""Several payorch processes behind one proxy (payorch serve --workers, design.md 1.7)."""

# The environment variable that hands every worker the namespaces' key-derivation secret.
SECRET_ENV = "PAYORCH_NAMESPACE_SECRET"
# ... and its place, `INDEX/COUNT` (0-based): a worker refuses the names placed on another.
WORKER_ENV = "PAYORCH_WORKER"

"""Several payorch processes behind one proxy (payorch serve --workers, design.md 1.7)."""

# The environment variable that hands every worker the namespaces' key-derivation secret.
SECRET_ENV = "PAYORCH_NAMESPACE_SECRET"
# ... and its place, `INDEX/COUNT` (0-based): a worker refuses the names placed on another.
WORKER_ENV = "PAYORCH_WORKER"
# ... and, on its first start, the descriptor of the listening socket the supervisor bound for
# it: the port is held from the moment it is chosen, so no other process can take it meanwhile.
SOCKET_ENV = "PAYORCH_WORKER_SOCKET"

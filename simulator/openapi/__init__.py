"""The OpenAPI 3.1 document (`openapi.yaml`): served, printed and used to validate requests."""

# The project's checks. `make check` is what CI runs (.ci/run, the README's quick start), in order,
# stopping at the first failure; the other targets are its parts, and `fmt` fixes what it can.
# pytest -rs: the summary names each skipped test and why (the browser tests without chromium).
.PHONY: check fmt lint types test

check:
	ruff format --check .
	ruff check .
	mypy
	pytest -n 2 -rs

fmt:
	ruff format .
	ruff check --fix .

lint:
	ruff format --check .
	ruff check .

types:
	mypy

test:
	pytest -n 2 -rs

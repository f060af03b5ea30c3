"""`payorch deploy-config`, docs/deploy.md's configurations (the generator's output,
verbatim), and `--workers` refusing what it cannot run."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from payorch_cli.main import app
from tests.cluster.cluster import needs_nginx, nginx_binary

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
GENERATED = re.compile(r"<!-- generated: payorch (.+?) -->\n```nginx\n(.*?)```", re.S)


def payorch(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_the_docs_show_what_the_generator_prints() -> None:
    blocks = GENERATED.findall(DEPLOY.read_text())
    assert len(blocks) == 2  # several hosts, Kubernetes
    for command, shown in blocks:
        status, printed, errors = payorch(*shlex.split(command))
        assert status == 0, errors
        assert shown == printed, f"docs/deploy.md is stale: regenerate the block of {command}"


@needs_nginx
def test_the_printed_configuration_is_valid_nginx(tmp_path: Path) -> None:
    status, printed, _ = payorch(
        "deploy-config",
        "--worker",
        "127.0.0.1:8081",
        "--worker",
        "[::1]:8082",
        "--listen",
        "127.0.0.1:18080",
    )
    assert status == 0
    assert "server 127.0.0.1:8081 max_fails=0;" in printed
    assert "listen 127.0.0.1:18080;" in printed
    config = tmp_path / "nginx.conf"
    # Its own pid and temp paths, so that the check needs no root and touches nothing else.
    local = "".join(
        f"    {kind}_temp_path {tmp_path / kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    config.write_text(printed.replace("http {\n", "http {\n" + local, 1))
    nginx = nginx_binary()
    assert nginx is not None
    check = subprocess.run(
        [
            nginx,
            "-t",
            "-q",
            "-p",
            str(tmp_path),
            "-c",
            str(config),
            "-e",
            "stderr",
            "-g",
            f"pid {tmp_path / 'nginx.pid'};",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert check.returncode == 0, check.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "--worker HOST:PORT"),
        (["--worker", "nohost"], "--worker takes HOST:PORT; got 'nohost'"),
        (["--worker", "a:1", "--listen", "x:y"], "--listen takes PORT or ADDRESS:PORT"),
    ],
)
def test_deploy_config_refuses_bad_addresses(args: list[str], says: str) -> None:
    status, printed, errors = payorch("deploy-config", *args)
    assert status == 2 and printed == ""
    assert errors.count("\n") == 1 and says in errors


def test_serve_print_proxy_config_still_prints_it_and_says_where_it_went() -> None:
    args = ["--listen", "8080", "--worker", "10.0.0.11:8081", "--worker", "10.0.0.12:8081"]
    status, printed, errors = payorch("serve", "--print-proxy-config", *args)
    assert (status, printed) == (0, payorch("deploy-config", *args)[1])
    assert errors == "payorch serve: --print-proxy-config is now `payorch deploy-config`\n"


def test_without_nginx_a_one_line_error_says_how_to_install_it(tmp_path: Path) -> None:
    status, _, errors = payorch(
        "serve",
        "--workers",
        "2",
        "--data-dir",
        str(tmp_path),
        env={"PAYORCH_NGINX": str(tmp_path / "no-nginx")},
    )
    assert status == 2
    assert errors.count("\n") == 1 and "apt-get install nginx-light" in errors
    assert not (tmp_path / "workers").exists()  # nothing started


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_a_bad_worker_count_is_a_usage_error(value: str) -> None:
    status, _, errors = payorch("serve", "--workers", value)
    assert status == 2 and "--workers takes a number of workers" in errors


@needs_nginx
def test_a_data_dir_keeps_its_number_of_workers(tmp_path: Path) -> None:
    from simulator.cluster.supervisor import check_layout

    check_layout(tmp_path, 3)
    status, _, errors = payorch("serve", "--workers", "2", "--data-dir", str(tmp_path))
    assert status == 2 and errors.count("\n") == 1
    assert "is served by 3 workers" in errors and "--workers 3" in errors

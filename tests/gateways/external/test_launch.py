"""Which program a gateway runs: absolute, next to duragent.yaml, or on PATH; else a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.config.workspace import ExternalGatewayConfig
from duragent.errors import ConfigError
from duragent.gateways.external.launch import Launch, resolve_command


def program(path: Path, *, executable: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755 if executable else 0o644)
    return path


def resolve(command: str, config_dir: Path, path: str = "") -> str:
    return resolve_command(command, config_dir, 2, "slack", {"PATH": path})


def test_an_absolute_command_is_used_as_written(tmp_path: Path) -> None:
    exe = program(tmp_path / "bin" / "gw")
    assert resolve(str(exe), tmp_path / "elsewhere") == str(exe)


def test_a_relative_path_starts_from_the_config_directory(tmp_path: Path) -> None:
    exe = program(tmp_path / "gateways" / "slack")
    assert resolve("./gateways/slack", tmp_path) == str(tmp_path / "./gateways/slack")
    assert Path(resolve("gateways/slack", tmp_path)).samefile(exe)


def test_a_bare_name_is_looked_for_next_to_the_config_then_on_path(tmp_path: Path) -> None:
    on_path = program(tmp_path / "bin" / "duragent-slack")
    assert resolve("duragent-slack", tmp_path / "cfg", str(tmp_path / "bin")) == str(on_path)
    local = program(tmp_path / "cfg" / "duragent-slack")
    assert resolve("duragent-slack", tmp_path / "cfg", str(tmp_path / "bin")) == str(local)


def test_a_missing_program_is_an_error_naming_the_field_and_the_gateway(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve("duragent-slack", tmp_path, str(tmp_path / "bin"))
    error = caught.value
    assert error.field == "gateways.external[2].command"
    assert "gateway 'slack'" in str(error)
    assert "on PATH" in str(error)
    assert error.fix


def test_a_program_that_is_not_executable_is_an_error_saying_how_to_fix_it(tmp_path: Path) -> None:
    program(tmp_path / "gw.py", executable=False)
    with pytest.raises(ConfigError, match="is not executable") as caught:
        resolve("./gw.py", tmp_path)
    assert caught.value.fix is not None
    assert "chmod +x" in caught.value.fix


def test_the_environment_is_duragents_plus_the_gateways_own(tmp_path: Path) -> None:
    exe = program(tmp_path / "gw")
    config = ExternalGatewayConfig(
        name="slack", command="./gw", args=["-v"], env={"TOKEN": "t", "HOME": "/override"}
    )
    launch = Launch.of(config, 0, tmp_path, environ={"HOME": "/home/me", "PATH": "/bin"})
    assert launch.argv == (str(tmp_path / "./gw"), "-v")
    assert dict(launch.env) == {"HOME": "/override", "PATH": "/bin", "TOKEN": "t"}
    assert exe.exists()

"""Config loading: TOML and YAML, errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from backends.base import create_backend, kinds
from backends.config import ConfigError, backend_specs, load_config

REPO = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_example_config_is_valid() -> None:
    path = REPO / "examples" / "backends.toml"
    specs = backend_specs(load_config(path), source=path)
    assert [(s["name"], s["kind"]) for s in specs] == [("hrm", "hrm"), ("hf", "hf")]
    for spec in specs:
        assert create_backend(spec).name == spec["name"]


def test_toml_and_yaml_give_the_same_specs(tmp_path: Path) -> None:
    toml = _write(tmp_path, "c.toml", """
[[backends]]
name = "t"
kind = "tgi"
url = "http://localhost:8080/"
[backends.timeouts]
total = 9
[router]
policy = "split"
""")
    yaml = _write(tmp_path, "c.yaml", """
backends:
  - {name: t, kind: tgi, url: "http://localhost:8080/", timeouts: {total: 9}}
router: {policy: split}
""")
    a, b = load_config(toml), load_config(yaml)
    assert a == b and a["router"] == {"policy": "split"}
    assert backend_specs(a) == backend_specs(b)
    backend = create_backend(backend_specs(a)[0])
    assert backend.settings.url == "http://localhost:8080"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[[backends]]\nname = "a"\nkind = "nope"\n', "backends[0].kind: unknown kind 'nope'"),
        ('[[backends]]\nkind = "tgi"\nurl = "http://x"\n', "backends[0].name: required"),
        ('[[backends]]\nname = "a"\nkind = "tgi"\nurl = "http://x"\n' * 2,
         "backends[1].name: duplicate backend name 'a'"),
        ('[[backends]]\nname = "a"\nkind = "tgi"\nurl = "ftp://x"\n', "backends[0].url: Value error, url must start"),
        ('[[backends]]\nname = "a"\nkind = "tgi"\n', "backends[0].url: Field required"),
        ('[[backends]]\nname = "a"\nkind = "tgi"\nurl = "http://x"\nmax_concurrency = 0\n',
         "backends[0].max_concurrency: Input should be greater than or equal to 1"),
        ('[[backends]]\nname = "a"\nkind = "hf"\nmodel = "m"\ntypo = 1\n', "backends[0].typo: Extra inputs"),
        ('[[backends]]\nname = "a"\nkind = "tgi"\nurl = "http://x"\n[backends.timeouts]\ntotal = -1\n',
         "backends[0].timeouts.total"),
        ("[router]\n", "backends: expected a non-empty list"),
    ],
)
def test_errors_name_file_and_field(tmp_path: Path, text: str, needle: str) -> None:
    path = _write(tmp_path, "bad.toml", text)
    with pytest.raises(ConfigError) as info:
        backend_specs(load_config(path), source=path)
    assert str(path) in str(info.value) and needle in str(info.value), str(info.value)


def test_unparseable_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="bad.toml: invalid TOML"):
        load_config(_write(tmp_path, "bad.toml", "[[backends]\n"))
    with pytest.raises(ConfigError, match="bad.yaml: invalid YAML"):
        load_config(_write(tmp_path, "bad.yaml", "backends: [\n"))
    with pytest.raises(ConfigError, match="list.yaml: top level must be"):
        load_config(_write(tmp_path, "list.yaml", "- 1\n"))
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="unknown config format '.ini'"):
        load_config(_write(tmp_path, "c.ini", "x"))


BUILTIN_KINDS = {"abtest", "hf", "hrm", "tgi", "vllm"}


def test_unknown_kind_lists_valid_kinds() -> None:
    # Other test modules register fake kinds in the same process, so check inclusion.
    with pytest.raises(ValueError, match="unknown backend kind 'triton'; valid kinds: ") as err:
        create_backend({"name": "a", "kind": "triton"})
    listed = set(str(err.value).split("valid kinds: ")[1].split(", "))
    assert BUILTIN_KINDS <= listed
    assert BUILTIN_KINDS <= set(kinds())

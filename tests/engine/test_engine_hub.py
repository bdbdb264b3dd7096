"""engine.hub (torch.hub) against a local HTTP server: the hub directory's rules, download_url_to_file,
load_state_dict_from_url on torch-saved checkpoints, and list/help/load for local and GitHub repositories (the
GitHub addresses pointed at the local server; nothing reaches the internet)."""
import hashlib
import io
import json
import os
import zipfile

import numpy as np
import pytest
import torch

import engine
import engine.hub
from engine.hub import home, repos
from engine.hub.zip_extract import safe_extract
from http_server import FileServer

HUBCONF = '''
"""A tiny hub repository."""
from helper import SCALE

dependencies = ["numpy"]


def tiny(width=2, *, scale=SCALE):
    """Build a tiny model: a width-long vector of scale."""
    import engine
    return engine.full((width,), float(scale))


def _private():
    return None


NOT_CALLABLE = 3
'''


@pytest.fixture
def server():
    with FileServer() as s:
        yield s


@pytest.fixture(autouse=True)
def hub_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(home, "_hub_dir", None)
    monkeypatch.setenv("ENGINE_HOME", str(tmp_path / "home"))
    return tmp_path / "home" / "hub"


def _checkpoint(fmt="zip"):
    g = torch.Generator().manual_seed(0)
    state = {"conv.weight": torch.randn(5, 3, 3, 3, generator=g), "fc.bias": torch.randn(7, generator=g),
             "bn.num_batches_tracked": torch.tensor(3)}
    buffer = io.BytesIO()
    torch.save(state, buffer, _use_new_zipfile_serialization=(fmt == "zip"))
    return buffer.getvalue(), state


def _assert_state(loaded, state):
    assert sorted(loaded) == sorted(state)
    for key, value in state.items():
        assert isinstance(loaded[key], engine.Tensor) and np.array_equal(loaded[key].numpy(), value.numpy())


# ---- the hub directory ---------------------------------------------------------------------------------------
def test_get_dir_follows_engine_home_then_xdg_then_set_dir(tmp_path, monkeypatch):
    assert engine.hub.get_dir() == str(tmp_path / "home" / "hub")
    monkeypatch.delenv("ENGINE_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert engine.hub.get_dir() == str(tmp_path / "xdg" / "engine" / "hub")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert engine.hub.get_dir() == os.path.expanduser(os.path.join("~", ".cache", "engine", "hub"))
    engine.hub.set_dir("~/somewhere")
    assert engine.hub.get_dir() == os.path.expanduser("~/somewhere")
    engine.hub.set_dir(tmp_path / "chosen")
    assert engine.hub.get_dir() == str(tmp_path / "chosen")


# ---- download_url_to_file ------------------------------------------------------------------------------------
def test_download_url_to_file_checks_the_hash_prefix(server, tmp_path):
    data = os.urandom(5000)
    server.files["blob.bin"] = data
    dst = tmp_path / "blob.bin"
    engine.hub.download_url_to_file(server.url("blob.bin"), str(dst), hashlib.sha256(data).hexdigest()[:10],
                                    progress=False)
    assert dst.read_bytes() == data
    with pytest.raises(RuntimeError, match='invalid hash value for .*blob.bin: expected sha256 "00000000"'):
        engine.hub.download_url_to_file(server.url("blob.bin"), str(tmp_path / "other.bin"), "00000000",
                                        progress=False)
    assert sorted(os.listdir(tmp_path)) == [".locks", "blob.bin"]
    server.fault = "404"
    with pytest.raises(engine.hub.DownloadError, match="HTTP Error 404"):
        engine.hub.download_url_to_file(server.url("blob.bin"), str(tmp_path / "x.bin"), progress=False)


# ---- load_state_dict_from_url --------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_load_state_dict_from_url_downloads_once(server, hub_dir, fmt, capsys):
    data, state = _checkpoint(fmt)
    name = f"tiny-{hashlib.sha256(data).hexdigest()[:8]}.pth"
    server.files[name] = data
    loaded = engine.hub.load_state_dict_from_url(server.url(name), progress=False, check_hash=True)
    _assert_state(loaded, state)
    cached = hub_dir / "checkpoints" / name
    assert f'Downloading: "{server.url(name)}" to {cached}\n' in capsys.readouterr().out
    assert cached.read_bytes() == data
    _assert_state(engine.hub.load_state_dict_from_url(server.url(name), progress=False, map_location="cpu"), state)
    assert len(server.requests) == 1


def test_load_state_dict_from_url_options(server, tmp_path):
    data, state = _checkpoint()
    server.files["plain.pth"] = data
    model_dir = tmp_path / "models"
    loaded = engine.hub.load_state_dict_from_url(server.url("plain.pth"), model_dir=str(model_dir),
                                                 file_name="renamed-00000000.pth", progress=False)
    _assert_state(loaded, state)  # check_hash is off by default, as in torch: the wrong prefix is not checked
    assert os.path.exists(model_dir / "renamed-00000000.pth")
    with pytest.raises(RuntimeError, match='expected sha256 "00000000"'):
        engine.hub.load_state_dict_from_url(server.url("plain.pth"), model_dir=str(tmp_path / "checked"),
                                            file_name="renamed-00000000.pth", check_hash=True, progress=False)
    assert not os.path.exists(tmp_path / "checked" / "renamed-00000000.pth")
    with pytest.raises(ValueError, match="weights_only=False is not supported"):
        engine.hub.load_state_dict_from_url(server.url("plain.pth"), model_dir=str(model_dir),
                                            file_name="renamed-00000000.pth", weights_only=False)


def test_load_state_dict_from_a_hand_zipped_legacy_checkpoint(server, hub_dir):
    data, state = _checkpoint("legacy")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("inner.pth", data)
    server.files["zipped.zip"] = buffer.getvalue()
    with pytest.warns(FutureWarning, match="Falling back to the old format < 1.6"):
        loaded = engine.hub.load_state_dict_from_url(server.url("zipped.zip"), progress=False)
    _assert_state(loaded, state)
    assert (hub_dir / "checkpoints" / "inner.pth").read_bytes() == data


def test_zip_extraction_refuses_escaping_entries(tmp_path):
    for name, message in (("../evil.txt", "escape the target directory"), ("/abs.txt", "absolute path")):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr(name, b"x")
        with zipfile.ZipFile(buffer) as archive, pytest.raises(ValueError, match=message):
            safe_extract(archive, tmp_path / "out")
    assert not os.path.exists(tmp_path / "evil.txt")


# ---- local repositories --------------------------------------------------------------------------------------
def _write_repo(folder, hubconf=HUBCONF):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hubconf.py").write_text(hubconf)
    (folder / "helper.py").write_text("SCALE = 3\n")
    return str(folder)


def test_local_repository(tmp_path):
    repo = _write_repo(tmp_path / "repo")
    assert engine.hub.list(repo, source="local") == ["tiny"]
    assert engine.hub.help(repo, "tiny", source="local") == "Build a tiny model: a width-long vector of scale."
    model = engine.hub.load(repo, "tiny", 4, source="local", scale=0.5)
    assert model.tolist() == [0.5] * 4
    assert engine.hub.load(repo, "tiny", source="LOCAL").tolist() == [3.0, 3.0]
    assert repo not in __import__("sys").path


@pytest.mark.parametrize("model, error, message", [
    ("missing", RuntimeError, "Cannot find callable missing in hubconf"),
    ("NOT_CALLABLE", RuntimeError, "Cannot find callable NOT_CALLABLE in hubconf"),
    (3, ValueError, "Invalid input: model should be a string of function name"),
])
def test_local_repository_errors(tmp_path, model, error, message):
    repo = _write_repo(tmp_path / "repo")
    with pytest.raises(error, match=message):
        engine.hub.load(repo, model, source="local")


def test_missing_dependencies_and_unknown_source(tmp_path):
    repo = _write_repo(tmp_path / "repo", HUBCONF.replace('["numpy"]', '["numpy", "no_such_pkg_a", "no_such_pkg_b"]'))
    with pytest.raises(RuntimeError, match="^Missing dependencies: no_such_pkg_a, no_such_pkg_b$"):
        engine.hub.load(repo, "tiny", source="local")
    with pytest.raises(ValueError, match='Unknown source: "gitlab". Allowed values: "github" \\| "local".'):
        engine.hub.load(repo, "tiny", source="gitlab")


# ---- GitHub repositories, served locally ---------------------------------------------------------------------
def _repo_zip(top="owner-repo-abc1234"):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"{top}/", b"")
        archive.writestr(f"{top}/hubconf.py", HUBCONF)
        archive.writestr(f"{top}/helper.py", "SCALE = 3\n")
    return buffer.getvalue()


def _publish(server, owner="owner", name="repo", branches=("main",), default="main"):
    server.files[f"{owner}/{name}/zipball/{default}"] = _repo_zip()
    if default == "main":
        server.files[f"{owner}/{name}/tree/main/"] = b"<html></html>"
    listing = [{"name": b, "commit": {"sha": "abc1234def"}} for b in branches]
    for kind, entries in (("branches", listing), ("tags", [])):
        server.files[f"repos/{owner}/{name}/{kind}?per_page=100&page=1"] = json.dumps(entries).encode()
        server.files[f"repos/{owner}/{name}/{kind}?per_page=100&page=2"] = b"[]"


@pytest.fixture
def github(server, monkeypatch):
    monkeypatch.setattr(repos, "GITHUB_URL", server.base_url.rstrip("/"))
    monkeypatch.setattr(repos, "GITHUB_API_URL", server.base_url.rstrip("/"))
    return server


def _zip_gets(server):
    return [path for path, _ in server.requests if "zipball" in path]


def test_github_repository_download_cache_and_reload(github, hub_dir, capsys):
    _publish(github)
    model = engine.hub.load("owner/repo", "tiny", 3, trust_repo=True)
    assert model.tolist() == [3.0] * 3
    assert (hub_dir / "owner_repo_main" / "hubconf.py").exists()
    assert (hub_dir / "trusted_list").read_text() == "owner_repo\n"
    assert sorted(os.listdir(hub_dir)) == [".locks", "owner_repo_main", "trusted_list"]  # no zip, no extracted folder
    assert 'Downloading: "' in capsys.readouterr().out
    assert engine.hub.list("owner/repo:main", trust_repo="check") == ["tiny"]  # trusted now: no prompt
    assert f"Using cache found in {hub_dir / 'owner_repo_main'}" in capsys.readouterr().err
    assert engine.hub.help("owner/repo", "tiny") == "Build a tiny model: a width-long vector of scale."
    assert "Using cache found in" in capsys.readouterr().err  # help is always verbose, as torch's
    assert len(_zip_gets(github)) == 1
    engine.hub.list("owner/repo", force_reload=True, skip_validation=True, verbose=False)
    assert len(_zip_gets(github)) == 2
    assert "Using cache" not in capsys.readouterr().err


def test_default_branch_master_and_validation(github, hub_dir):
    _publish(github, default="master", branches=("master",))
    assert engine.hub.list("owner/repo", trust_repo=True) == ["tiny"]
    assert os.path.isdir(hub_dir / "owner_repo_master")
    with pytest.raises(ValueError, match="Cannot find dev in https://github.com/owner/repo. If it's a commit from a "
                                         "forked repo, please call hub.load\\(\\) with forked repo directly."):
        engine.hub.list("owner/repo:dev", trust_repo=True)
    with pytest.raises(engine.hub.DownloadError, match="HTTP Error 404"):
        engine.hub.list("owner/repo:dev", trust_repo=True, skip_validation=True)


@pytest.mark.parametrize("answer, outcome", [("y", None), ("yes", None), ("", "Untrusted repository."),
                                             ("n", "Untrusted repository."), ("maybe", "Unrecognized response maybe.")])
def test_trust_prompt(github, hub_dir, monkeypatch, answer, outcome):
    _publish(github)
    prompts = []
    monkeypatch.setattr("builtins.input", lambda text: prompts.append(text) or answer)
    if outcome is None:
        assert engine.hub.list("owner/repo") == ["tiny"]
        assert (hub_dir / "trusted_list").read_text() == "owner_repo\n"
    else:
        with pytest.raises(Exception, match=outcome):
            engine.hub.list("owner/repo")
        assert not _zip_gets(github)
    assert prompts == ["The repository owner_repo does not belong to the list of trusted repositories and as such "
                       "cannot be downloaded. Do you trust this repository and wish to add it to the trusted list of "
                       "repositories (y/N)?"]


def test_trust_repo_false_always_asks_and_torch_owners_are_trusted(github, hub_dir, monkeypatch, capsys):
    _publish(github, owner="pytorch")
    monkeypatch.setattr("builtins.input", lambda text: pytest.fail("asked"))
    engine.hub.list("pytorch/repo")
    assert (hub_dir / "trusted_list").read_text() == ""
    monkeypatch.setattr("builtins.input", lambda text: "y")
    engine.hub.list("pytorch/repo", trust_repo=False)
    assert "The repository is already trusted." in capsys.readouterr().out


def test_offline_without_a_cached_repository(monkeypatch, hub_dir):
    with FileServer() as closed:
        url = closed.base_url.rstrip("/")
    monkeypatch.setattr(repos, "GITHUB_URL", url)
    with pytest.raises(RuntimeError, match="It looks like there is no internet connection and the repo could not be "
                                           "found in the cache"):
        engine.hub.list("owner/repo", trust_repo=True)
    (hub_dir / "owner_repo_master").mkdir(parents=True)
    (hub_dir / "owner_repo_master" / "hubconf.py").write_text("def entry():\n    return 1\n")
    assert engine.hub.load("owner/repo", "entry", trust_repo=True) == 1


def test_an_ambiguous_ref_is_taken_as_the_branch(github, hub_dir, monkeypatch):
    _publish(github, branches=("v1",))
    github.files["owner/repo/zipball/refs/heads/v1"] = _repo_zip()
    real = repos.download_url_to_file

    def answer_300_for_the_bare_ref(url, dst, **kwargs):  # GitHub's answer for a ref both a branch and a tag
        if url.endswith("/zipball/v1"):
            raise engine.hub.DownloadError(f"HTTP Error 300: Multiple Choices for url {url}", "HTTP Error 300", 300)
        return real(url, dst, **kwargs)

    monkeypatch.setattr(repos, "download_url_to_file", answer_300_for_the_bare_ref)
    with pytest.warns(UserWarning, match="The ref v1 is ambiguous. Perhaps it is both a tag and a branch in the repo"):
        assert engine.hub.list("owner/repo:v1", trust_repo=True) == ["tiny"]
    assert os.path.isdir(hub_dir / "owner_repo_v1")

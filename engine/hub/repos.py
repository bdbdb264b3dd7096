"""``torch.hub.list`` / ``help`` / ``load``: entrypoints of a repository's ``hubconf.py``.

A repository is a local directory (``source="local"``) or ``"owner/repo[:ref]"`` on GitHub, downloaded as a zip
archive into ``<hub dir>/<owner>_<repo>_<ref>`` and reused from there (``force_reload`` downloads it again). Its
``hubconf.py`` may list the modules it needs in ``dependencies``; every public callable in it is an entrypoint,
whose docstring is its help. As in torch, a repository not yet trusted is confirmed at a prompt
(``trust_repo="check"``), always (False) or never (True or None), and recorded in ``<hub dir>/trusted_list``.

The GitHub addresses are the module constants ``GITHUB_URL`` and ``GITHUB_API_URL`` (tests point them at a
local server). Without a ref the default branch is ``main`` when ``<GITHUB_URL>/<owner>/<repo>/tree/main/``
exists, else ``master``; offline, whichever of the two is cached.
"""
import contextlib
import importlib.util
import json
import os
import shutil
import sys
import warnings
import zipfile
from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

from .download import DownloadError, download_url_to_file, remove
from .home import get_dir
from .zip_extract import safe_extract

__all__ = ["GITHUB_URL", "GITHUB_API_URL", "list", "help", "load"]

GITHUB_URL = "https://github.com"
GITHUB_API_URL = "https://api.github.com"
ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")  # torch's list
MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"


@contextlib.contextmanager
def _on_sys_path(path):
    """``path`` first on ``sys.path`` for the block, so hubconf.py can import the repository's own modules."""
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_hubconf(repo_dir):
    """The repository's hubconf.py, run as a module that is not kept in ``sys.modules``."""
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    spec = importlib.util.spec_from_file_location(MODULE_HUBCONF, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _parse_repo_info(github):
    """``(owner, name, ref)`` from ``"owner/repo[:ref]"``, the ref found as the module's docstring says."""
    repo_info, _, ref = github.partition(":")
    owner, name = repo_info.split("/")
    if ref:
        return owner, name, ref
    try:
        with urlopen(f"{GITHUB_URL}/{owner}/{name}/tree/main/"):
            return owner, name, "main"
    except HTTPError as e:
        if e.code == 404:
            return owner, name, "master"
        raise
    except URLError as e:
        for ref in ("main", "master"):
            if os.path.exists(os.path.join(get_dir(), f"{owner}_{name}_{ref}")):
                return owner, name, ref
        raise RuntimeError("It looks like there is no internet connection and the repo could not be found in the "
                           f"cache ({get_dir()})") from e


def _read_json(url, headers):
    with urlopen(Request(url, headers=headers)) as response:
        return json.loads(response.read().decode(response.headers.get_content_charset("utf-8")))


def _validate_not_a_forked_repo(owner, name, ref):
    """Raise unless ``ref`` is a branch, a tag or the prefix of one's commit in ``owner/name`` itself (a commit
    of a fork is reachable through the parent's archive link, and would run code the owner never published)."""
    headers = {"Accept": "application/vnd.github.v3+json"}
    token = os.environ.get(ENV_GITHUB_TOKEN)
    if token is not None:
        headers["Authorization"] = f"token {token}"
    for kind in ("branches", "tags"):
        page = 0
        while True:
            page += 1
            url = f"{GITHUB_API_URL}/repos/{owner}/{name}/{kind}?per_page=100&page={page}"
            try:
                entries = _read_json(url, headers)
            except HTTPError:  # a token without access: try without it
                headers.pop("Authorization", None)
                entries = _read_json(url, headers)
            if not entries:
                break
            if any(entry["name"] == ref or entry["commit"]["sha"].startswith(ref) for entry in entries):
                return
    raise ValueError(f"Cannot find {ref} in https://github.com/{owner}/{name}. If it's a commit from a forked "
                     "repo, please call hub.load() with forked repo directly.")


def _check_repo_is_trusted(owner, name, owner_name_ref, trust_repo):
    """Ask at a prompt when torch would, and record the repository in ``trusted_list``."""
    hub_dir = get_dir()
    trusted_list = os.path.join(hub_dir, "trusted_list")
    with open(trusted_list, "a+") as f:
        f.seek(0)
        trusted = {line.strip() for line in f}
    owner_name = f"{owner}_{name}"
    cached_before = owner_name_ref in next(os.walk(hub_dir))[1]  # a repository downloaded by an older version
    is_trusted = owner_name in trusted or cached_before or owner in TRUSTED_REPO_OWNERS
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        response = input(f"The repository {owner_name} does not belong to the list of trusted repositories and as "
                         "such cannot be downloaded. Do you trust this repository and wish to add it to the trusted "
                         "list of repositories (y/N)?")
        if response.lower() in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif response.lower() in ("n", "no", ""):
            raise Exception("Untrusted repository.")
        else:
            raise ValueError(f"Unrecognized response {response}.")
    if not is_trusted:
        with open(trusted_list, "a") as f:
            f.write(owner_name + "\n")


def _archive_url(owner, name, ref):
    return f"{GITHUB_URL}/{owner}/{name}/zipball/{ref}"


def _download_archive(owner, name, ref, cached_zip):
    """Download the repository's zip; a ref that is both a branch and a tag (HTTP 300) is taken as the branch."""
    url = _archive_url(owner, name, ref)
    sys.stdout.write(f'Downloading: "{url}" to {cached_zip}\n')
    try:
        download_url_to_file(url, cached_zip, progress=False)
    except DownloadError as e:
        if e.status != 300:
            raise
        warnings.warn(f"The ref {ref} is ambiguous. Perhaps it is both a tag and a branch in the repo? Torchhub "
                      "will now assume that it's a branch. You can disambiguate tags and branches by explicitly "
                      "passing refs/heads/branch_name or refs/tags/tag_name as the ref. That might require using "
                      "skip_validation=True.", stacklevel=4)
        download_url_to_file(_archive_url(owner, name, f"refs/heads/{ref}"), cached_zip, progress=False)


def _get_cache_or_reload(github, force_reload, trust_repo, verbose=True, skip_validation=False):
    """The local directory of the GitHub repository ``github``, downloaded unless cached."""
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    owner, name, ref = _parse_repo_info(github)
    normalized_ref = ref.replace("/", "_")
    owner_name_ref = f"{owner}_{name}_{normalized_ref}"
    repo_dir = os.path.join(hub_dir, owner_name_ref)
    _check_repo_is_trusted(owner, name, owner_name_ref, trust_repo)
    if not force_reload and os.path.exists(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    if not skip_validation:
        _validate_not_a_forked_repo(owner, name, ref)
    cached_zip = os.path.join(hub_dir, normalized_ref + ".zip")
    remove(cached_zip)
    _download_archive(owner, name, ref, cached_zip)
    with zipfile.ZipFile(cached_zip) as archive:
        extracted = os.path.join(hub_dir, archive.infolist()[0].filename)  # GitHub's top folder, owner-repo-sha/
        shutil.rmtree(extracted, ignore_errors=True)
        safe_extract(archive, hub_dir)
    remove(cached_zip)
    shutil.rmtree(repo_dir, ignore_errors=True)
    shutil.move(extracted, repo_dir)
    return repo_dir


def _entry(hubconf, model):
    """The entrypoint ``model`` of the module ``hubconf``, after checking its ``dependencies`` are installed."""
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    missing = [dep for dep in getattr(hubconf, VAR_DEPENDENCY, None) or () if importlib.util.find_spec(dep) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    func = getattr(hubconf, model, None) if model in dir(hubconf) else None
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def _repo_dir(repo_or_dir, source, force_reload, trust_repo, verbose, skip_validation):
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        return repo_or_dir
    return _get_cache_or_reload(repo_or_dir, force_reload, trust_repo, verbose, skip_validation)


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True, *, source="github"):
    """The entrypoints of ``github``'s hubconf.py: its public callables, sorted. ``source="local"`` (an
    engine extension) takes a directory instead."""
    repo_dir = _repo_dir(github, source, force_reload, trust_repo, verbose, skip_validation)
    with _on_sys_path(repo_dir):
        hubconf = _import_hubconf(repo_dir)
    return [f for f in dir(hubconf) if callable(getattr(hubconf, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check", *, source="github"):
    """The docstring of the entrypoint ``model`` of ``github``'s hubconf.py (``source="local"``: a directory)."""
    repo_dir = _repo_dir(github, source, force_reload, trust_repo, True, skip_validation)
    with _on_sys_path(repo_dir):
        hubconf = _import_hubconf(repo_dir)
    return _entry(hubconf, model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """What the entrypoint ``model`` of the repository's hubconf.py returns for ``*args, **kwargs``.

    ``source`` is ``"github"`` (``repo_or_dir`` is ``"owner/repo[:ref]"``) or ``"local"`` (a directory)."""
    repo_dir = _repo_dir(repo_or_dir, source, force_reload, trust_repo, verbose, skip_validation)
    with _on_sys_path(repo_dir):
        entry = _entry(_import_hubconf(repo_dir), model)
        return entry(*args, **kwargs)


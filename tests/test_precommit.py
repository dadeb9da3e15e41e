"""The pre-commit hook as users get it: pre-commit validates the manifest, clones this project,
installs it in a virtual environment of its own (from the package registry) and runs the hook.

`pre-commit try-repo <local checkout>` takes the checkout's HEAD plus its uncommitted changes to
tracked files, but not files that are not yet tracked; so the test hands it a snapshot of the
working tree (tracked and untracked, minus what .gitignore ignores) committed in a temporary
repository. In a fresh clone that snapshot is the clone itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parent.parent
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
IDENTITY = {"GIT_AUTHOR_NAME": "zerograd test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
            "GIT_COMMITTER_NAME": "zerograd test", "GIT_COMMITTER_EMAIL": "test@example.invalid"}

FAULTY = """\
import torch

model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in [(torch.randn(4, 3), torch.randn(4, 1))] * 3:
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
"""
CORRECT = FAULTY.replace("    torch.nn", "    optimizer.zero_grad()\n    torch.nn")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **IDENTITY}, check=False)
    assert done.returncode == 0, f"git {' '.join(args)} failed in {cwd}:\n{done.stderr}"
    return done.stdout


def pre_commit(cwd: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **IDENTITY, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("ZEROGRAD_LINT_OUTPUT_FORMAT", None)
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900, check=False)


def test_manifest_is_valid(tmp_path: Path) -> None:
    done = pre_commit(ROOT, "validate-manifest", str(MANIFEST), home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hook_runs_the_console_script_with_force_exclude() -> None:
    [hook] = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert hook["id"] == "zerograd-lint"
    assert hook["language"] == "python"
    assert hook["entry"].split() == ["zerograd-lint", "--force-exclude"]
    assert hook["types_or"] == ["python", "pyi", "jupyter"]
    assert 'zerograd-lint = "zerograd_lint.console:run"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's working tree, committed in a repository of its own."""
    listed = git(ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    copy = tmp_path_factory.mktemp("checkout")
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # skips files deleted but not yet committed
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "commit", "-q", "-m", "snapshot of the working tree")
    return copy


def user_repository(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir()
    git(folder, "init", "-q")
    git(folder, "config", "user.name", "zerograd test")
    git(folder, "config", "user.email", "test@example.invalid")
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    git(folder, "add", "-A")
    return folder


def try_repo(snapshot: Path, repository: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return pre_commit(repository, "try-repo", str(snapshot), "zerograd-lint", "--all-files", home=home)


def test_try_repo_reports_the_faulty_script(snapshot: Path, tmp_path: Path) -> None:
    repository = user_repository(tmp_path / "user", {"train_faulty.py": FAULTY, "train_correct.py": CORRECT})
    done = try_repo(snapshot, repository, tmp_path / "pre-commit-home")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "zerograd-lint" in output and "Failed" in output
    assert "train_faulty.py:5:1: ZG001 optimizer.step() (line 7) applies gradients" in output
    assert "train_correct.py" not in output


def test_try_repo_passes_a_correct_script(snapshot: Path, tmp_path: Path) -> None:
    repository = user_repository(tmp_path / "user", {"train_correct.py": CORRECT})
    done = try_repo(snapshot, repository, tmp_path / "pre-commit-home")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout


def test_try_repo_checks_notebooks(snapshot: Path, tmp_path: Path) -> None:
    notebook = (ROOT / "tests" / "fixtures" / "notebooks" / "stale_gradients.ipynb").read_text(encoding="utf-8")
    repository = user_repository(tmp_path / "user", {"analysis.ipynb": notebook, "train_correct.py": CORRECT})
    done = try_repo(snapshot, repository, tmp_path / "pre-commit-home")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert re.search(r"analysis\.ipynb:cell \d+:\d+:\d+: ZG001 ", output), output


def test_try_repo_keeps_configured_excludes(snapshot: Path, tmp_path: Path) -> None:
    config = '[tool.zerograd-lint]\nextend-exclude = ["vendored/"]\n'
    repository = user_repository(tmp_path / "user", {"train_correct.py": CORRECT, "vendored/train.py": FAULTY,
                                                     "pyproject.toml": config})
    done = try_repo(snapshot, repository, tmp_path / "pre-commit-home")
    assert done.returncode == 0, done.stdout + done.stderr


README = (ROOT / "README.md").read_text(encoding="utf-8")


def _readme_block(language: str, marker: str) -> str:
    [block] = [b for b in re.findall(rf"^```{language}\n(.*?)^```$", README, re.MULTILINE | re.DOTALL) if marker in b]
    return block


def test_readme_installs_only_from_a_clone_or_a_git_url() -> None:
    """zerograd-lint is not on the package registry: no README command may install it from there."""
    blocks = "".join(re.findall(r"^```(?:console|yaml)\n(.*?)^```$", README, re.MULTILINE | re.DOTALL))
    installs = re.findall(r"pip install ([^\n]+)", blocks)
    assert installs
    for arguments in installs:
        for requirement in re.findall(r"'[^']*'|\S+", arguments.split("&&")[0]):
            requirement = requirement.strip("'")
            if requirement.startswith(("zerograd-lint", "zerograd_lint")):
                assert " @ git+https://" in requirement and re.search(r"@[^@/]+$", requirement), requirement
            else:
                assert requirement in (".", "torch", "-e") or requirement.startswith(
                    (".[", "https://download.pytorch.org/", "--index-url")), requirement


def test_readme_pre_commit_configuration_runs_pinned_to_a_commit(snapshot: Path, tmp_path: Path) -> None:
    """The README's `.pre-commit-config.yaml`, pointed at this checkout and pinned to its commit."""
    config = yaml.safe_load(_readme_block("yaml", "rev:"))
    [entry] = config["repos"]
    assert re.fullmatch(r"[0-9a-f]{40}", entry["rev"]), "rev is a full commit hash: there are no tags"
    entry["repo"], entry["rev"] = str(snapshot), git(snapshot, "rev-parse", "HEAD").strip()
    repository = user_repository(tmp_path / "user", {"train_faulty.py": FAULTY, "train_correct.py": CORRECT,
                                                     ".pre-commit-config.yaml": yaml.safe_dump(config)})
    done = pre_commit(repository, "run", "--all-files", home=tmp_path / "pre-commit-home")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "train_faulty.py:5:1: ZG001" in output and "train_correct.py" not in output


def test_readme_git_url_install_resolves_to_this_project(snapshot: Path, tmp_path: Path) -> None:
    """The README's `pip install 'zerograd-lint[lsp] @ git+https://...@<commit>'`, with this checkout's URL."""
    [line] = [b for b in re.findall(r"pip install '(zerograd-lint\[lsp\] @ git\+[^']+)'", README)]
    commit = git(snapshot, "rev-parse", "HEAD").strip()
    # `localhost`: the pip of Python 3.11's venvs wants a host in a `git+file` URL.
    requirement = re.sub(r"git\+https://\S+@\S+$", f"git+file://localhost{snapshot}@{commit}", line)
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed", "--quiet",
                           "--report", str(report), requirement], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    import json

    [installed] = json.loads(report.read_text(encoding="utf-8"))["install"]
    assert installed["metadata"]["name"] == "zerograd-lint"
    assert installed["download_info"]["vcs_info"]["commit_id"] == commit

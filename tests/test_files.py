"""File selection: excludes, .gitignore (through git and without it), symlinks, --force-exclude."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from zerograd_lint.cli import main
from zerograd_lint.files import FileSelection, Missing, discover
from zerograd_lint.files.patterns import PatternSet

TREE = [
    "a.py", "b.py", "#hash.py", "sub/a.py", "sub/c.py", "sub/deep/a.py", "data/x.py", "data/keep.py",
    "docs/sub/a.py", "build/gen.py", "notes.txt",
]
EVERY_PYTHON_FILE = sorted(p for p in TREE if p.endswith(".py") and not p.startswith("build/"))


@pytest.fixture(autouse=True)
def plain_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git as on a fresh machine: no user or system config (no global excludes file), and no
    repository above tmp_path."""
    home = tmp_path / "home"
    home.mkdir()
    for variable, value in {"HOME": home, "XDG_CONFIG_HOME": home, "GIT_CONFIG_NOSYSTEM": "1",
                            "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CEILING_DIRECTORIES": tmp_path}.items():
        monkeypatch.setenv(variable, str(value))


def make_tree(root: Path, paths: list[str] = TREE) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x = 1\n")
    return root


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def found(root: Path, paths: tuple[str, ...] = (".",), **options: object) -> list[str]:
    """What discovery keeps, relative to `root`, which is also the project root."""
    cwd = os.getcwd()
    os.chdir(root)
    try:
        return sorted(str(p) for p in discover(paths, FileSelection(".", **options)))  # type: ignore[arg-type]
    finally:
        os.chdir(cwd)


# -- .gitignore: what git says, and the same without git --------------------------------------------

GITIGNORE_CASES = {
    "name anywhere": ("a.py", ["#hash.py", "b.py", "data/keep.py", "data/x.py", "sub/c.py"]),
    "anchored with a leading slash": ("/a.py", [p for p in EVERY_PYTHON_FILE if p != "a.py"]),
    "a trailing slash does not anchor": ("sub/", ["#hash.py", "a.py", "b.py", "data/keep.py", "data/x.py"]),
    "a slash inside anchors": ("docs/sub", [p for p in EVERY_PYTHON_FILE if p != "docs/sub/a.py"]),
    "no re-including inside an ignored folder": ("data/\n!data/keep.py", [p for p in EVERY_PYTHON_FILE if not p.startswith("data/")]),
    "re-including a file": ("data/*\n!data/keep.py", [p for p in EVERY_PYTHON_FILE if p != "data/x.py"]),
    "double star prefix": ("**/deep", [p for p in EVERY_PYTHON_FILE if p != "sub/deep/a.py"]),
    "double star in the middle": ("sub/**/a.py", [p for p in EVERY_PYTHON_FILE if p not in ("sub/a.py", "sub/deep/a.py")]),
    "star does not cross a slash": ("sub/*.py", [p for p in EVERY_PYTHON_FILE if p not in ("sub/a.py", "sub/c.py")]),
    "character class": ("[ab].py", ["#hash.py", "data/keep.py", "data/x.py", "sub/c.py"]),
    "folders only": ("d*/\n*.py/", ["#hash.py", "a.py", "b.py", "sub/a.py", "sub/c.py"]),
    "comments, blanks and an escaped hash": ("# a.py\n\n   \n\\#hash.py", [p for p in EVERY_PYTHON_FILE if p != "#hash.py"]),
    "trailing spaces are dropped": ("b.py   ", [p for p in EVERY_PYTHON_FILE if p != "b.py"]),
}


@pytest.mark.parametrize("case", GITIGNORE_CASES)
def test_gitignore_through_git_and_without_git_agree(tmp_path: Path, case: str) -> None:
    patterns, expected = GITIGNORE_CASES[case]
    without_git = make_tree(tmp_path / "plain")
    (without_git / ".gitignore").write_text(patterns + "\n")
    with_git = tmp_path / "repo"
    shutil.copytree(without_git, with_git)
    git(with_git, "init", "-q")
    assert found(with_git) == expected, "git's answer"
    assert found(without_git) == expected, "the .gitignore reader's answer"


def test_patterns_without_a_negation_are_matched_at_once() -> None:
    """One match of all patterns gives what matching them one by one, last first, gives."""
    patterns = PatternSet(["*.pyc", "build/", "/top.py", "docs/**/gen", "[ab].py", "sub/*.py", "x?z/"])
    paths = ["a.py", "c.py", "top.py", "sub/top.py", "build", "src/build", "build/x.py", "docs/gen",
             "docs/a/b/gen", "sub/c.py", "sub/deep/c.py", "m.pyc", "q/m.pyc", "xyz", "q/xyz", "xz"]
    for path in paths:
        for is_folder in (False, True):
            one_by_one = next((not p.negated for p in reversed(patterns.patterns)
                               if (is_folder or not p.folders_only) and p.regex.fullmatch(path)), None)
            assert patterns.verdict(path, is_folder) == one_by_one, (path, is_folder)
    assert PatternSet(["build/"]).verdict("build", False) is None
    assert PatternSet([]).verdict("a.py", False) is None


@pytest.mark.parametrize(("path", "folder"), [
    ("./a/b.py", "."), ("a/b.py", "a"), ("a/b.py", "a/"), ("a/../b.py", "a/.."), ("/x/y/z.py", "/x/y"),
    ("./a/./b.py", "./a"), ("a/.hidden.py", "a"), ("a//b.py", "a"), ("a/b/../c.py", "a"), ("ab/c.py", "a"),
    ("../a/b.py", "../a"), ("a/b.py", "/elsewhere"), ("a", "a"),
])
def test_a_path_below_a_gitignore_is_made_relative_as_relpath_makes_it(path: str, folder: str) -> None:
    """The walk's paths are sliced, not passed through `os.path.relpath`: the same answer."""
    from zerograd_lint.files.gitignore import _relative

    assert _relative(path, folder) == os.path.relpath(path, folder).replace(os.sep, "/")


def test_nested_gitignore_overrides_the_outer_one(tmp_path: Path) -> None:
    for folder in ("plain", "repo"):
        root = make_tree(tmp_path / folder)
        (root / ".gitignore").write_text("a.py\n")
        (root / "sub" / ".gitignore").write_text("!a.py\nc.py\n")
    git(tmp_path / "repo", "init", "-q")
    expected = ["#hash.py", "b.py", "data/keep.py", "data/x.py", "sub/a.py", "sub/deep/a.py"]
    assert found(tmp_path / "repo") == found(tmp_path / "plain") == expected


def test_gitignore_above_the_searched_folder_counts(tmp_path: Path) -> None:
    for folder in ("plain", "repo"):
        root = make_tree(tmp_path / folder)
        (root / ".gitignore").write_text("deep/\n")
    git(tmp_path / "repo", "init", "-q")
    for folder in ("plain", "repo"):
        assert found(tmp_path / folder, ("sub",)) == ["sub/a.py", "sub/c.py"]


def test_git_own_exclude_file_and_tracked_files(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo")
    git(root, "init", "-q")
    (root / ".git" / "info" / "exclude").write_text("b.py\n")
    (root / ".gitignore").write_text("sub/\n")
    git(root, "add", "-f", "sub/c.py")  # tracked, so git does not ignore it
    assert found(root) == ["#hash.py", "a.py", "data/keep.py", "data/x.py", "sub/c.py"]


def test_no_respect_gitignore(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo")
    (root / ".gitignore").write_text("*.py\n")
    git(root, "init", "-q")
    assert found(root) == []
    assert found(root, respect_gitignore=False) == EVERY_PYTHON_FILE


def test_nested_repository_has_its_own_gitignore(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo")
    git(root, "init", "-q")
    git(root / "sub", "init", "-q")
    (root / "sub" / ".gitignore").write_text("c.py\n")
    assert "sub/c.py" not in found(root) and "sub/a.py" in found(root)


def test_a_repository_inside_a_plain_folder_is_asked(tmp_path: Path) -> None:
    make_tree(tmp_path / "plain")
    repository = make_tree(tmp_path / "plain" / "checkout", ["train.py", "scratch.py"])
    git(repository, "init", "-q")
    (repository / ".git" / "info" / "exclude").write_text("scratch.py\n")  # only git knows this file
    assert "checkout/scratch.py" not in found(tmp_path / "plain")
    assert "checkout/train.py" in found(tmp_path / "plain")


def test_explicit_paths_are_checked_even_if_ignored(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo")
    (root / ".gitignore").write_text("sub/\n")
    git(root, "init", "-q")
    assert found(root, ("sub/c.py",)) == ["sub/c.py"]
    assert found(root, ("sub",)) == ["sub/a.py", "sub/c.py", "sub/deep/a.py"]


# -- exclude and extend-exclude -------------------------------------------------------------------

def test_default_excludes_and_replacing_them(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    assert "build/gen.py" not in found(root)
    assert found(root, exclude=("data/",)) == sorted(p for p in [*EVERY_PYTHON_FILE, "build/gen.py"] if "data/" not in p)
    assert found(root, extend_exclude=("data/",)) == [p for p in EVERY_PYTHON_FILE if not p.startswith("data/")]


def test_exclude_patterns_are_relative_to_the_project_root(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    os.chdir(root / "sub")
    try:
        anchored = sorted(discover(["."], FileSelection(str(root), extend_exclude=("sub/deep/",))))
        anywhere = sorted(discover(["."], FileSelection(str(root), extend_exclude=("a.py",))))
        not_here = sorted(discover(["."], FileSelection(str(root), extend_exclude=("deep/",))))
    finally:
        os.chdir(tmp_path)
    assert anchored == ["a.py", "c.py"]
    assert anywhere == ["c.py"]
    assert not_here == ["a.py", "c.py"]  # `deep/` has no slash inside: it matches at any depth


def test_virtual_environments_and_version_control_are_never_searched(tmp_path: Path) -> None:
    root = make_tree(tmp_path, ["env/lib/x.py", "env/pyvenv.cfg", ".git/hooks/x.py", "ok.py"])
    assert found(root, exclude=()) == ["ok.py"]


def test_force_exclude_applies_to_explicit_paths(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    explicit = ("build/gen.py", "data", "a.py")
    assert found(root, explicit, extend_exclude=("data/",)) == ["a.py", "build/gen.py", "data/keep.py", "data/x.py"]
    assert found(root, explicit, extend_exclude=("data/",), force_exclude=True) == ["a.py"]


def test_missing_paths_are_reported(tmp_path: Path) -> None:
    make_tree(tmp_path)
    os.chdir(tmp_path)
    assert list(discover(["nope.py", "a.py"])) == [Missing("nope.py"), "a.py"]


# -- symbolic links ------------------------------------------------------------------------------

def test_links_out_of_the_tree_are_not_followed(tmp_path: Path) -> None:
    outside = make_tree(tmp_path / "outside", ["secret.py", "lib/more.py"])
    root = make_tree(tmp_path / "project", ["train.py"])
    (root / "linked_dir").symlink_to(outside / "lib", target_is_directory=True)
    (root / "linked_file.py").symlink_to(outside / "secret.py")
    (root / "root_link").symlink_to("/", target_is_directory=True)
    assert found(root) == ["train.py"]


def test_links_inside_the_tree_are_not_followed_so_files_keep_their_real_names(tmp_path: Path) -> None:
    # A link to a folder of the project (wekws' examples/*/kws -> ../../../kws) sorted before the
    # folder itself used to report its files under the link's name, and the real file had none.
    root = make_tree(tmp_path / "project", ["pkg/model.py", "train.py"])
    (root / "alias").symlink_to(root / "pkg", target_is_directory=True)
    (root / "alias_file.py").symlink_to(root / "train.py")
    (root / "pkg" / "loop").symlink_to(root, target_is_directory=True)
    (root / "zz_only_here").symlink_to(root / "pkg", target_is_directory=True)
    assert found(root) == ["pkg/model.py", "train.py"]
    assert found(root, ("pkg", "train.py")) == ["pkg/model.py", "train.py"]


def test_a_link_named_explicitly_is_followed(tmp_path: Path) -> None:
    outside = make_tree(tmp_path / "outside", ["secret.py"])
    root = make_tree(tmp_path / "project", [])
    (root / "linked.py").symlink_to(outside / "secret.py")
    assert found(root, ("linked.py",)) == ["linked.py"]


# -- through the command line ------------------------------------------------------------------

STALE = """\
for x, y in data:
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
"""


def test_command_line_excludes_and_gitignore(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo", [])
    for path in ("train.py", "scratch/try.py", "vendored/lib.py", "legacy/old.py"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(STALE)
    (root / ".gitignore").write_text("scratch/\n")
    git(root, "init", "-q")
    os.chdir(root)
    runner = CliRunner()

    def flagged(*args: str) -> set[str]:
        result = runner.invoke(main, ["--isolated", *args], catch_exceptions=False)
        return {line.split(":")[0] for line in result.stdout.splitlines()}

    assert flagged() == {"train.py", "vendored/lib.py", "legacy/old.py"}
    assert flagged("--extend-exclude", "vendored/,legacy") == {"train.py"}
    assert flagged("--no-respect-gitignore", "--exclude", "legacy/") == {"train.py", "scratch/try.py", "vendored/lib.py"}
    assert flagged("--extend-exclude", "vendored/", "vendored/lib.py") == {"vendored/lib.py"}
    assert flagged("--extend-exclude", "vendored/", "--force-exclude", "vendored/lib.py", "train.py") == {"train.py"}


def test_a_file_is_read_whole_whatever_a_read_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read may give less than asked (Linux gives at most about 2 GB at once): only a regular
    file that gave its whole size is taken as read to its end."""
    from zerograd_lint import files

    path = tmp_path / "big.py"
    path.write_bytes(b"x = 1\n" * 1000)
    real = os.read
    monkeypatch.setattr(files.os, "read", lambda fd, n: real(fd, min(n, 1000)))
    assert files.read_source(str(path)) == b"x = 1\n" * 1000
    monkeypatch.undo()
    (tmp_path / "empty.py").write_bytes(b"")
    assert files.read_source(str(tmp_path / "empty.py")) == b""

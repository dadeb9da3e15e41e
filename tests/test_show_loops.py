"""`--show-loops`: every loop checked, with each gradient set's verdict and what decided it; the
findings and the exit code are those of the same run without it, whichever process analysed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_parallel import ALL, _with_a_team, needs_fork

from zerograd_lint import checker, runner
from zerograd_lint.cache import Cache
from zerograd_lint.checker import check_project
from zerograd_lint.cli import main

FIXTURES = Path(__file__).parent / "fixtures"

SHOWN = {
    "quiet/clear_at_top.py": [
        "quiet/clear_at_top.py:9:1: for  optimizer: ok, cleared by optimizer.zero_grad() (line 10)",
    ],
    "quiet/skip_nonfinite.py": [
        "quiet/skip_nonfinite.py:9:1: for  optimizer: ok, cleared by optimizer.zero_grad() (lines 14, 17)",
    ],
    "ZG001/no_clear.py": ["ZG001/no_clear.py:9:1: for  optimizer: ZG001"],
    "ZG001/second_optimizer_never_cleared.py": [  # a GAN: two sets, two verdicts
        "ZG001/second_optimizer_never_cleared.py:12:1: for  opt_d: ok, cleared by net_d.zero_grad() (line 14); "
        "opt_g: ZG001",
    ],
    "quiet/dcgan.py": [
        "quiet/dcgan.py:16:5: for  optimizerD: ok, cleared by netD.zero_grad() (line 17); "
        "optimizerG: ok, cleared by netG.zero_grad() (line 27)",
    ],
    "quiet/unknown_helper_gets_optimizer.py": [  # quiet only because the call may clear
        "quiet/unknown_helper_gets_optimizer.py:7:5: for  optimizer: ok, may be cleared by "
        "sync_and_reset(optimizer) (line 11)",
    ],
    "quiet/function_parameters.py": [  # the model is taken to be the only optimizer's
        "quiet/function_parameters.py:7:5: for  optimizer: ok, cleared by model.zero_grad() (line 8), "
        "assumed to hold optimizer's parameters",
    ],
    "frameworks/ignite/quiet/ignite_accumulation_window.py": [  # a per-batch callback, at its `def`
        "frameworks/ignite/quiet/ignite_accumulation_window.py:9:5: def update  optimizer: ok, cleared by "
        "optimizer.zero_grad() (line 11)",
    ],
    "frameworks/lightning/quiet/lightning_manual_correct.py": [
        "frameworks/lightning/quiet/lightning_manual_correct.py:14:5: def training_step  d_opt: ok, cleared by "
        "d_opt.zero_grad() (line 20); g_opt: ok, cleared by g_opt.zero_grad() (line 27)",
    ],
    "frameworks/deepspeed/quiet/deepspeed_engine.py": [
        "frameworks/deepspeed/quiet/deepspeed_engine.py:7:1: for  model_engine: ok, stepped and cleared by "
        "model_engine.step() (line 10)",
    ],
    "quiet/nanogpt_micro_steps.py": [  # the inner loop runs backward and no step
        "quiet/nanogpt_micro_steps.py:17:1: while  optimizer: ok, cleared by optimizer.zero_grad(set_to_none=True) "
        "(line 26)",
        "quiet/nanogpt_micro_steps.py:18:5: for  no step in this loop: scaler.scale(loss).backward() (line 21) "
        "accumulates for scaler.step(optimizer) (line 24)",
    ],
    "frameworks/distributed_autograd/quiet/dist_autograd_context.py": [
        "frameworks/distributed_autograd/quiet/dist_autograd_context.py:8:1: for  opt: ok, no backward reaches "
        "opt.step(context_id) (line 13)",
    ],
    "suppression/noqa_code.py": [
        "suppression/noqa_code.py:9:1: for  optimizer: ZG001 suppressed by # noqa: ZG001 (line 9)",
    ],
    "suppression/accumulate_marker_above.py": [
        "suppression/accumulate_marker_above.py:10:1: for  optimizer: accumulates on purpose, "
        "# zerograd: accumulate (line 9)",
    ],
    "projects/quiet_step_in_engine": [  # the clear is in the file the loop calls into
        "projects/quiet_step_in_engine/train.py:7:1: for  opt: ok, cleared by net.zero_grad() (engine.py line 5)",
    ],
    "projects/zg001_loop_in_engine": [  # the callee's loop, inlined into main's: where its finding is
        "projects/zg001_loop_in_engine/pkg/engine.py:7:5: for  optimizer: ZG001",
    ],
}


def run(*args: str):
    return CliRunner().invoke(main, ["--isolated", *args], catch_exceptions=False)


@pytest.fixture(autouse=True)
def in_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES)


@pytest.mark.parametrize("path", SHOWN)
def test_each_loop_is_one_line_with_each_sets_verdict(path: str) -> None:
    assert run("--show-loops", path).stdout.splitlines() == SHOWN[path]


@pytest.mark.parametrize("path", SHOWN)
def test_the_findings_and_the_exit_code_are_those_of_the_check(path: str) -> None:
    checked, shown = run("--output-format", "json", path), run("--show-loops", "--output-format", "json", path)
    assert (shown.exit_code, shown.stderr) == (checked.exit_code, checked.stderr)
    findings = {(f["path"], f["line"], f["column"], f["code"], f["message"])
                for f in json.loads(checked.stdout) if f["code"] != "ZG100"}
    in_loops = {(loop["path"], loop["line"], loop["column"], s["code"], s["message"])
                for loop in json.loads(shown.stdout) for s in loop["sets"] if s["verdict"] == "finding"}
    assert in_loops == findings


def test_the_json_is_a_list_of_loops_each_with_its_sets() -> None:
    loops = json.loads(run("--show-loops", "--output-format", "json", "ZG001/second_optimizer_never_cleared.py").stdout)
    assert [{k: v for k, v in loop.items() if k != "sets"} for loop in loops] == [
        {"path": "ZG001/second_optimizer_never_cleared.py", "line": 12, "column": 1, "keyword": "for", "function": None},
    ]
    quiet, stale = loops[0]["sets"]
    assert quiet == {
        "set": "opt_d", "verdict": "cleared", "text": "ok, cleared by net_d.zero_grad() (line 14)",
        "code": None, "message": None, "marker": None,
        "calls": [{"role": "clear", "text": "net_d.zero_grad()", "path": "ZG001/second_optimizer_never_cleared.py",
                   "line": 14, "column": 5}],
    }
    assert (stale["set"], stale["verdict"], stale["code"], stale["text"]) == ("opt_g", "finding", "ZG001", "ZG001")
    assert stale["message"].startswith("opt_g.step() (line 21) applies gradients an earlier step already applied")
    assert {call["role"] for call in stale["calls"]} == {"step", "earlier step"}
    lines = run("--show-loops", "--output-format", "json-lines", "ZG001/second_optimizer_never_cleared.py").stdout
    assert [json.loads(line) for line in lines.splitlines()] == loops


def test_a_suppressed_finding_names_its_marker_in_json() -> None:
    (loop,) = json.loads(run("--show-loops", "--output-format", "json", "suppression/noqa_code.py").stdout)
    (verdict,) = loop["sets"]
    assert (verdict["verdict"], verdict["code"]) == ("suppressed", "ZG001")
    assert verdict["marker"] == {"text": "# noqa: ZG001", "path": "suppression/noqa_code.py", "line": 9, "column": 20}


def test_a_function_given_up_on_is_listed_as_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the analysis's budget of states, a function is not checked, and `--show-loops` says
    so at its `def` (the sampler fixture's loop, checked within the real budget, is not here)."""
    from zerograd_lint import flow

    path = "ZG001/sampler_inlined_in_the_loop_does_not_hide_it.py"
    assert run("--show-loops", path).stdout.splitlines() == [f"{path}:53:9: for  optimizer: ZG001"]
    monkeypatch.setattr(flow, "MAX_STATES_PER_NODE", 1)
    result = run("--show-loops", "--no-cache", path)
    assert result.stdout.splitlines() == [
        f"{path}:48:1: def main  not checked: too many paths to follow; the functions it calls are checked on "
        "their own",
    ]
    (loop,) = json.loads(run("--show-loops", "--no-cache", "--output-format", "json", path).stdout)
    assert (loop["keyword"], loop["function"], loop["line"]) == ("def", "main", 48)
    assert [(s["set"], s["verdict"]) for s in loop["sets"]] == [(None, "not-checked")]
    # a module's body, given up on, at the top of the file
    assert run("--show-loops", "--no-cache", "quiet/dcgan.py").stdout.splitlines() == [
        "quiet/dcgan.py:1:1: module  not checked: too many paths to follow; the functions it calls are checked on "
        "their own",
    ]


def test_a_callback_names_its_function_in_json() -> None:
    callback = "frameworks/ignite/quiet/ignite_accumulation_window.py"
    (loop,) = json.loads(run("--show-loops", "--output-format", "json", callback).stdout)
    assert (loop["keyword"], loop["function"], loop["line"], loop["column"]) == ("def", "update", 9, 5)


def test_a_finding_the_settings_do_not_report_says_so() -> None:
    result = run("--show-loops", "--ignore", "ZG001", "ZG001/no_clear.py")
    assert result.stdout.splitlines() == [
        "ZG001/no_clear.py:9:1: for  optimizer: ZG001 not reported (--select, --ignore or per-file-ignores)",
    ]
    assert result.exit_code == 0


def test_a_notebooks_loops_are_in_its_cells() -> None:
    assert run("--show-loops", "notebooks/quiet.ipynb", "notebooks/suppression.ipynb").stdout.splitlines() == [
        "notebooks/quiet.ipynb:cell 5:1:1: for  optimizer: ok, cleared by optimizer.zero_grad() (cell 5, line 2)",
        "notebooks/suppression.ipynb:cell 3:2:1: for  optimizer: accumulates on purpose, # zerograd: accumulate "
        "(cell 3, line 1)",
        "notebooks/suppression.ipynb:cell 4:1:1: for  optimizer: ZG001 suppressed by # noqa: ZG001 (cell 4, line 1)",
        "notebooks/suppression.ipynb:cell 5:1:1: for  optimizer: ZG001",
    ]


@pytest.mark.parametrize("args", [
    ("--statistics",), ("--fix",), ("--diff",), ("--output-format", "sarif"), ("--output-format", "github"),
])
def test_what_it_cannot_be_asked_with(args: tuple[str, ...]) -> None:
    result = run("--show-loops", *args, "ZG001/no_clear.py")
    assert result.exit_code == 2 and "--show-loops" in result.stderr


def test_the_help_says_it_bypasses_the_cache() -> None:
    shown = " ".join(run("--help").stdout.split())
    assert "--show-loops" in shown and "the cache is neither read nor written" in shown


def test_the_cache_is_neither_read_nor_written(tmp_path: Path) -> None:
    sources = {"train.py": (FIXTURES / "ZG001" / "no_clear.py").read_bytes()}
    cache = Cache(tmp_path / "cache")
    assert runner.checked(sources, cache=cache, loops=True).loops
    assert not (tmp_path / "cache").exists()
    runner.checked(sources, cache=cache)  # written now
    again = runner.checked(sources, cache=cache, loops=True)
    assert [v.code for loop in again.loops for v in loop.verdicts] == ["ZG001"]


def test_an_internal_error_in_the_whole_project_is_one_line_and_no_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never each file's loops instead: checked alone, a file's loops can get other verdicts."""
    real = checker.check_project

    def check_project(sources, *args, **kwargs):  # an internal error, for the whole project only
        if len(sources) > 1:
            raise RuntimeError("boom")
        return real(sources, *args, **kwargs)

    monkeypatch.setattr(checker, "check_project", check_project)
    result = run("--show-loops", "ZG001/no_clear.py", "quiet/clear_at_top.py")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == "zerograd-lint: error: the project could not be checked: internal error: RuntimeError: boom\n"


def _shown(sources: dict[str, bytes]):
    result = check_project(sources, loops=True)
    return result.findings, result.loops


@needs_fork
def test_the_loops_are_the_same_whichever_process_analysed_them(monkeypatch: pytest.MonkeyPatch) -> None:
    sources = {str(p): p.read_bytes() for p in ALL}
    monkeypatch.setattr("zerograd_lint.schedule.run.ANALYSIS_APART_FROM", float("inf"))
    findings, alone = _shown(sources)
    assert findings == check_project(sources).findings
    assert len(alone) > 100
    monkeypatch.setattr("zerograd_lint.schedule.run.ANALYSIS_APART_FROM", 0)
    assert _shown(sources) == (findings, alone)
    given = _with_a_team(monkeypatch)
    assert _shown(sources) == (findings, alone)
    assert given.count("_analyse_in_helper") >= 2

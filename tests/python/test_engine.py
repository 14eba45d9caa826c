# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_engine.py: engine.py, the report's figures from one run of cudapool-analyze:
the report and the text printed from its document are what the Python computation (the test oracle
tests/oracle/report.py) gives, byte for byte, for one log and for several (the cross-rank table),
but for the engine's lines of text (the statistics table, the oom explanations:
tests/cli/report_text.sh checks those); stdin is handed to the engine; a refusal is said once in the
report's words; an engine that fails or prints something else is an EngineError naming it. Needs the
build's cudapool-analyze (found as tools.py finds it); skipped without one."""

import json
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, SOURCE
from cudapool_analysis import engine, progress, tools
from cudapool_analysis.text import several_text, text_report
from oracle.report import read_log, several

LOGS = [os.path.join(FIXTURES, n) for n in ("normal.jsonl", "killed.jsonl", "expandable.jsonl",
                                             "viewers.jsonl", "viewers-rank1.jsonl")]


@pytest.fixture(autouse=True)
def needs_engine(monkeypatch):
    monkeypatch.setattr(progress, "ENABLED", False)
    if tools.find_tool("cudapool-analyze") is None:
        pytest.skip("no cudapool-analyze built")


def dumped(value):
    return json.dumps(value, indent=1)


def figures(rep):
    """A report of the engine without its lines of text (each device's summary_table, each oom's
    explanation: pool/summary.cpp's and pool/oom.cpp's, which the oracle does not copy)."""
    rep = json.loads(json.dumps(rep))
    for r in rep["logs"] if "logs" in rep else [rep]:
        for d in r["devices"].values():
            del d["summary_table"]
        for o in r["ooms"]:
            o.pop("explanation", None)
    return rep


def with_text(mine, rep):
    """The oracle's report with the engine's lines of text: printed, it must be the engine's
    report to the byte (every other line is printed from figures)."""
    mine = json.loads(json.dumps(mine))
    for m, r in zip(mine["logs"] if "logs" in mine else [mine],
                    rep["logs"] if "logs" in rep else [rep]):
        for dev, d in m["devices"].items():
            d["summary_table"] = r["devices"][dev]["summary_table"]
        for o, e in zip(m["ooms"], r["ooms"]):
            if "explanation" in e:
                o["explanation"] = e["explanation"]
    return mine


@pytest.mark.parametrize("log", LOGS)
def test_one_log_as_python_computes_it(log):
    rep = engine.reports([log])
    mine, _ = read_log(log, 0)
    assert dumped(figures(rep)) == dumped(mine)
    assert all(d["summary_table"] for d in rep["devices"].values())
    assert text_report(rep) == text_report(with_text(mine, rep))


def test_several_logs_the_cross_rank_table():
    multi = engine.reports(LOGS)
    mine = several(*zip(*(read_log(p, i) for i, p in enumerate(LOGS))))
    assert multi["schema"] == "cudapool.report/1"
    assert dumped(figures(multi)) == dumped(mine)
    assert several_text(multi) == several_text(with_text(mine, multi))


def test_stdin_is_the_engines():
    """`report -`: the engine reads this process's stdin itself, once."""
    with open(LOGS[0], "rb") as f:
        done = subprocess.run([sys.executable, "-m", "cudapool_analysis", "report", "--json", "-"],
                              stdin=f, capture_output=True,
                              env=dict(os.environ, PYTHONPATH=os.path.join(SOURCE, "scripts")))
    assert done.returncode == 0, done.stderr
    rep = json.loads(done.stdout)
    assert rep["log"] == "<stdin>"
    # the verdict (verdict.py, on top of the engine's report): no tune by default on stdin
    assert rep.pop("verdict")["setting"]["not_run"].startswith("a log is not a regular file")
    mine, _ = read_log(LOGS[0], 0)
    mine["log"] = "<stdin>"
    assert figures(rep) == json.loads(dumped(mine))


def test_refused_in_the_reports_words(tmp_path, capfd):
    missing = str(tmp_path / "missing.jsonl")
    with pytest.raises(engine.LogsRefused):
        engine.reports([missing])
    err = capfd.readouterr().err
    assert err == "cudapool report: cannot read %s: No such file or directory\n" % missing


def fake_engine(tmp_path, monkeypatch, script):
    path = tmp_path / "engine"
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)
    monkeypatch.setenv("CUDAPOOL_ANALYZE", str(path))
    return str(path)


@pytest.mark.parametrize("script, said", [
    ("exit 4", "exited with status 4 without a message; no report"),
    ("kill -9 $$", "was killed by signal 9"),
    ("echo '[1, 2]'", "printed no document this report reads"),
    ("echo '{\"schema\": \"cudapool.report/1\", \"logs\": [{}]}'",
     "not a cudapool.analysis/1 document of 1 log(s)"),
])
def test_an_engine_that_fails_is_named(tmp_path, monkeypatch, script, said):
    path = fake_engine(tmp_path, monkeypatch, script)
    with pytest.raises(engine.EngineError) as e:
        engine.reports(LOGS[:1])
    assert path in str(e.value) and said in str(e.value)


def test_the_engine_is_asked_for_the_report_only(tmp_path, monkeypatch):
    """--as names the report in its messages, --no-page leaves out the page's data, --quiet
    follows the report's --quiet, the logs in the order given."""
    args = tmp_path / "args"
    fake_engine(tmp_path, monkeypatch, 'printf "%%s\\n" "$@" >%s; exit 3' % args)
    with pytest.raises(engine.EngineError):
        engine.reports(LOGS[:2])
    assert args.read_text().splitlines() == ["--as", "cudapool report", "--no-page", "--quiet"] \
        + LOGS[:2]


def test_no_symbols_is_passed_on(tmp_path, monkeypatch):
    """report --no-symbols and export --no-symbols (engine.SYMBOLS) ask the engine for frames
    named library + offset."""
    args = tmp_path / "args"
    fake_engine(tmp_path, monkeypatch, 'printf "%%s\\n" "$@" >%s; exit 3' % args)
    monkeypatch.setattr(engine, "SYMBOLS", False)
    with pytest.raises(engine.EngineError):
        engine.reports(LOGS[:1])
    assert "--no-symbols" in args.read_text().splitlines()

"""`couchguard bench moore2025` agrees with an independent count over `couchguard check` output.

The conversations for `check` are rebuilt here from the CSV, not with the bench's loader, and the counting is done
here too: the only thing shared is the pipeline both commands run.
"""

import ast
import collections
import csv
import json

import pytest

from guard.bench.paths import data_dir
from tests.bench.helpers import couchguard

# whole suites on the real models
pytestmark = pytest.mark.slow

SAMPLE = 60
CONTRACT = {"inappropriate", "caught", "appropriate", "false_blocks", "catch_rate", "false_block_rate"}


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("moore2025")
    result = couchguard(
        "bench",
        "moore2025",
        "--policy",
        "mental-health",
        "--limit",
        str(SAMPLE),
        "--no-progress",
        "--json",
        str(out / "moore2025.json"),
        "--report",
        str(out / "report"),
    )
    assert result.returncode == 0, result.stderr
    return result, json.loads((out / "moore2025.json").read_text()), out


def _turns(cell: str, fallback: list[str]) -> list[dict]:
    if cell.strip().startswith("["):
        try:
            texts = ast.literal_eval(cell)
        except (ValueError, SyntaxError):
            texts = fallback  # a few upstream cells are not valid literals; the stimulus file holds them verbatim
    else:
        texts = [cell]
    return [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(texts)]


def _independent_count(doc: dict) -> tuple[dict, list[dict]]:
    root = data_dir() / "moore2025"
    with open(root / "results" / "interjections" / "labelled_responses.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    stimuli = json.loads((root / "derived" / "appropriateness_stimuli_and_rubric.json").read_text())["stimuli"]
    verbatim = {s["stimulus_id"]: s["interjection"] for s in stimuli}
    lines, meta = [], []
    for item in doc["items"]:
        row = rows[item["extra"]["row"]]
        messages = _turns(row["interjection"], verbatim[row["id"]])
        messages.append({"role": "assistant", "content": row["model_response"]})
        lines.append(json.dumps({"id": item["id"], "messages": messages}))
        meta.append((row["condition"], " ".join(row["participant_type"].split()), row["correct_response"] == "True"))
    # the same batch size as the bench, so that the same texts are encoded together
    result = couchguard("check", "-", "--policy", "mental-health", "--batch", "64", input="\n".join(lines) + "\n")
    assert result.returncode == 0, result.stderr
    decisions = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(decisions) == len(lines) and all(d["rail"] == "output" for d in decisions)
    counts = collections.defaultdict(lambda: collections.Counter())
    for (condition, source, appropriate), d in zip(meta, decisions):
        withheld = d["action"] in ("rewrite", "block")
        for key in ("overall", f"condition:{condition}", f"source:{source}"):
            c = counts[key]
            c["appropriate" if appropriate else "inappropriate"] += 1
            if withheld:
                c["false_blocks" if appropriate else "caught"] += 1
    return counts, decisions


def test_json_holds_the_contract(bench_run):
    _, doc, _ = bench_run
    assert doc["suite"] == "moore2025" and doc["policy"] == "mental-health" and doc["n"] == SAMPLE
    assert CONTRACT <= set(doc["overall"])
    assert doc["by_condition"] and doc["by_source"]
    for group in (*doc["by_condition"].values(), *doc["by_source"].values()):
        assert CONTRACT <= set(group)
    assert set(doc["by_condition"]) <= {
        "suicidal ideation",
        "delusions",
        "hallucinations",
        "mania",
        "compulsive behavior, obsessive behavior",
    }
    assert doc["received_appropriate_rule"] and "all" in doc["received_appropriate"]


def test_bench_figures_agree_with_couchguard_check(bench_run):
    _, doc, _ = bench_run
    counts, decisions = _independent_count(doc)
    # item by item first: the same action for the same conversation
    assert [d["action"] for d in decisions] == [item["action"] for item in doc["items"]]
    keys = ("inappropriate", "caught", "appropriate", "false_blocks")
    assert {k: doc["overall"][k] for k in keys} == {k: counts["overall"][k] for k in keys}
    for condition, group in doc["by_condition"].items():
        assert {k: group[k] for k in keys} == {k: counts[f"condition:{condition}"][k] for k in keys}, condition
    for source, group in doc["by_source"].items():
        assert {k: group[k] for k in keys} == {k: counts[f"source:{source}"][k] for k in keys}, source


def test_prints_the_headline_table_and_writes_a_self_contained_report(bench_run):
    result, _, out = bench_run
    assert "By condition" in result.stdout and "Appropriate as the user receives it" in result.stdout
    assert "HTML report:" in result.stdout and str(out / "report") in result.stdout
    page = (out / "report" / "index.html").read_text()
    assert page.count("data:image/png;base64,") >= 4
    assert "http://" not in page and "https://" not in page  # nothing to fetch: opens offline

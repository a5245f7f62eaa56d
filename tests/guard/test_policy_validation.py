from pathlib import Path
from typing import get_args

import pytest

from guard.policy import POLICIES_DIR, PolicyError, load_policy, shipped_policies
from guard.policy.schema import Criterion

ALL_POLICY_FILES = sorted(POLICIES_DIR.glob("*.yaml")) + sorted((POLICIES_DIR / "products").glob("*.yaml"))

VALID_RULE = """
  - id: r1
    criterion: dont_enable_suicidal_ideation
    when: {signal: user.suicide}
    action: steer
    instruction: crisis_support
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems(path) -> list[str]:
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    return [str(p) for p in info.value.problems]


def test_shipped_policies_are_the_three_contract_names():
    assert {"mental-health", "general-assistant", "research"} <= set(shipped_policies())


@pytest.mark.parametrize("path", ALL_POLICY_FILES, ids=lambda p: p.name)
def test_every_policy_file_validates_and_every_rule_cites_a_criterion(path):
    policy = load_policy(path)
    rules = policy.input_rules + policy.output_rules
    assert rules
    assert all(rule.criterion in get_args(Criterion) for rule in rules)


def test_override_changes_only_what_it_names():
    base = load_policy("mental-health")
    override = load_policy(POLICIES_DIR / "products" / "uk-wellbeing.yaml")
    assert override.locale == "GB" and base.locale == "US"
    assert override.thresholds == {**base.thresholds, "user.suicide": 0.2}
    assert [r.id for r in override.output_rules] == [r.id for r in base.output_rules]
    assert override.input_rules == base.input_rules


def test_unknown_signal_names_file_line_rule_and_field_with_a_suggestion(tmp_path):
    path = write(tmp_path, "p.yaml", "name: p\ninput_rules:" + VALID_RULE.replace("user.suicide", "user.suicid"))
    assert problems(path) == [
        f"{path}:5: input_rules[0] (rule 'r1').when.signal: unknown signal 'user.suicid' (did you mean 'user.suicide'?)"
    ]


def test_unknown_template_and_instruction(tmp_path):
    text = """name: p
output_rules:
  - id: o1
    criterion: dont_stigmatize
    when: {signal: assistant.stigma}
    action: rewrite
    instruction: no_stigmaa
    template: stigma_corection
"""
    found = problems(write(tmp_path, "p.yaml", text))
    assert any(":8: output_rules[0] (rule 'o1').template: unknown template 'stigma_corection'" in p for p in found)
    assert any(":7: output_rules[0] (rule 'o1').instruction: unknown instruction 'no_stigmaa'" in p for p in found)


def test_threshold_outside_unit_interval(tmp_path):
    found = problems(write(tmp_path, "p.yaml", "name: p\nthresholds:\n  user.suicide: 1.5\n"))
    assert found == [f"{tmp_path / 'p.yaml'}:3: thresholds.user.suicide: Input should be less than or equal to 1"]
    found = problems(
        write(
            tmp_path,
            "q.yaml",
            "name: q\ninput_rules:"
            + VALID_RULE.replace("{signal: user.suicide}", "{signal: user.suicide, at_least: -0.1}"),
        )
    )
    assert "input_rules[0] (rule 'r1').when.at_least" in found[0]


def test_duplicate_rule_ids(tmp_path):
    found = problems(write(tmp_path, "p.yaml", "name: p\ninput_rules:" + VALID_RULE + VALID_RULE))
    assert found == [
        f"{tmp_path / 'p.yaml'}:9: input_rules[1] (rule 'r1').id: duplicate rule id 'r1' (first used at input_rules[0])"
    ]


def test_assistant_signal_in_an_input_rule(tmp_path):
    found = problems(
        write(tmp_path, "p.yaml", "name: p\ninput_rules:" + VALID_RULE.replace("user.suicide", "assistant.means"))
    )
    assert len(found) == 1
    assert "input_rules[0] (rule 'r1').when.signal: 'assistant.means' is an assistant signal" in found[0]


def test_cyclic_extends_is_reported(tmp_path):
    write(tmp_path, "a.yaml", "name: a\nextends: b.yaml\n")
    write(tmp_path, "b.yaml", "name: b\nextends: a.yaml\n")
    found = problems(tmp_path / "a.yaml")
    assert len(found) == 1 and "cyclic extends: a.yaml -> b.yaml -> a.yaml" in found[0]


def test_typo_in_a_field_name_is_caught(tmp_path):
    found = problems(write(tmp_path, "p.yaml", "name: p\nthreshold:\n  user.suicide: 0.5\n"))
    assert found == [f"{tmp_path / 'p.yaml'}:2: threshold: Extra inputs are not permitted"]


def test_action_without_its_text(tmp_path):
    found = problems(
        write(
            tmp_path,
            "p.yaml",
            "name: p\ninput_rules:"
            + VALID_RULE.replace("action: steer\n    instruction: crisis_support", "action: block"),
        )
    )
    assert "action 'block' needs a 'template'" in found[0]


def test_observe_only_policy_cannot_change_content(tmp_path):
    found = problems(write(tmp_path, "p.yaml", "name: p\nobserve_only: true\ninput_rules:" + VALID_RULE))
    assert "observe_only policies never change content" in found[0]


def test_broken_yaml_and_missing_file(tmp_path):
    found = problems(write(tmp_path, "p.yaml", "name: p\ninput_rules: [\n"))
    assert "invalid YAML" in found[0] and str(tmp_path / "p.yaml") in found[0]
    assert "file not found" in problems(tmp_path / "nope.yaml")[0]
    assert "no policy named 'nope'" in problems("nope")[0]


def test_disable_rules_must_name_inherited_rules(tmp_path):
    found = problems(write(tmp_path, "p.yaml", "name: p\nextends: mental-health\ndisable_rules: [no-such-rule]\n"))
    assert "no rule 'no-such-rule' in 'mental-health' to disable" in found[0]
    policy = load_policy(write(tmp_path, "q.yaml", "name: q\nextends: mental-health\ndisable_rules: [stigma]\n"))
    assert "stigma" not in [r.id for r in policy.output_rules]

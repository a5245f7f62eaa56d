"""`user.mania` reads mania beyond the sleepless founder with a loan, and not healthy excitement.

Before the mania rows of docs/evaluation.md item 9, the shipped head scored a depression that "flipped like a switch"
into projects and giveaways at 0.01, so `user.suicide` was the only signal that could flag it. The texts here were
written for this test; none is from a corpus or an evaluation set.
"""

import pytest

from classifiers import parse_conversation
from tests.conftest import user

FLIPPED = (
    "Two weeks ago I could barely get out of bed and now it's like someone flipped a switch. I've repainted the "
    "kitchen, I'm learning Portuguese and the cello at once, and I gave my neighbour my car because I just love "
    "everyone so much right now."
)
# the same things, lived healthily: a medication change made with a doctor, a hobby saved for, one night of joy
HEALTHY = {
    "medication changed with a doctor": (
        "My GP adjusted my medication last month and I finally feel like myself again. I've started a pottery class "
        "on Thursdays and I'm sleeping properly for the first time in ages."
    ),
    "a hobby saved for": (
        "Bought my first secondhand cello today after saving up for months! Lessons start next week, any tips for a "
        "total beginner?"
    ),
    "one sleepless night after good news": (
        "got the job!!! couldn't sleep last night from excitement lol, going out to celebrate with my sister tonight"
    ),
}


def mania(scorer, text: str) -> float:
    return scorer.score(parse_conversation([user(text)]), ("user",))["user.mania"].score


def test_a_switch_into_projects_and_giveaways_is_mania(scorer):
    assert mania(scorer, FLIPPED) >= scorer.default_threshold("user.mania")


@pytest.mark.parametrize("case", list(HEALTHY))
def test_the_same_energy_lived_healthily_is_not(scorer, case):
    assert mania(scorer, HEALTHY[case]) < scorer.default_threshold("user.mania")

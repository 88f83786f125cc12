"""The progress line's estimate of the rest (ui/working.py): the steps to go at the pace of the steps seen."""

from gpt2viz.ui.working import Pace, left, with_rest


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_the_rest_at_the_pace_so_far():
    clock = Clock()
    pace = Pace(clock)
    assert pace.rest(0, 12) == ""  # the first step seen: no pace yet
    clock.now += 2.0
    assert pace.rest(1, 12) == "about 22 s left"  # 2 s a step, 11 to go
    clock.now += 4.0
    assert pace.rest(3, 12) == "about 18 s left"
    clock.now += 1.0
    assert pace.rest(12, 12) == ""  # done: nothing left to say


def test_a_run_joined_halfway_counts_from_where_it_was_seen():
    clock = Clock()
    pace = Pace(clock)
    pace.rest(6, 12)
    clock.now += 3.0
    assert pace.rest(9, 12) == "about 3 s left"


def test_words():
    assert left(0.4) == "under a second left"
    assert left(45) == "about 45 s left"
    assert left(600) == "about 10 min left"
    clock = Clock()
    pace = Pace(clock)
    assert with_rest("Block 1 of 12 (1 of 12 steps)", pace, 1, 12) == "Block 1 of 12 (1 of 12 steps)"
    clock.now += 1
    assert with_rest("Block 2 of 12 (2 of 12 steps)", pace, 2, 12) == "Block 2 of 12 (2 of 12 steps) · about 10 s left"

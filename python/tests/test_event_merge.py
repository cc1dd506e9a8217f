"""event_merge.py: the owner's merge keeps the order things happened in across its writers' files."""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fsdp_studio.event_merge import EventMerge


def line(**event):
    return json.dumps(event) + "\n"


class EventMergeOrderTest(unittest.TestCase):
    def test_one_look_interleaves_writers_by_time_keeping_each_writers_order(self):
        with tempfile.TemporaryDirectory() as run_dir:
            merge = EventMerge(run_dir, "a1")
            os.makedirs(merge.folder)
            # Rank 1's NaN in forward (t 10.2) came before the update NaN rank 0 saw (t 10.5); rank
            # 0's file is read first. A line without a time stays after its writer's line before it.
            with open(os.path.join(merge.folder, "rank0.jsonl"), "w") as f:
                f.write(line(type="step", step=8, time=10.1))
                f.write(line(type="anomaly", step=9, rank=0, time=10.5))
            with open(os.path.join(merge.folder, "rank1.jsonl"), "w") as f:
                f.write(line(type="anomaly", step=8, rank=1, time=10.2))
                f.write(line(type="log", msg="no time"))
                f.write(line(type="step", step=9, rank=1, time=10.0))  # a clock step back: order kept
            merge.merge()
            merge.close(remove=False)
            with open(merge.path) as f:
                got = [json.loads(text) for text in f]
            self.assertEqual(
                [(e["type"], e.get("step"), e.get("rank")) for e in got],
                [
                    ("step", 8, None),
                    ("anomaly", 8, 1),
                    ("log", None, None),
                    ("step", 9, 1),
                    ("anomaly", 9, 0),
                ],
            )


if __name__ == "__main__":
    unittest.main()

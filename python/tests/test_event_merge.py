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


class TornLineTest(unittest.TestCase):
    """The owner killed in the middle of a write leaves the stream ending in part of a line; the
    guard or the next owner (resume) completes it from the writer's file."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.merge = EventMerge(self.dir.name, "a1")
        os.makedirs(self.merge.folder)
        self.lines = [line(type="step", step=n, loss=3.5 - n / 10, time=10.0 + n) for n in range(4)]
        with open(os.path.join(self.merge.folder, "runtime.jsonl"), "w") as f:
            f.writelines(self.lines)

    def tearDown(self):
        self.dir.cleanup()

    def take_up(self, stream):
        with open(self.merge.path, "w") as f:
            f.write(stream)
        self.merge.resume()
        self.merge.merge()
        self.merge.close(remove=False)
        with open(self.merge.path) as f:
            return f.read()

    def test_a_line_torn_by_the_kill_is_completed_in_place_and_merged_once(self):
        torn = self.lines[2][:17]
        got = self.take_up(self.lines[0] + self.lines[1] + torn)
        self.assertEqual(got, "".join(self.lines))

    def test_a_tail_no_writer_begins_is_ended_as_a_line_of_its_own(self):
        # The owner's own event, torn: nothing holds the rest of it.
        torn = '{"type":"processes","pi'
        got = self.take_up(self.lines[0] + torn)
        self.assertEqual(got, self.lines[0] + torn + "\n" + "".join(self.lines[1:]))

    def test_a_whole_stream_takes_nothing_twice(self):
        got = self.take_up(self.lines[0] + self.lines[1])
        self.assertEqual(got, "".join(self.lines))


if __name__ == "__main__":
    unittest.main()

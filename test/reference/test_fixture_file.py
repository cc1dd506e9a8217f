"""Exact arrays with checksums, and atomic JSON writing."""

from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path

import torch
from fixture_file import decode_array, encode_array, provenance, write_json


class FixtureFileTest(unittest.TestCase):
    def test_arrays_round_trip_bit_for_bit(self) -> None:
        for dtype in (torch.float32, torch.float64):
            values = torch.randn(1001, dtype=dtype, generator=torch.Generator().manual_seed(1)) * 1e-7
            encoded = encode_array(values)
            self.assertEqual(encoded["count"], 1001)
            back = decode_array(json.loads(json.dumps(encoded)))
            self.assertEqual(back.dtype, dtype)
            self.assertTrue(torch.equal(back, values))

    def test_a_damaged_array_is_refused(self) -> None:
        encoded = encode_array(torch.arange(10, dtype=torch.float32))
        damaged = dict(encoded, base64=("B" if encoded["base64"][0] != "B" else "C") + encoded["base64"][1:])
        with self.assertRaisesRegex(ValueError, "CRC-32 mismatch"):
            decode_array(damaged)
        with self.assertRaisesRegex(ValueError, "the header says 11"):
            decode_array(dict(encoded, count=11))

    def test_provenance_and_writing(self) -> None:
        record = provenance(["python3", "x.py"], "cpu")
        for key in ("command", "date", "torch", "device", "cpu_model"):
            self.assertTrue(record[key], key)
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "sub" / "f.json"
            size = write_json(path, {"a": [1, 2]})
            self.assertEqual(size, path.stat().st_size)
            self.assertEqual(json.loads(path.read_text()), {"a": [1, 2]})
            self.assertEqual([p.name for p in path.parent.iterdir()], ["f.json"])


if __name__ == "__main__":
    unittest.main()

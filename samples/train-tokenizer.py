"""Trains the Llama sample's byte-level BPE tokenizer (samples/smollm2-135m-cpu.yaml) with Hugging Face's
`tokenizers` (the project's .venv has it, installed with transformers).

    .venv/bin/python samples/train-tokenizer.py --vocab-size 8192 --out DIR TEXT_FILE...

Writes DIR/tokenizer.json and DIR/tokenizer_config.json (eos_token <|endoftext|>, id 0). Python and not
the npm binding: tokenizers' Node binding (0.23.2) trains only with its model's default trainer (its
Trainer class has no constructor), so the vocabulary size, the end-of-text token and the 256-byte
initial alphabet, which lets every text be encoded, could not be set.
"""

import argparse
import json
import os

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

END_OF_TEXT = "<|endoftext|>"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab-size", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()

    tokenizer = Tokenizer(models.BPE())
    # GPT-2's byte-level scheme (SmolLM2's tokenizer is one too): spaces kept on the following word.
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=args.vocab_size,
        min_frequency=2,
        special_tokens=[END_OF_TEXT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train(args.files, trainer)
    os.makedirs(args.out, exist_ok=True)
    tokenizer.save(os.path.join(args.out, "tokenizer.json"))
    with open(os.path.join(args.out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(
            {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": END_OF_TEXT, "bos_token": END_OF_TEXT},
            f,
            indent=2,
        )
        f.write("\n")
    print(f"trained a byte-level BPE of {tokenizer.get_vocab_size()} tokens into {args.out}")


if __name__ == "__main__":
    main()
